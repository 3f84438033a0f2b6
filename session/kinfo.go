package session

import (
	"encoding/binary"
	"fmt"
)

// macOS describes a process with struct kinfo_proc, which sysctl
// kern.proc.pid.PID (one process), kern.proc.pgrp.PGID (a group) and
// kern.proc.all hand over as an array. This file decodes those bytes
// without any system call, so that the decoding is tested on every
// platform against the fixtures in testdata; proc_darwin.go asks the
// kernel and checks at compile time that these offsets are those of
// golang.org/x/sys/unix.KinfoProc.
//
// The layout is the 64-bit one (user64_kinfo_proc in xnu's
// bsd/sys/sysctl.h), the same on arm64 and amd64, both little-endian.
const (
	kinfoSize = 648 // sizeof(struct kinfo_proc)

	// struct extern_proc kp_proc, at 0
	kinfoStartSec  = 0  // p_starttime.tv_sec, int64
	kinfoStartUsec = 8  // p_starttime.tv_usec, int32
	kinfoStat      = 36 // p_stat, int8
	kinfoPid       = 40 // p_pid, int32

	// struct eproc kp_eproc, at 296
	kinfoPpid = 560 // e_ppid, int32
	kinfoPgid = 564 // e_pgid, int32
)

// p_stat values (xnu bsd/sys/proc.h).
const (
	kinfoSIDL  = 1 // being created by fork
	kinfoSZOMB = 5 // awaiting collection by its parent
)

// parseKinfoProcs decodes an array of kinfo_proc. Empty input is an empty
// list: what the kernel answers for a pid or group that does not exist.
func parseKinfoProcs(b []byte) ([]procStat, error) {
	if len(b)%kinfoSize != 0 {
		return nil, fmt.Errorf("malformed kinfo_proc array: %d bytes is not a multiple of %d", len(b), kinfoSize)
	}
	procs := make([]procStat, 0, len(b)/kinfoSize)
	for off := 0; off < len(b); off += kinfoSize {
		p, err := parseKinfoProc(b[off : off+kinfoSize])
		if err != nil {
			return nil, fmt.Errorf("kinfo_proc %d: %w", off/kinfoSize, err)
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// parseKinfoProc decodes one kinfo_proc of exactly kinfoSize bytes. The
// session id is not in it (e_sess is a kernel pointer, and zeroed).
func parseKinfoProc(b []byte) (procStat, error) {
	le := binary.LittleEndian
	i32 := func(off int) int { return int(int32(le.Uint32(b[off:]))) }
	sec := int64(le.Uint64(b[kinfoStartSec:]))
	usec := int64(int32(le.Uint32(b[kinfoStartUsec:])))
	p := procStat{pid: i32(kinfoPid), ppid: i32(kinfoPpid), pgrp: i32(kinfoPgid)}
	stat := int8(b[kinfoStat])
	switch {
	case p.pid < 0:
		return procStat{}, fmt.Errorf("malformed kinfo_proc: pid %d", p.pid)
	case stat < kinfoSIDL || stat > kinfoSZOMB:
		return procStat{}, fmt.Errorf("malformed kinfo_proc: pid %d: p_stat %d", p.pid, stat)
	case sec < 0 || usec < 0 || usec >= 1e6:
		return procStat{}, fmt.Errorf("malformed kinfo_proc: pid %d: start time %d s %d µs", p.pid, sec, usec)
	}
	p.exited = stat == kinfoSZOMB
	// The start time as one number: microseconds since the epoch. It is
	// set once at fork (exec keeps it), so a later wall-clock change does
	// not move it; two processes that share a pid one after the other
	// cannot share it.
	p.start = uint64(sec)*1e6 + uint64(usec)
	return p, nil
}
