package controller

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Evidence that is checked (docs/review-threads.md): a verdict that says
// how many tests pass is held to what the thread's test command (test:)
// prints at the commit it cites, run by walkie itself, not taken from the
// agent's word.

// testKillGrace is how long a test command that overran gets between
// SIGTERM and SIGKILL.
const testKillGrace = 5 * time.Second

// evidence checks the passing tests t's verdict claims, when the thread
// names a test command. It returns what it ran and saw, for the turn's
// detail ("" when there was nothing to check), and why the verdict does
// not hold ("" when it does).
func (c *controller) evidence(ctx context.Context, t *plan, snapshot []byte, want walkie.Expect) (ran, refuse string) {
	m := &t.meta
	if m.Test.IsZero() || want.Refs == nil {
		return "", ""
	}
	after, err := readAtMost(c.file, int64(len(snapshot)+m.TurnLimit())+64<<10)
	if err != nil || len(after) < len(snapshot) {
		return "", "" // the judge finds what is wrong with it
	}
	v, _ := walkie.Judge(c.file, snapshot, after, walkie.Expect{Turn: t.Turn, Agent: t.Participant})
	if v.Outcome != walkie.VerdictAccepted || v.Tags.Type != walkie.TypeVerdict {
		return "", ""
	}
	counts := walkie.PassCounts(string(after[len(snapshot):]))
	commits := v.Tags.Commits()
	switch {
	case len(counts) == 0 || len(commits) == 0:
		return "", ""
	case len(counts) > 1:
		return "", fmt.Sprintf("the verdict cites %d counts of passing tests (%s): cite one, the one `%s` prints at the commit it judged", len(counts), joinInts(counts), m.Test)
	}
	full, err := want.Refs.Commit(commits[0].SHA)
	if err != nil || full == "" {
		return "", "" // the ref check refuses it, saying why
	}
	run, err := c.runTests(ctx, t, full)
	if err != nil {
		return "", fmt.Sprintf("the verdict says %d tests pass at %s, and walkie could not check it: %v", counts[0], short(full), err)
	}
	saw := fmt.Sprintf("ran `%s` at %s in %s: %s, %d passed (output: %s)", m.Test, short(full), run.took.Round(time.Millisecond), run.ending, run.passed, engine.Rel(c.dir, run.text))
	c.log.Info("evidence checked", zap.Int("turn", t.Turn), zap.String("agent", t.Participant), zap.Int("cited", counts[0]), zap.String("saw", saw))
	if !run.ok || run.passed != counts[0] {
		return saw, fmt.Sprintf("the verdict says %d tests pass at %s, but walkie %s", counts[0], short(full), saw)
	}
	return "evidence checked: " + saw + ", as the verdict says", ""
}

// testRun is what one run of the test command did.
type testRun struct {
	ok     bool   // exited 0
	ending string // "exit 0", "exit 1", "killed by SIGKILL", "still running after 10m0s"
	passed int    // lines of its output that report a passing test
	took   time.Duration
	text   string // its output, as plain text
}

// runTests runs the thread's test command in a worktree of its own at
// commit, as walkie's own job (not an agent's session): bounded by
// test_timeout, with the agents' minimal environment, no hooks (gitrepo's
// policy), and the repository guarded as around a worktree session.
func (c *controller) runTests(ctx context.Context, t *plan, commit string) (testRun, error) {
	m := &t.meta
	repo, err := gitrepo.Open(ctx, m.RepoDir(c.file))
	if err != nil {
		return testRun{}, err
	}
	dir := filepath.Join(c.dir, "evidence", fmt.Sprintf("%04d-%s-%d", t.Turn, t.Participant, t.attempt))
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return testRun{}, err
	}
	if err := repo.RemoveWorktree(ctx, tree); err != nil {
		return testRun{}, err
	}
	guard, err := repo.Guard(ctx, "")
	if err != nil {
		return testRun{}, err
	}
	if err := repo.AddDetached(ctx, tree, commit); err != nil {
		return testRun{}, err
	}
	defer func() {
		ctx := context.WithoutCancel(ctx)
		if err := repo.RemoveWorktree(ctx, tree); err != nil {
			c.log.Warn("the tests' worktree was not removed", zap.String("path", tree), zap.Error(err))
		}
		if changed, err := repo.Restore(ctx, guard); len(changed) > 0 || err != nil {
			c.log.Warn("the test command changed the repository; walkie put it back", zap.Strings("changed", changed), zap.Error(err))
		}
	}()
	// The command runs the code under review, which an agent may have
	// written: in the grader's boundary (its tree to read and write, a
	// private HOME, none of walkie's keys), not a debater's, which reaches
	// no HOME and no cache a toolchain needs.
	j := engine.Job{ID: session.NewID(), Dir: tree, Transcript: filepath.Join(dir, "tests"), Argv: testArgv(m.Test),
		Agent: config.Agent{Name: "tests", Timing: config.Timing{Timeout: m.TestTimeoutOrDefault(), KillGrace: testKillGrace},
			Home: config.HomeInherit, EnvAllow: config.DefaultEnvAllow},
		Role: config.RoleGrader, Reach: engine.FolderReach(tree)}
	r, err := c.eng.Run(ctx, j)
	if err != nil {
		return testRun{}, err
	}
	if r.Stop != "" {
		return testRun{}, fmt.Errorf("the run was stopped: %w", context.Cause(ctx))
	}
	run := testRun{took: r.Duration, text: r.TextPath}
	switch {
	case r.Ending == session.EndTimeout:
		run.ending = fmt.Sprintf("still running after %s (test_timeout), ended", m.TestTimeoutOrDefault())
	case r.Signal != "":
		run.ending = "killed by " + r.Signal
	default:
		run.ending, run.ok = fmt.Sprintf("exit %d", r.ExitCode), r.ExitCode == 0 && r.Ending == session.EndExited
	}
	run.passed, err = countLines(r.TextPath, func(l string) bool { return m.TestPassedRe().MatchString(l) })
	return run, err
}

// testArgv is the argv of the thread's test command.
func testArgv(cmd walkie.Command) []string {
	if cmd.Shell != "" {
		return []string{"/bin/sh", "-c", cmd.Shell}
	}
	return cmd.Argv
}

// countLines counts the lines of a file that match.
func countLines(path string, match func(string) bool) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if match(strings.TrimRight(sc.Text(), "\r")) {
			n++
		}
	}
	return n, sc.Err()
}

// readAtMost reads at most n bytes of a regular file. The agent may
// have put anything at the record's path: a link is not followed, and a
// pipe is not waited on.
func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, n))
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

func short(sha string) string { return sha[:min(len(sha), 12)] }
