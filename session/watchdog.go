//go:build unix

package session

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// watchdog ends a session's process group if the controller dies while
// the session runs, where the kernel has no parent-death signal (macOS,
// the BSDs). It is a shell waiting to read one line from a pipe whose only
// write end the controller holds. When the session has ended, the
// controller writes the line and the watchdog exits. When the controller
// dies, however it dies (SIGKILL, a panic, the OOM killer), the kernel
// closes the write end: the read meets end-of-file and the watchdog sends
// SIGKILL to the whole group.
//
// A pipe rather than kqueue's NOTE_EXIT on the controller's pid: end of
// file cannot be mistaken for the exit of some later process that got the
// same pid, and a shell can wait for it, so no helper binary has to ship.
type watchdog struct {
	cmd       *exec.Cmd
	standDown *os.File // the write end
}

// watchdogShell runs the watchdog: present on every macOS and BSD.
const watchdogShell = "/bin/sh"

// watchdogScript: $1 is the process group. read fails only at end of file
// (the line never came). Only builtins, so PATH does not matter. The
// POSIX form `-s KILL --`: dash reads `kill -KILL -- -PGID` as a kill of
// pid "--" and fails; `-s KILL --` works in dash, bash and zsh alike
// (TestWatchdogFires runs each present).
const watchdogScript = `read -r _ || kill -s KILL -- "-$1"`

// startWatchdog starts a watchdog for group pgid, run by shell.
func startWatchdog(shell string, pgid int) (*watchdog, error) {
	if pgid <= 1 {
		return nil, fmt.Errorf("watchdog: invalid process group %d", pgid)
	}
	// Both ends are close-on-exec: the write end must not leak into any
	// other child (an agent that inherited it would keep the pipe open
	// after the controller died, and the watchdog would never fire).
	// exec hands the read end to the watchdog alone, as its stdin.
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	cmd := &exec.Cmd{
		Path:  shell,
		Args:  []string{"sh", "-c", watchdogScript, "walkie-watchdog", strconv.Itoa(pgid)},
		Env:   []string{"PATH=/usr/bin:/bin"},
		Dir:   "/",
		Stdin: r,
		// A session of its own: no terminal's Ctrl-C or hangup reaches
		// it, nor launchd's kill of the controller's process group when
		// the service stops.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog %s: %w", shell, err)
	}
	return &watchdog{cmd: cmd, standDown: w}, nil
}

// release stands the watchdog down and reaps it. Called once the session
// has ended, when there is nothing left for it to kill.
func (wd *watchdog) release() error {
	_, werr := wd.standDown.Write([]byte("\n"))
	cerr := wd.standDown.Close()
	waitErr := wd.cmd.Wait() // always: it must not stay a zombie
	if err := cmp.Or(werr, cerr, waitErr); err != nil {
		// It was killed or failed early: the session was unguarded for a
		// while, though it ended normally.
		return fmt.Errorf("watchdog (pid %d): %w", wd.cmd.Process.Pid, err)
	}
	return nil
}
