//go:build linux || darwin

package session

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// TestThousandSessions runs 1,000 sessions, mixing the ways they end, and
// then checks that nothing accumulated: goroutines, file descriptors,
// processes.
func TestThousandSessions(t *testing.T) {
	// Not parallel: the fd count and the scan for child processes see the
	// whole test process.
	// About 2 s under -race on two cores, so the full count always runs.
	const n = 1000
	dir := t.TempDir()
	ignore := goleak.IgnoreCurrent()
	fdsBefore := openFDs(t)
	sessions := map[int]bool{}
	blocked := []Rule{{Pattern: regexp.MustCompile(`blocked`), Outcome: "blocked"}}
	start := time.Now()
	for i := range n {
		spec := Spec{Argv: []string{"true"}, Grace: 500 * time.Millisecond}
		ctx, cancel := context.WithCancel(context.Background())
		var act func(*Session)
		switch i % 10 {
		case 1: // transcripts and a private HOME
			spec.Argv = []string{"echo", "hello"}
			spec.RawPath = filepath.Join(dir, "raw")
			spec.TextPath = filepath.Join(dir, "text")
			spec.PrivateHome = true
		case 2:
			spec.Argv = []string{"sleep", "10"}
			spec.Timeout = time.Millisecond
		case 3:
			spec.Argv = []string{"sleep", "10"}
			act = func(s *Session) { s.End("done") }
		case 4:
			spec.Argv = []string{"sleep", "10"}
			act = func(*Session) { cancel() }
		case 5:
			spec.Argv = []string{"echo", "blocked"}
			spec.Rules = blocked
		case 6:
			spec.Argv = []string{"sh", "-c", "sleep 10 & echo started"}
		case 7:
			spec.Argv = []string{"cat"}
			spec.Input = []byte("typed\n\x04")
		case 8:
			spec.Argv = []string{fmt.Sprintf("missing-%d", i)} // start-failed
		}
		s, err := Start(ctx, spec)
		if err != nil {
			cancel()
			if i%10 != 8 {
				t.Fatalf("session %d: %v", i, err)
			}
			continue
		}
		sessions[s.Pid()] = true
		if act != nil {
			act(s)
		}
		r := s.Wait()
		cancel()
		if i%10 == 0 && (r.Ending != EndExited || r.ExitCode != 0) {
			t.Fatalf("session %d: %+v", i, r)
		}
	}
	t.Logf("%d sessions in %s", n, time.Since(start).Round(time.Millisecond))

	if err := goleak.Find(ignore); err != nil {
		t.Errorf("goroutines leaked: %v", err)
	}
	if fds := openFDs(t); fds > fdsBefore {
		t.Errorf("open fds grew from %d to %d", fdsBefore, fds)
	}
	// The group kill is synchronous, but a killed process may take a
	// moment to be reaped by init.
	sessiontest.WaitFor(t, 5*time.Second, "all session processes gone", func() bool {
		return len(leftovers(sessions, true)) == 0
	})
}
