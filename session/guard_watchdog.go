//go:build unix && !linux

package session

import "syscall"

// sysProcAttr returns the attributes pty.StartWithSize completes with
// Setsid and Setctty (Setpgid must stay unset: setsid already makes the
// child a group leader). There is no parent-death signal here; guardGroup
// stands in for it.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// guardGroup starts a watchdog that kills the group if the controller
// dies first (see watchdog).
func guardGroup(pgid int) (groupGuard, error) { return startWatchdog(watchdogShell, pgid) }
