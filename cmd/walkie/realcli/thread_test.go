//go:build linux

package realcli

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/gitrepo/sshsig/sshsigtest"
	"github.com/walkie-sh/walkie/walkie"
)

// A review thread with the real claude building and the real codex
// reviewing, each as its preset starts it, in a git repository the thread
// is bound to with every entry committed: request → verdict → close, each
// turn appended by the CLI's own shell tool with its trailer lines, which
// the judge reads into the marker, its refs resolved in the repository.
// The gate then opens for the approved commit once a person acknowledges
// the verdict.
func TestReviewThreadClaudeCodex(t *testing.T) {
	gittest.Isolate(t) // not parallel: the repository's git runs with the test's environment
	var code, base string
	host, alice := sshsigtest.NewKey(t, "ci-host"), sshsigtest.NewKey(t, "alice@example.com")
	th := &threadModel{turns: []threadTurn{
		{"claude", "Please review the login fix: the old session token is revoked on sign-in.\n\nType: review-request\nRefs: main@%s\n"},
		{"codex", "Approved: the login tests pass at %s.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n"},
		{"claude", "Merged; thanks.\n\nType: close\n"},
	}}
	f := newFixture(t, th.script, setup{participants: []string{"claude", "codex"}, file: "reviews/login.walkie.md", id: "login",
		create: func(f *fixture) {
			gittest.Git(t, f.Dir, "init", "--quiet", "--initial-branch=main")
			f.write(".git/info/exclude", "walkie.yaml\nbrief.md\n")
			// Who may say approved, on the base: the controller's key
			// signs the verdict it stamps; alice acknowledges.
			base = gittest.Commit(t, f.Dir, ".walkie-signers", host.Line+alice.Line, "who may say approved")
			code = gittest.Commit(t, f.Dir, "login.go", "package login\n", "login: revoke the old token")[:7]
			f.MustRun(0, "thread", "new", "reviews", "login", "--agents", "claude,codex", "--repo", "..", "--git-commit", "--approve", "--max-rounds", "3")
		}})
	th.set(f.Dir, code)
	f.Env = append(f.Env, "WALKIE_SIGNING_KEY="+host.Path)

	sum := parseSummary(t, f.session(0, "auto", "reviews/login.walkie.md", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted", "accepted")
	if sum.Status != walkie.StatusClosed || sum.Turns != 3 || !strings.Contains(sum.Reason, "by claude in turn 3: Merged; thanks.") {
		t.Fatalf("status %s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
	}
	f.MustRun(0, "verify", "reviews/login.walkie.md")
	d, err := walkie.Load(f.file)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range d.Entries {
		kinds = append(kinds, strings.TrimSpace(e.Marker.Tags.Kind()+" "+strings.Join(e.Marker.Tags.RefStrings(), ",")))
	}
	full := gittest.Git(t, f.Dir, "rev-parse", code) // the record keeps the full id the agents' abbreviation stood for
	if want := []string{"review-request main@" + full, "verdict approve main@" + full, "close"}; !slices.Equal(kinds, want) {
		t.Fatalf("entries %q, want %q", kinds, want)
	}
	if n := strings.Count(gittest.Git(t, f.Dir, "log", "--format=%s", "--", "reviews/login.walkie.md"), "\n") + 1; n != 3 {
		t.Fatalf("%d commits of the record, want one per entry", n)
	}

	r := f.Run("gate", "reviews/login.walkie.md", "--ref", code, "--base", base)
	if r.Code != 3 || !strings.Contains(r.Stderr, "signed by ci-host, but no person has acknowledged it") {
		t.Fatalf("gate before the ack: exit %d\n%s", r.Code, r.Stderr)
	}
	f.write("ack.md", "Read the verdict; merge.\n")
	f.MustRun(0, "post", "reviews/login.walkie.md", "--supervisor", "--type", "ack", "--refs", code, "--signing-key", alice.Path, "--body-file", "ack.md")
	f.MustRun(0, "gate", "reviews/login.walkie.md", "--ref", gittest.Git(t, f.Dir, "rev-parse", "HEAD"), "--base", base)
	f.privateDirsGone()
	for _, r := range recs {
		t.Log(r)
	}
}

// threadModel is the fake model's side of a review thread: it answers a
// session's first call with the shell command that appends the turn its
// prompt asks for, computing the commit it cites in the repository, as
// the CLI itself would run git.
type threadModel struct {
	turns []threadTurn // turn N is turns[N-1]
	// The server answers on its own goroutines; the test learns the
	// repository and its commit only after the server has started.
	mu               sync.Mutex
	file, repo, code string
}

func (m *threadModel) set(repo, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.repo, m.code = repo, code
}

// threadTurn is one turn's author and body: a printf format whose %s are
// the commit the turn cites.
type threadTurn struct{ agent, body string }

func (m *threadModel) script(file string) modelserver.Script {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.file = file
	return modelserver.Script{Func: m.reply}
}

func (m *threadModel) reply(r *modelserver.Request) (modelserver.Reply, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if toolResults(r) > 0 {
		return modelserver.Text("I appended my turn."), true
	}
	// The latest turn the request names is the one asked for.
	for i := len(m.turns) - 1; i >= 0; i-- {
		body := m.turns[i].body
		heading := fmt.Sprintf("## Turn %d · %s", i+1, m.turns[i].agent)
		if !r.HasText(heading) {
			continue
		}
		format := strings.ReplaceAll("\n"+heading+"\n\n"+body, "\n", `\n`)
		// codex asks git itself; claude's preset runs no command
		// substitution (its permission check cannot see into one), so
		// its turn carries the commit the test made, as a builder that
		// just committed knows it.
		sha := m.code
		if r.Vendor == modelserver.OpenAI {
			sha = fmt.Sprintf(`"$(git -C '%s' log -1 --format=%%h -- :/login.go)"`, m.repo)
		}
		args := strings.Repeat(" "+sha, strings.Count(body, "%s"))
		return modelserver.Shell("printf '" + format + "'" + args + " >> '" + m.file + "'"), true
	}
	return modelserver.Text("The prompt names no turn."), true
}
