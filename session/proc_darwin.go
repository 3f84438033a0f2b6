package session

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets kinfo.go decodes must be those of x/sys's KinfoProc (made
// by cgo from the macOS headers): any difference fails to compile here,
// as an index out of range or a negative constant, on both darwin/arm64
// and darwin/amd64 (`make cross`).
var (
	_ = [1]int{}[unsafe.Sizeof(unix.KinfoProc{})-kinfoSize]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime)+unsafe.Offsetof(unix.Timeval{}.Sec)-kinfoStartSec]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime)+unsafe.Offsetof(unix.Timeval{}.Usec)-kinfoStartUsec]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Proc.P_stat)-kinfoStat]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Proc.P_pid)-kinfoPid]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Eproc)+unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ppid)-kinfoPpid]
	_ = [1]int{}[unsafe.Offsetof(unix.KinfoProc{}.Eproc)+unsafe.Offsetof(unix.KinfoProc{}.Eproc.Pgid)-kinfoPgid]
)

// readProc asks sysctl kern.proc.pid.PID. The raw bytes rather than
// unix.SysctlKinfoProc: for a pid that does not exist the kernel answers
// with no bytes and no error, which SysctlKinfoProc turns into EIO, the
// same error as a real failure.
func readProc(pid int) (procStat, error) {
	procs, err := kinfo("kern.proc.pid", pid)
	if err != nil {
		return procStat{}, err
	}
	switch {
	case len(procs) == 0:
		return procStat{}, errNoProcess
	case len(procs) > 1 || procs[0].pid != pid:
		return procStat{}, fmt.Errorf("sysctl kern.proc.pid.%d: answered for %d processes, the first pid %d", pid, len(procs), procs[0].pid)
	}
	return procs[0], nil
}

// listGroup asks the kernel for the members of group pgid, zombies
// included.
func listGroup(pgid int) ([]procStat, error) { return kinfo("kern.proc.pgrp", pgid) }

// listSession returns every process with its session id. kinfo_proc has
// no session id and sysctl has no filter by session, so each process is
// asked with getsid (which macOS answers for any pid); one that went
// meanwhile is left out. Only a controller's recovery calls this.
func listSession(int) ([]procStat, error) {
	procs, err := kinfo("kern.proc.all")
	if err != nil {
		return nil, err
	}
	out := procs[:0]
	for _, p := range procs {
		sid, err := unix.Getsid(p.pid)
		if err != nil {
			continue // ESRCH: it is gone
		}
		p.session = sid
		out = append(out, p)
	}
	return out, nil
}

// kinfo reads and decodes a kern.proc sysctl. The list can grow between
// the kernel's size estimate and the read (ENOMEM): ask again.
func kinfo(name string, args ...int) ([]procStat, error) {
	var b []byte
	var err error
	for range 8 {
		if b, err = unix.SysctlRaw(name, args...); !errors.Is(err, syscall.ENOMEM) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("sysctl %s%s: %w", name, mibArgs(args), err)
	}
	procs, err := parseKinfoProcs(b)
	if err != nil {
		return nil, fmt.Errorf("sysctl %s%s: %w", name, mibArgs(args), err)
	}
	return procs, nil
}

// mibArgs renders sysctl arguments as they are written: ".4242".
func mibArgs(args []int) string {
	s := ""
	for _, a := range args {
		s += fmt.Sprintf(".%d", a)
	}
	return s
}

// processesWith would read other processes' environments (sysctl
// kern.procargs2); on macOS the session's watchdog ends its group when the
// controller dies, and KillStale the rest, so Sweep finds nothing by
// environment there.
func processesWith(string) ([]int, error) { return nil, nil }

// sessionAncestor looks for the session's variable in the environment of
// an ancestor, which only Linux's /proc shows walkie.
func sessionAncestor() (int, string, bool) { return 0, "", false }
