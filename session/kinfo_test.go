package session

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fixtures in testdata/kinfo are kinfo_proc arrays as sysctl
// kern.proc hands them over, each NAME.bin with NAME.json listing what it
// must decode to. sleep and pgrp were laid out field by field from
// golang.org/x/sys/unix's darwin KinfoProc (an sh leader, its sleep, and a
// zombie true); on a Mac, `go test ./session -run TestCaptureKinfo
// -capture-kinfo` adds fixtures captured from the live kernel
// (proc_darwin_test.go).

// kinfoWant is a fixture's expected decoding.
type kinfoWant struct {
	Pid    int    `json:"pid"`
	Ppid   int    `json:"ppid"`
	Pgrp   int    `json:"pgrp"`
	Start  uint64 `json:"start"`
	Exited bool   `json:"exited"`
}

func wantOf(p procStat) kinfoWant {
	return kinfoWant{Pid: p.pid, Ppid: p.ppid, Pgrp: p.pgrp, Start: p.start, Exited: p.exited}
}

func readKinfoFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "kinfo", name+".bin"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseKinfoFixtures(t *testing.T) {
	bins, err := filepath.Glob(filepath.Join("testdata", "kinfo", "*.bin"))
	if err != nil || len(bins) < 2 {
		t.Fatalf("fixtures: %v, %v", bins, err)
	}
	for _, bin := range bins {
		name := strings.TrimSuffix(filepath.Base(bin), ".bin")
		t.Run(name, func(t *testing.T) {
			var want []kinfoWant
			js, err := os.ReadFile(strings.TrimSuffix(bin, ".bin") + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(js, &want); err != nil {
				t.Fatal(err)
			}
			procs, err := parseKinfoProcs(readKinfoFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			var got []kinfoWant
			for _, p := range procs {
				got = append(got, wantOf(p))
			}
			if !slices.Equal(got, want) {
				t.Errorf("decoded\n %+v\nwant\n %+v", got, want)
			}
		})
	}
}

// TestKinfoGroup: the decisions that use a decoded group. A zombie is no
// longer a member worth waiting for.
func TestKinfoGroup(t *testing.T) {
	procs, err := parseKinfoProcs(readKinfoFixture(t, "pgrp"))
	if err != nil {
		t.Fatal(err)
	}
	if !groupLive(procs, 4240) {
		t.Error("group 4240 has a live sh and sleep, groupLive says no")
	}
	zombie := slices.DeleteFunc(slices.Clone(procs), func(p procStat) bool { return !p.exited })
	if len(zombie) != 1 || groupLive(zombie, 4240) {
		t.Errorf("a group of one zombie (%+v) counts as live", zombie)
	}
	if groupLive(procs, 4242) {
		t.Error("4242 leads no group, groupLive says it does")
	}
}

func TestParseKinfoMalformed(t *testing.T) {
	good := readKinfoFixture(t, "sleep")
	if procs, err := parseKinfoProcs(nil); err != nil || len(procs) != 0 {
		t.Errorf("no bytes (no such pid) = %v, %v; want an empty list", procs, err)
	}
	patch := func(off int, v uint32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:kinfoSize-8], "640 bytes is not a multiple of 648"},
		{"one and a half", append(slices.Clone(good), good[:100]...), "748 bytes"},
		{"usec too big", patch(kinfoStartUsec, 1_000_000), "start time"},
		{"usec negative", patch(kinfoStartUsec, 0xffffffff), "start time"},
		{"sec negative", patch(kinfoStartSec+4, 0x80000000), "start time"},
		{"p_stat 0", patch(kinfoStat, 0), "p_stat 0"},
		{"p_stat 6", patch(kinfoStat, 6), "p_stat 6"},
		{"pid negative", patch(kinfoPid, 0xfffffffe), "pid -2"},
	} {
		if _, err := parseKinfoProcs(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
		}
	}
	// A bad record anywhere spoils the list: the layout is wrong, and a
	// partial answer would hide processes from KillStale.
	list := append(slices.Clone(good), patch(kinfoStat, 9)...)
	if _, err := parseKinfoProcs(list); err == nil || !strings.Contains(err.Error(), "kinfo_proc 1:") {
		t.Errorf("second record bad: err = %v", err)
	}
}

