package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// A verdict's count of passing tests is checked, not taken on the
// agent's word (issue 27, item 10): walkie runs the thread's test
// command at the commit the verdict cites and refuses a count it does not
// see, saying what it ran and saw; a count that holds is recorded with
// what walkie saw.
func TestVerdictEvidenceIsChecked(t *testing.T) {
	verdict := func(n string) string {
		return `body_cmd: 'printf "Approved: the ` + n + ` tests pass.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n" "$(git rev-parse main)"'`
	}
	d := newThread(t, map[string]string{
		"builder":  `body_cmd: 'printf "Please review.\n\nType: review-request\nRefs: main@%s\n" "$(git rev-parse main)"'`,
		"reviewer": "steps:\n  - " + verdict("27") + "\n  - " + verdict("2"),
	}, "", "--test", `cat results.txt && ! grep -q FAIL results.txt`)
	gittest.Commit(t, d.Dir, "results.txt", "--- PASS: TestLogin\n    --- PASS: TestLogin/replay\n--- SKIP: TestSlow\n", "tests")
	d.MustRun(0, "turn", d.name, "--approve")
	d.MustRun(0, "turn", d.name, "--approve")
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "malformed", "accepted")
	head := d.git("rev-parse", "--short=12", "main")
	if want := "the verdict says 27 tests pass at " + head + ", but walkie ran `cat results.txt && ! grep -q FAIL results.txt` at " + head; !strings.Contains(recs[1].Detail, want) || !strings.Contains(recs[1].Detail, "exit 0, 2 passed") {
		t.Errorf("the refused verdict's detail:\n%s\nwant it to contain %q and what walkie saw", recs[1].Detail, want)
	}
	if !strings.Contains(recs[2].Detail, "evidence checked: ran `cat results.txt") || !strings.Contains(recs[2].Detail, "2 passed") {
		t.Errorf("the accepted verdict's detail: %s", recs[2].Detail)
	}
	out, err := os.ReadFile(filepath.Join(d.Dir, "reviews", ".walkie", "login", "evidence", "0002-reviewer-2", "tests.txt"))
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLogin/replay") {
		t.Fatalf("what walkie ran is not kept: %v\n%s", err, out)
	}
	if list := d.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", list)
	}
	d.noProcessesLeft()
}

// A count of passing tests where the tests fail is refused, whatever the
// count.
func TestVerdictEvidenceFailingTests(t *testing.T) {
	d := newThread(t, map[string]string{
		"builder":  `body_cmd: 'printf "Please review.\n\nType: review-request\nRefs: main@%s\n" "$(git rev-parse main)"'`,
		"reviewer": `body_cmd: 'printf "Approved: all 1 tests pass.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n" "$(git rev-parse main)"'`,
	}, "", "--test", `cat results.txt && ! grep -q FAIL results.txt`)
	gittest.Commit(t, d.Dir, "results.txt", "--- PASS: TestLogin\n--- FAIL: TestLogout\n", "tests")
	d.MustRun(0, "turn", d.name, "--approve")
	d.MustRun(11, "turn", d.name, "--approve")
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "malformed", "malformed")
	if !strings.Contains(recs[1].Detail, "the verdict says 1 tests pass") || !strings.Contains(recs[1].Detail, "exit 1, 1 passed") {
		t.Errorf("detail: %s", recs[1].Detail)
	}
}

// The test command of a thread is a real one: `go test -v ./...` on a Go
// module at the cited commit, in the boundary the run gets by default
// (the grader's: a private HOME, so a build cache of its own). In a
// debater's boundary, which reaches no HOME, go found no build cache and
// every count was refused ("package testing is not in std").
func TestVerdictEvidenceRunsGoTest(t *testing.T) {
	sessiontest.Tool(t, "go")
	verdict := `body_cmd: 'printf "Approved: the 2 tests pass.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n" "$(git rev-parse main)"'`
	d := newThread(t, map[string]string{
		"builder":  `body_cmd: 'printf "Please review.\n\nType: review-request\nRefs: main@%s\n" "$(git rev-parse main)"'`,
		"reviewer": verdict,
	}, "", "--test", "go test -count=1 -v ./...")
	gittest.Commit(t, d.Dir, "go.mod", "module example.com/login\n\ngo 1.26\n", "module")
	gittest.Commit(t, d.Dir, "login_test.go", "package login\n\nimport \"testing\"\n\nfunc TestLogin(t *testing.T) {}\n\nfunc TestLogout(t *testing.T) {}\n", "tests")
	d.MustRun(0, "turn", d.name, "--approve")
	// go builds the testing package and its imports from nothing (a
	// private HOME, an empty cache): 17 s on a quiet 2-core machine, more
	// beside a whole suite under the race detector.
	d.Limit = 5 * time.Minute
	if r := d.Run("turn", d.name, "--approve"); r.Code != 0 {
		out, _ := os.ReadFile(filepath.Join(d.Dir, "reviews", ".walkie", "login", "evidence", "0002-reviewer-1", "tests.txt"))
		t.Fatalf("the verdict was refused (exit %d); what go test said:\n%s", r.Code, out)
	}
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted")
	if !strings.Contains(recs[1].Detail, "evidence checked: ran `go test -count=1 -v ./...`") || !strings.Contains(recs[1].Detail, "exit 0, 2 passed") {
		t.Errorf("the verdict's detail: %s", recs[1].Detail)
	}
	t.Log(recs[1].Detail)
	d.noProcessesLeft()
}
