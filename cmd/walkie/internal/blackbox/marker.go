package blackbox

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// MarkerVar is set, with a value unique to the test, in the environment
// of every walkie a test starts; the test's config passes it on to the
// agents (env_allow) and their children inherit it, so /proc shows every
// process a run started, wherever it was reparented.
const MarkerVar = "WALKIE_TEST_RUN"

// Marker is one test's value of MarkerVar.
type Marker string

var markers atomic.Int64

// NewMarker is a marker no other test of any suite running at the same
// time carries: the test process, a count, the test's name.
func NewMarker(t testing.TB) Marker {
	return Marker(fmt.Sprintf("%d-%d-%s", os.Getpid(), markers.Add(1), t.Name()))
}

// Env is the marker as an environment entry.
func (m Marker) Env() string { return MarkerVar + "=" + string(m) }

// Pids lists the live processes carrying the marker, but this one.
func (m Marker) Pids() []int { return m.PidsRunning("") }

// PidsRunning lists the live processes carrying the marker whose command
// line holds s (the agents of a run, not its walkie processes).
func (m Marker) PidsRunning(s string) []int {
	want := []byte(m.Env() + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		// A zombie holds nothing and runs nothing; its parent is gone or
		// about to reap it.
		if err != nil || !bytes.Contains(env, want) || !Alive(pid) {
			continue
		}
		if cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Kill SIGKILLs every process carrying the marker: for a test's cleanup,
// so that what a failed test left running cannot disturb the next.
func (m Marker) Kill() {
	for _, pid := range m.Pids() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// NoneLeft fails the test if a process carrying the marker is still alive
// after limit (processes killed a moment ago may still be exiting), and
// kills those that are, naming them.
func (m Marker) NoneLeft(t testing.TB, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		pids := m.Pids()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			desc := describe(pids)
			m.Kill()
			t.Errorf("processes of the run are still alive after %s:\n  %s", limit, desc)
			return
		}
		// Each look reads every process's environment: not too often.
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d (%s)", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
	}
	return strings.Join(parts, "\n  ")
}

// Alive reports whether pid is a live (not zombie) process.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// Ignores reports whether pid ignores sig (SigIgn in /proc/PID/status).
func Ignores(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(sig)-1)) != 0
		}
	}
	return false
}
