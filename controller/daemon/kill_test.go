package daemon

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// The daemon, run as the real binary, is killed with SIGKILL twice in the
// middle of turns and started again each time: every debate completes,
// each turn is accepted exactly once, every record verifies with
// `walkie verify`, and no agent process is left behind.
func TestServeSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the walkie binary")
	}
	bin := walkieBin(t)
	dir := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "walkie.yaml")
	y := "defaults:\n  timeout: 30s\n  stall: 20s\n  grace: 50ms\n  kill_grace: 300ms\n  retries: 1\nagents:\n" +
		fakeAgent("fa", "--delay", "150ms", "--sign-from", "3") + fakeAgent("fb", "--delay", "150ms", "--sign-from", "3") +
		"limits:\n  max_sessions: 6\n"
	if err := os.WriteFile(cfgFile, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := range 24 {
		files = append(files, newDebate(t, dir, fmt.Sprintf("k%02d", i), 4, "fa", "fb"))
	}
	total := func() (accepted, interrupted int) {
		for _, f := range files {
			for _, r := range turnLog(t, f) {
				switch r.Outcome {
				case walkie.OutcomeAccepted:
					accepted++
				case walkie.OutcomeInterrupted:
					interrupted++
				}
			}
		}
		return
	}
	var logs []*syncBuffer
	start := func() *exec.Cmd {
		buf := &syncBuffer{}
		cmd := exec.Command(bin, "serve", "--dir", dir, "--config", cfgFile, "--listen", "", "--log-format", "json")
		cmd.Stdout, cmd.Stderr = buf, buf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, buf)
		return cmd
	}
	defer func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("daemon run %d log:\n%s", i+1, tail(b.String(), 40))
			}
			t.Logf("processes holding the daemon lock: %v", holders(filepath.Join(dir, LockName)))
		}
	}()
	// 24 debates × 6 turns = 144 turns; kill after a third and two thirds.
	for _, at := range []int{48, 96} {
		cmd := start()
		sessiontest.WaitFor(t, 60*time.Second, fmt.Sprintf("%d turns accepted", at), func() bool { a, _ := total(); return a >= at })
		// Kill while sessions are running, so there is something to recover.
		sessiontest.WaitFor(t, 5*time.Second, "a session running", func() bool { return anyRunning(files) })
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
	cmd := start()
	sessiontest.WaitFor(t, 90*time.Second, "every debate converged", func() bool {
		for _, f := range files {
			if status(t, f) != walkie.StatusConverged {
				return false
			}
		}
		return true
	})
	// SIGHUP reloads the config and says what changed.
	if err := os.WriteFile(cfgFile, []byte(y+"  per_agent_sessions: {fa: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the reload logged", func() bool {
		return strings.Contains(logs[2].String(), `"msg":"config reloaded","path":"`+cfgFile+`","changes":["limits changed"]`)
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the last daemon did not exit cleanly on SIGTERM: %v", err)
	}
	accepted, interrupted := total()
	t.Logf("%d turns accepted, %d attempts interrupted by the kills", accepted, interrupted)
	if interrupted == 0 {
		t.Error("no attempt was interrupted: the kills did not land mid-turn")
	}
	for _, f := range files {
		checkRecord(t, f)
		if out, err := exec.Command(bin, "verify", f).CombinedOutput(); err != nil {
			t.Errorf("walkie verify %s: %v\n%s", f, err, out)
		}
	}
	if left := processesMentioning(dir); len(left) > 0 {
		t.Errorf("agent processes left behind: %v", left)
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// anyRunning reports whether some debate's state shows an attempt running.
func anyRunning(files []string) bool {
	for _, f := range files {
		meta, err := walkie.ReadMeta(f)
		if err != nil {
			continue
		}
		if st, err := walkie.LoadState(walkie.StateDir(f, meta.ID)); err == nil && st.Running != nil {
			return true
		}
	}
	return false
}

// processesMentioning lists pids whose command line mentions s.
func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// holders lists the processes with path open, and their state.
func holders(path string) []string {
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range procs {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			out = append(out, fmt.Sprintf("%s %q %s", pid, strings.ReplaceAll(string(cmd), "\x00", " "), stat))
		}
	}
	return out
}
