//go:build linux

package realcli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/controller/review/reviewtest"
)

// walkie review with the real claude and codex CLIs, each as its preset
// starts it, pointed at the fake model server: the CI job as a GitHub
// runner would run it (a pull_request payload, the runner's files, a
// stand-in for the REST API), and the review's two ways to end that a
// person must never confuse: the agents agreed, or the model failed.

const (
	reviewPR   = 11
	reviewRepo = "acme/shop"
	reviewDoc  = "docs/design/cache.md"
	// exitReviewAgents is walkie review's code for agents that kept
	// failing: not a rejection.
	exitReviewAgents = 21
	// reviewToken is the runner's GitHub token, which no agent may see.
	reviewToken = "ghs_realcliTokenNeverForAgents"
)

// needReviewCLIs is need, except that in CI (CI set) a missing CLI fails
// the test instead of skipping it.
func needReviewCLIs(t *testing.T) {
	t.Helper()
	if skip != "" && os.Getenv("CI") != "" {
		t.Fatalf("CI is set and the real CLIs cannot run: %s", skip)
	}
	need(t)
}

// reviewFixture is a repository with a design change, a fake model, a
// GitHub stand-in, and walkie's HOME and TMPDIR.
type reviewFixture struct {
	t                *testing.T
	repo             *reviewtest.Repo
	srv              *modelserver.Server
	gh               *reviewtest.GitHub
	dir, home, tmp   string
	marker           blackbox.Marker
	event            string
	summary, outputs string
	env              []string // more of walkie's environment
}

func newReviewFixture(t *testing.T, reply func(r *modelserver.Request) (modelserver.Reply, bool)) *reviewFixture {
	t.Helper()
	needReviewCLIs(t)
	f := &reviewFixture{t: t, dir: t.TempDir(), home: t.TempDir(), tmp: t.TempDir(),
		marker: blackbox.NewMarker(t)}
	f.repo = reviewtest.NewRepo(t,
		map[string]string{reviewDoc: "# Cache layer\n\nServe repeated reads of /items from memory.\n"},
		map[string]string{reviewDoc: "# Cache layer\n\nServe repeated reads of /items from memory.\n\nEntries live for 5 minutes; the cache holds at most 10,000 of them.\n"})
	f.srv = modelserver.Start(t, modelserver.Script{Func: reply})
	f.gh = reviewtest.StartGitHub(t, reviewRepo)
	f.event = reviewtest.WriteEvent(t, f.dir, reviewtest.PullRequest{Number: reviewPR, Title: "Design: a cache layer", Body: "Adds the cache design.",
		Repo: reviewRepo, Base: f.repo.Base, Head: f.repo.Head})
	f.summary, f.outputs = filepath.Join(f.dir, "summary.md"), filepath.Join(f.dir, "output.txt")
	cfg := blackbox.Config{Defaults: cliDefaults()}
	for _, a := range []string{"claude", "codex"} {
		cfg.Agents = append(cfg.Agents, blackbox.Agent{Name: a, More: agentFor(a, f.srv.URL, true)})
	}
	cfg.Write(t, filepath.Join(f.dir, "walkie.yaml"))
	t.Cleanup(f.noneLeft)
	return f
}

func (f *reviewFixture) noneLeft() {
	f.t.Helper()
	f.marker.NoneLeft(f.t, 3*time.Second)
}