// TestKinfoStartTime: the identity is the start time to the microsecond,
// so a process started one microsecond later under the same pid is not
// the recorded one.
func TestKinfoStartTime(t *testing.T) {
	b := readKinfoFixture(t, "sleep")
	first, err := parseKinfoProc(b)
	if err != nil {
		t.Fatal(err)
	}
	id := ProcIdentity{Pid: first.pid, StartTicks: first.start}

	later := slices.Clone(b)
	binary.LittleEndian.PutUint32(later[kinfoStartUsec:], 131072) // one µs later
	reused, err := parseKinfoProc(later)
	if err != nil {
		t.Fatal(err)
	}
	nextSec := slices.Clone(b)
	binary.LittleEndian.PutUint64(nextSec[kinfoStartSec:], 1764582901)
	binary.LittleEndian.PutUint32(nextSec[kinfoStartUsec:], 0)
	after, err := parseKinfoProc(nextSec)
	if err != nil {
		t.Fatal(err)
	}
	if !(first.start < reused.start && reused.start < after.start) {
		t.Errorf("start times out of order: %d, %d, %d", first.start, reused.start, after.start)
	}
	for _, tc := range []struct {
		name string
		cur  procStat
		err  error
		want bool
	}{
		{"same process", first, nil, true},
		{"pid reused a microsecond later", reused, nil, false},
		{"pid reused a second later", after, nil, false},
		{"leader gone, group left", procStat{}, errNoProcess, true},
	} {
		got, err := ours(id, tc.cur, tc.err)
		if err != nil || got != tc.want {
			t.Errorf("%s: ours = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	// Any other failure to read the process is an error, never a guess.
	eperm := errors.New("sysctl kern.proc.pid.4242: operation not permitted")
	if got, err := ours(id, procStat{}, eperm); got || !errors.Is(err, eperm) {
		t.Errorf("read error: ours = %v, %v", got, err)
	}
}

func TestSessionMembers(t *testing.T) {
	procs := []procStat{
		{pid: 100, pgrp: 100, session: 100},               // the leader
		{pid: 101, pgrp: 100, session: 100},               // in its group
		{pid: 102, pgrp: 102, session: 100},               // moved to its own group
		{pid: 103, pgrp: 102, session: 100, exited: true}, // a zombie
		{pid: 104, pgrp: 104, session: 104},               // someone else
	}
	if got := sessionMembers(procs, 100); !slices.Equal(got, []int{101, 102}) {
		t.Errorf("sessionMembers = %v, want [101 102]", got)
	}
}

// FuzzParseKinfo: whatever sysctl hands over, decoding fails cleanly or
// yields one process per 648 bytes, each with the pid at offset 40 and a
// start time the same microseconds as the bytes say.
func FuzzParseKinfo(f *testing.F) {
	f.Add([]byte{})
	for _, name := range []string{"sleep", "pgrp"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kinfo", name+".bin"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		procs, err := parseKinfoProcs(b)
		if err != nil {
			return
		}
		if len(procs)*kinfoSize != len(b) {
			t.Fatalf("%d bytes gave %d processes", len(b), len(procs))
		}
		for i, p := range procs {
			r := b[i*kinfoSize:]
			sec := binary.LittleEndian.Uint64(r[kinfoStartSec:])
			usec := binary.LittleEndian.Uint32(r[kinfoStartUsec:])
			if p.pid != int(int32(binary.LittleEndian.Uint32(r[kinfoPid:]))) || p.start != sec*1e6+uint64(usec) ||
				p.exited != (r[kinfoStat] == kinfoSZOMB) {
				t.Fatalf("process %d decoded as %+v", i, p)
			}
		}
	})
}
