//go:build linux

package session

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Issue 12, item 4: an agent that starts a child under job control (`set
// -m`: a process group of its own, in the same session) left it running:
// the normal teardown killed the leader's group only, and the drain waited
// the grace for the terminal it holds. The session is swept as crash
// recovery sweeps it: the child is gone when Wait returns, and the session
// does not wait out its grace.
func TestTeardownSweepsTheSession(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	spec := Spec{
		Argv:  []string{"sh", "-c", `set -m; sh -c 'trap "" TERM HUP; echo $$ > ` + pidFile + `; exec sleep 300' & while [ ! -s ` + pidFile + ` ]; do sleep 0.01; done; echo started`},
		Grace: 5 * time.Second,
	}
	r := run(t, context.Background(), spec)
	want(t, r, EndExited, EndedBySelf, 0, "")
	pid := readPid(t, pidFile)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == r.Pid {
		t.Fatalf("the child is in the leader's group %d: the test does not test job control", pgid)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the child in its own group gone", func() bool { return !alive(pid) })
	if r.Duration >= spec.Grace {
		t.Errorf("the session took %s: the drain waited out its grace for the child's terminal", r.Duration)
	}
}

// Issue 12, items 3 and 5: a controller killed right after a session
// started never learned its pid, and every kill mid-turn left the private
// HOME behind. The id recorded before the start is enough: Sweep ends
// every process that carries it, whatever group or session it moved to,
// and removes the HOME and TMPDIR named after it.
func TestSweepByID(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := NewID()
	spec := Spec{
		ID:          id,
		PrivateHome: true,
		PrivateTmp:  true,
		Argv: []string{"sh", "-c", `echo "id=$` + SessionVar + ` home=$HOME tmp=$TMPDIR"; ` +
			`sh -c 'trap "" TERM HUP; exec sleep 300' & echo $! > ` + dir + `/child; ` +
			`setsid sh -c 'trap "" TERM HUP; exec sleep 300' & echo $! > ` + dir + `/escaped; ` +
			`sleep 300`},
		TextPath: filepath.Join(dir, "text"),
		Grace:    time.Second,
	}
	s, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	child, escaped := readPid(t, filepath.Join(dir, "child")), readPid(t, filepath.Join(dir, "escaped"))
	t.Cleanup(func() {
		for _, p := range []int{child, escaped} {
			syscall.Kill(p, syscall.SIGKILL)
		}
		s.End("test over")
		s.Wait()
	})
	home, tmp := homeDir(id), tmpDir(id)
	for _, d := range []string{home} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("the private HOME is not named after the id: %v", err)
		}
	}
	// As if the controller had died: Sweep with nothing but the id.
	if err := Sweep(id); err != nil {
		t.Fatal(err)
	}
	for name, pid := range map[string]int{"leader": s.Pid(), "child": child, "escaped (setsid)": escaped} {
		sessiontest.WaitFor(t, 5*time.Second, name+" ended by the sweep", func() bool { return !alive(pid) })
	}
	for _, d := range []string{home, tmp} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s still there after the sweep (%v)", d, err)
		}
	}
	r := s.Wait()
	if text := readFile(t, spec.TextPath); !strings.Contains(text, "id="+id+" home="+home+" tmp="+filepath.Join(home, ".tmp")) {
		t.Errorf("the session's environment: %q", text)
	}
	_ = r
}

// A scan of the process table is a moment: an agent that keeps starting
// processes of their own sessions starts some after it, and one in the
// middle of an exec shows no environment to it. Every process the agent
// started, whenever it started, is gone after the sweep.
func TestSweepEndsWhatStartsDuringTheScan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	id := NewID()
	s, err := Start(context.Background(), Spec{
		ID: id,
		Argv: []string{"sh", "-c", `echo $$ > ` + dir + `/leader; ` +
			`while :; do setsid sh -c 'trap "" TERM HUP; echo $$ >> ` + pids + `; exec sleep 300' & done`},
		Grace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.End("test over"); s.Wait() })
	readPid(t, filepath.Join(dir, "leader"))
	sessiontest.WaitFor(t, 5*time.Second, "ten processes started", func() bool {
		b, _ := os.ReadFile(pids)
		return strings.Count(string(b), "\n") >= 10
	})
	if err := Sweep(id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a process that escaped has written its pid by now
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var escaped []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			continue // a line torn by two writers
		}
		// A pid taken again by a process of someone else's is not ours.
		env, _ := os.ReadFile("/proc/" + f + "/environ")
		if alive(pid) && strings.Contains(string(env), SessionVar+"="+id) {
			escaped = append(escaped, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range escaped {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if len(escaped) > 0 {
		t.Errorf("%d of the agent's processes outlived the sweep: %v", len(escaped), escaped)
	}
}

func TestSessionIDIsChecked(t *testing.T) {
	if _, err := Start(context.Background(), Spec{ID: "../etc", Argv: []string{"true"}}); err == nil || !strings.Contains(err.Error(), "NewID") {
		t.Errorf("a path as an id: %v", err)
	}
	if err := Sweep("a/b"); err == nil {
		t.Error("Sweep took a path as an id")
	}
}