// review runs walkie review in the repository as a GitHub step.
func (f *reviewFixture) review(code int, args ...string) blackbox.Result {
	f.t.Helper()
	release := takeSlot(f.t)
	env := append(blackbox.Env(clis, f.marker), "HOME="+f.home, "TMPDIR="+f.tmp, "LANG=C.UTF-8",
		"CI=true", "GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_EVENT_PATH="+f.event,
		"GITHUB_STEP_SUMMARY="+f.summary, "GITHUB_OUTPUT="+f.outputs, "GITHUB_API_URL="+f.gh.URL,
		"GITHUB_REPOSITORY="+reviewRepo, "GITHUB_RUN_ID=77", "GITHUB_TOKEN="+reviewToken,
	)
	env = append(env, f.env...)
	args = append([]string{"review", reviewDoc, "--config", filepath.Join(f.dir, "walkie.yaml"), "--out", filepath.Join(f.dir, "out")}, args...)
	r := blackbox.Runner{T: f.t, Bin: bin, Dir: f.repo.Dir, Env: env, Limit: 6 * time.Minute}.Run(args...)
	release()
	f.noneLeft()
	if r.Code != code {
		f.t.Fatalf("walkie review: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.Code, code, r.Stdout, blackbox.Tail(r.Stderr, 40))
	}
	return r
}

func (f *reviewFixture) read(p string) string {
	f.t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

var (
	recordRe  = regexp.MustCompile(`/[^"\s]*\.walkie\.md`)
	headingRe = regexp.MustCompile(`## Turn (\d+) · (claude|codex)`)
)

// reviewer is the fake model's side of a review: each CLI's first call
// of a session gets the shell append of the turn its prompt names, into
// the record its prompt names; the call after the tool ran, a last word.
// Every turn accepts the design and signs off.
func reviewer(r *modelserver.Request) (modelserver.Reply, bool) {
	if toolResults(r) > 0 {
		return modelserver.Text("I appended my turn."), true
	}
	raw := string(r.Raw)
	file := recordRe.FindString(raw)
	m := headingRe.FindStringSubmatch(raw)
	if file == "" || m == nil {
		return modelserver.Text("The prompt names no record or no turn."), true
	}
	turn := fmt.Sprintf("\n## Turn %s · %s\n\nThe bound of 10,000 entries answers the memory question; I accept the design as written.\n\nSigned-off-by: %s\n", m[1], m[2], m[2])
	// printf's format carries the turn; it holds no ', % or \.
	return modelserver.Shell("printf '" + strings.ReplaceAll(turn, "\n", `\n`) + "' >> '" + file + "'"), true
}

// The real claude and codex agree: exit 0; the summary, the outputs and
// the one comment hold the verdict; the record verifies.
func TestReviewRealCLIsAgree(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t, reviewer)
	r := f.review(0)
	if s := f.read(f.summary); !strings.Contains(s, "## walkie review: ✅ agreed") {
		t.Errorf("summary:\n%s", s)
	}
	out := f.read(f.outputs)
	if !strings.Contains(out, "status=agreed\n") || !strings.Contains(out, "rounds=1\n") {
		t.Errorf("outputs:\n%s", out)
	}
	cs := f.gh.Comments(reviewPR)
	if len(cs) != 1 || !strings.Contains(cs[0].Body, "✅ agreed") || !strings.Contains(cs[0].Body, "| claude | reviewer | yes | 1 | 1 |") {
		t.Fatalf("comments: %+v", cs)
	}
	for _, who := range []string{"claude", "codex"} {
		if !f.srv.Saw("You are " + who + ", one participant in a written debate between claude and codex.") {
			t.Errorf("%s's prompt did not reach the model", who)
		}
	}
	rec := filepath.Join(f.dir, "out", "review-docs-design-cache", "review-docs-design-cache.walkie.md")
	v := exec.Command(bin, "verify", rec)
	if b, err := v.CombinedOutput(); err != nil {
		t.Errorf("walkie verify: %v\n%s", err, b)
	}
	t.Log(strings.TrimSpace(r.Stdout))
}

// A model that returns 500s: the review could not finish, exit 21, and
// the comment says it was not a rejection.
func TestReviewRealCLIsModelFails(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t, func(r *modelserver.Request) (modelserver.Reply, bool) {
		return modelserver.Error(500, "the model is down"), true
	})
	f.review(exitReviewAgents)
	cs := f.gh.Comments(reviewPR)
	if len(cs) != 1 {
		t.Fatalf("%d comments", len(cs))
	}
	for _, want := range []string{"⚠️ could not finish (not a rejection)", "this is not a rejection of the design", "crashed", "HTTP 5xx"} {
		if !strings.Contains(cs[0].Body, want) {
			t.Errorf("the comment lacks %q:\n%s", want, cs[0].Body)
		}
	}
	if out := f.read(f.outputs); !strings.Contains(out, "status=failed\n") {
		t.Errorf("outputs:\n%s", out)
	}
}
