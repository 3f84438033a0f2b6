package e2e

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// An agent swaps a committed file of its copy for a named pipe, another
// for a link to /dev/zero: walkie review lists both as discarded changes
// and ends, opening neither (issue 27, item 7: an os.Open on the pipe held
// a review for 739 s, through a SIGTERM). The agent runs without walkie's
// sandbox, which would refuse it the copy's files: this holds where no
// sandbox can be had.
func TestReviewCopyWithAPipe(t *testing.T) {
	t.Parallel()
	scripts := disagreeingScripts()
	scripts["claude"] = `shell: "rm cache/cache.go go.mod && mkfifo cache/cache.go && ln -s /dev/zero go.mod"` + "\n" + scripts["claude"]
	f := newReviewFixture(t, reviewSetup{scripts: scripts, agents: unsandboxed("claude")})
	r := f.review(exitReviewDisagreed, nil, docPath, "--max-rounds", "1")
	d := f.report(r).Docs[0]
	for _, want := range []string{"modified cache/cache.go", "modified go.mod"} {
		if !slices.Contains(d.Discarded, want) {
			t.Errorf("discarded %v, want %q in it", d.Discarded, want)
		}
	}
}

// SIGTERM while an agent that left a named pipe in its copy still runs:
// the review ends at once, the attempt is recorded as interrupted, and
// the pipe is never opened on the way out.
func TestReviewCancelledWithAPipe(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t, reviewSetup{scripts: map[string]string{
		"claude": `shell: "rm cache/cache.go && mkfifo cache/cache.go && sleep 60"`, "codex": "sign: true"}, agents: unsandboxed("claude")})
	wait := f.startReview(nil, docPath)
	sessiontest.WaitFor(t, 30*time.Second, "the pipe in claude's copy", func() bool { return findPipe(f.dir) != "" })
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := wait()
	if r.Code != 130 || r.Took > 60*time.Second {
		t.Fatalf("exit %d after %s, want 130 soon after the SIGTERM\n%s", r.Code, r.Took, blackbox.Tail(r.Stderr, 20))
	}
	rep := f.report(r)
	d := rep.Docs[0]
	if rep.Failure != "interrupted" || len(d.Failures) == 0 || !strings.HasPrefix(d.Failures[0], "turn 1 · claude, attempt 1: interrupted") {
		t.Errorf("failure %q, attempts %v", rep.Failure, d.Failures)
	}
	if !slices.Contains(d.Discarded, "modified cache/cache.go") {
		t.Errorf("discarded %v", d.Discarded)
	}
}

// findPipe is the first named pipe under dir, "" when there is none.
func findPipe(dir string) string {
	found := ""
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Type()&fs.ModeNamedPipe != 0 {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// unsandboxed is the config keys that run these agents without walkie's
// sandbox: for attacks the sandbox would stop before the defence under
// test sees them.
func unsandboxed(agents ...string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, a := range agents {
		out[a] = map[string]string{"sandbox": "off"}
	}
	return out
}
