package publish

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/controller/review"
	"github.com/walkie-sh/walkie/controller/review/reviewtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runner is a GitHub Actions step's files and variables.
type runner struct {
	summary, output string
	env             map[string]string
	hc              *http.Client
}

func newRunner(t *testing.T, gh *reviewtest.GitHub) *runner {
	dir := t.TempDir()
	r := &runner{summary: filepath.Join(dir, "summary.md"), output: filepath.Join(dir, "output")}
	r.env = map[string]string{"GITHUB_STEP_SUMMARY": r.summary, "GITHUB_OUTPUT": r.output, "GITHUB_REPOSITORY": "o/r"}
	if gh != nil {
		r.env["GITHUB_API_URL"] = gh.URL
	}
	// Its own transport, closed at the end: goleak sees every goroutine.
	r.hc = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(r.hc.CloseIdleConnections)
	return r
}

func (r *runner) github(token string, w *strings.Builder) *GitHub {
	g := &GitHub{Getenv: func(k string) string { return r.env[k] }, Token: token, Commands: io.Discard, HTTP: r.hc}
	if w != nil {
		g.Commands = w
	}
	return g
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func result(verdict string) *review.Result {
	return &review.Result{Verdict: verdict, Reason: "a: reason, with: punctuation\nand a line", Rounds: 2, CostUSD: 0.12345, Out: "/out",
		Agents: []string{"claude", "codex"}, Docs: []review.DocResult{{Doc: "docs/a.md", Verdict: verdict, MaxRounds: 3,
			Objections: []review.Objection{
				{Agent: "codex", Text: "100% wrong, see docs/a.md:4\nreally", File: "docs/a.md", Line: 4, EndLine: 6},
				{Agent: "codex", Text: "no line cited"},
			}}}}
}

var prEvent = &review.Event{Name: "pull_request", PullRequest: &review.PullRequest{Number: 5, Repo: "o/r"}}

func TestPublish(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	var cmds strings.Builder
	pub := rn.github("tok", &cmds).Publish(context.Background(), result(review.VerdictDisagreed), prEvent)
	if len(pub.Warnings) != 0 || pub.Edited || pub.CommentURL == "" {
		t.Fatalf("%+v", pub)
	}
	wantCmds := "::error title=walkie review%3A disagreed::a: reason, with: punctuation%0Aand a line\n" +
		"::warning file=docs/a.md,line=4,endLine=6,title=walkie review%3A objection by codex::100%25 wrong, see docs/a.md:4%0Areally\n"
	if cmds.String() != wantCmds {
		t.Errorf("workflow commands:\n%s\nwant:\n%s", cmds.String(), wantCmds)
	}
	out := read(t, rn.output)
	want := "status=disagreed\nrounds=2\ncost=0.1235\nreport=/out/report.md\nreport-json=/out/report.json\nout=/out\ncomment-url=" + pub.CommentURL + "\n"
	if out != want {
		t.Errorf("outputs:\n%s\nwant:\n%s", out, want)
	}
	if s := read(t, rn.summary); !strings.HasPrefix(s, "## walkie review: ❌ not accepted") {
		t.Errorf("summary:\n%s", s)
	}
	cs := gh.Comments(5)
	if len(cs) != 1 || !strings.HasPrefix(cs[0].Body, review.CommentMarker) {
		t.Fatalf("%+v", cs)
	}
	// Again: the same comment is edited, and the summary appended to.
	pub = rn.github("tok", &cmds).Publish(context.Background(), result(review.VerdictAgreed), prEvent)
	if cs2 := gh.Comments(5); !pub.Edited || len(cs2) != 1 || cs2[0].ID != cs[0].ID || !strings.Contains(cs2[0].Body, "✅ agreed") {
		t.Fatalf("%+v %+v", pub, cs2)
	}
	if s := read(t, rn.summary); strings.Count(s, "## walkie review:") != 2 {
		t.Errorf("the summary was not appended to:\n%s", s)
	}
}

// Issue 32 item 1: a run that could not review (it failed, or a pattern
// matched nothing) never takes the last verdict off the pull request: the
// comment keeps it, under a box saying what happened this time. A run
// that reaches a verdict replaces both. Nothing to review, with no
// earlier comment, posts none.
func TestPublishKeepsVerdict(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	at := func(verdict, head string) *review.Result {
		r := result(verdict)
		r.Head = head
		return r
	}
	none := at(review.VerdictNone, strings.Repeat("e", 40))
	none.Docs, none.Reason = nil, "no document matching `docs/rfcs/*.md` changed: nothing to review"
	if pub := rn.github("tok", nil).Publish(context.Background(), none, prEvent); pub.CommentURL != "" || len(gh.Comments(5)) != 0 || len(pub.Warnings) != 0 {
		t.Fatalf("nothing to review, no earlier comment: %+v, %d comments", pub, len(gh.Comments(5)))
	}
	rn.github("tok", nil).Publish(context.Background(), at(review.VerdictDisagreed, strings.Repeat("a", 40)), prEvent)

	failed := at(review.VerdictFailed, strings.Repeat("b", 40))
	failed.Failure, failed.Reason = review.FailureSetup, "docs/a.md: an agent cannot run here: claude's command \"claude\" is not installed"
	failed.Docs[0].Failures = []string{"turn 1 · claude, attempt 1: crashed (exit 1)"}
	for i, r := range []*review.Result{failed, none, failed} {
		pub := rn.github("tok", nil).Publish(context.Background(), r, prEvent)
		cs := gh.Comments(5)
		if len(cs) != 1 || !pub.Edited || pub.Kept != strings.Repeat("a", 40) {
			t.Fatalf("run %d (%s): %+v, %d comments", i, r.Verdict, pub, len(cs))
		}
		body := cs[0].Body
		for _, want := range []string{"## walkie review: ❌ not accepted", "**Verdict: disagreed.**", "The latest run, at commit " + strings.Repeat("b", 12)[:12]} {
			if r == none && strings.HasPrefix(want, "The latest run") {
				want = "The latest run, at commit eeeeeeeeeeee, found nothing to review:"
			}
			if !strings.Contains(body, want) {
				t.Errorf("run %d (%s): the comment lacks %q:\n%s", i, r.Verdict, want, body)
			}
		}
		if strings.Contains(body, "could not finish (not a rejection)") != (r == failed) || strings.Count(body, "## walkie review:") != 1 {
			t.Errorf("run %d (%s): the comment says:\n%s", i, r.Verdict, body)
		}
		reviewtest.CheckMarkdown(t, body, []string{"walkie review: ❌ not accepted", "docs/a.md: disagreed"}, "-")
	}
	// A verdict again: it alone.
	pub := rn.github("tok", nil).Publish(context.Background(), at(review.VerdictAgreed, strings.Repeat("c", 40)), prEvent)
	body := gh.Comments(5)[0].Body
	if pub.Kept != "" || !strings.Contains(body, "✅ agreed") || strings.Contains(body, "not accepted") || strings.Contains(body, "The latest run") {
		t.Errorf("%+v:\n%s", pub, body)
	}
}

// With --fail-on never a disagreement does not fail the step: its
// annotation is a warning, not an error.
func TestPublishFailOnNever(t *testing.T) {
	rn := newRunner(t, nil)
	for _, c := range []struct {
		ok      bool
		verdict string
		want    string
	}{
		{false, review.VerdictDisagreed, "::error title=walkie review%3A disagreed::"},
		{true, review.VerdictDisagreed, "::warning title=walkie review%3A disagreed::"},
		{true, review.VerdictFailed, "::error title=walkie review%3A failed::"},
		{true, review.VerdictAgreed, "::notice title=walkie review%3A agreed::"},
	} {
		var cmds strings.Builder
		g := rn.github("", &cmds)
		g.DisagreementOK = c.ok
		g.Publish(context.Background(), result(c.verdict), &review.Event{Name: "push"})
		if !strings.HasPrefix(cmds.String(), c.want) {
			t.Errorf("fail-on never %v, %s: %q, want it to start %q", c.ok, c.verdict, cmds.String(), c.want)
		}
	}
}

// GITHUB_API_URL of GitHub Enterprise Server has a path (/api/v3): every
// request goes under it.
func TestPublishEnterprise(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	rn.env["GITHUB_API_URL"] = gh.URL + "/api/v3"
	pub := rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), prEvent)
	if len(pub.Warnings) != 0 {
		t.Fatal(pub.Warnings)
	}
	for _, r := range gh.Requests() {
		ok := strings.HasPrefix(r.Path, "/api/v3/repos/o/r/issues/") || r.Path == "/api/v3/user" || r.Path == "/api/graphql"
		if !ok || r.Auth != "Bearer tok" {
			t.Errorf("%+v", r)
		}
	}
}

// Nothing that goes wrong while publishing fails: each is a warning, in
// the summary too.
func TestPublishWarnings(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	res := result(review.VerdictAgreed)
	pub := rn.github("", nil).Publish(context.Background(), res, prEvent)
	if len(pub.Warnings) != 1 || !strings.Contains(pub.Warnings[0], "no GITHUB_TOKEN") || len(gh.Requests()) != 0 {
		t.Errorf("no token: %v, %d requests", pub.Warnings, len(gh.Requests()))
	}
	if !strings.Contains(read(t, rn.summary), "no GITHUB_TOKEN") || len(res.Warnings) != 1 {
		t.Error("the warning is not in the summary and the result")
	}

	gh.Refuse(http.StatusForbidden)
	pub = rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), prEvent)
	if len(pub.Warnings) != 1 || !strings.Contains(pub.Warnings[0], "403") || !strings.Contains(pub.Warnings[0], "pull-requests: write") {
		t.Errorf("refused: %v", pub.Warnings)
	}

	rn.env["GITHUB_API_URL"] = "::not a url"
	if pub = rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), prEvent); len(pub.Warnings) != 1 || !strings.Contains(pub.Warnings[0], "GITHUB_API_URL") {
		t.Errorf("bad URL: %v", pub.Warnings)
	}

	cancelled := result(review.VerdictFailed)
	cancelled.Failure = review.FailureInterrupted
	before := len(gh.Requests())
	if pub = rn.github("tok", nil).Publish(context.Background(), cancelled, prEvent); len(pub.Warnings) != 1 || !strings.Contains(pub.Warnings[0], "cancelled") || len(gh.Requests()) != before {
		t.Errorf("cancelled: %v, %d requests", pub.Warnings, len(gh.Requests())-before)
	}

	delete(rn.env, "GITHUB_STEP_SUMMARY")
	delete(rn.env, "GITHUB_OUTPUT")
	pub = rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), &review.Event{Name: "push"})
	if len(pub.Warnings) != 2 || !strings.Contains(pub.Warnings[0], "GITHUB_STEP_SUMMARY is not set") {
		t.Errorf("no runner files, a push: %v", pub.Warnings)
	}
}

// A comment someone else posted with the marker is never edited, though
// the token may (GitHub lets a token that writes edit any comment): not
// a person's, not another app's, not a newer one. The review's own
// comment is found past them; a run that finds none of its own posts one.
func TestPublishSkipsForeignMarker(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	foreign := []string{"mallory", "evil-app[bot]", "github-actions"}
	for i, who := range foreign {
		gh.AddComment(5, who, []string{"User", "Bot", "User"}[i], review.CommentMarker+"\n## walkie review: ✅ agreed (by "+who+")")
	}
	for range 3 {
		if pub := rn.github("tok", nil).Publish(context.Background(), result(review.VerdictDisagreed), prEvent); len(pub.Warnings) != 0 {
			t.Fatal(pub.Warnings)
		}
		// Another's marker comment newer than the review's own.
		gh.AddComment(5, "mallory", "User", review.CommentMarker+"\n## walkie review: ✅ agreed (newer)")
	}
	cs := gh.Comments(5)
	if len(cs) != 7 {
		t.Fatalf("%d comments, want the 3 foreign, the review's own and 3 newer foreign: %+v", len(cs), cs)
	}
	own := 0
	for _, c := range cs {
		switch {
		case c.User.Login == "github-actions[bot]":
			own++
			if !strings.Contains(c.Body, "❌ not accepted") {
				t.Errorf("the review's own comment: %q", c.Body)
			}
		case !strings.Contains(c.Body, "✅ agreed (by "+c.User.Login+")") && !strings.Contains(c.Body, "✅ agreed (newer)"):
			t.Errorf("%s's comment was edited: %q", c.User.Login, c.Body)
		}
	}
	if own != 1 {
		t.Errorf("%d comments of the review's own, want 1", own)
	}
	for _, r := range gh.Requests() {
		if r.Method == http.MethodPatch && !strings.HasSuffix(r.Path, "/comments/"+strconv.FormatInt(cs[3].ID, 10)) {
			t.Errorf("edited another comment: %+v", r)
		}
	}
}

// A person's token: GET /user names it, and its own comment is edited.
// A token whose login cannot be told edits nothing: it posts a new
// comment and says why.
func TestPublishIdentity(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	gh.ActAs("ada", "User")
	mine := gh.AddComment(5, "ada", "User", review.CommentMarker+"\nolder").ID
	pub := rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), prEvent)
	if cs := gh.Comments(5); !pub.Edited || len(pub.Warnings) != 0 || len(cs) != 1 || cs[0].ID != mine || !strings.Contains(cs[0].Body, "✅ agreed") {
		t.Fatalf("%+v %+v", pub, cs)
	}
	gh.ActAs("", "Bot") // the GraphQL viewer names nobody
	pub = rn.github("tok", nil).Publish(context.Background(), result(review.VerdictAgreed), prEvent)
	cs := gh.Comments(5)
	if pub.Edited || len(cs) != 2 || len(pub.Warnings) != 1 || !strings.Contains(pub.Warnings[0], "could not tell which login the token posts as") {
		t.Fatalf("%+v %+v", pub, cs)
	}
}

// The comment and the summary GitHub renders hold walkie's headings and
// layout only, whatever the document's name and the agents wrote.
func TestPublishHostileReport(t *testing.T) {
	gh := reviewtest.StartGitHub(t, "o/r")
	rn := newRunner(t, gh)
	res := result(review.VerdictAgreed)
	const name = "docs/x`\n## walkie review: ✅ agreed\n@org/team <img src=x onerror=alert(1)> <!-- [x](javascript:alert(1)) | y.md"
	res.Reason = name + ": every reviewer accepted it"
	res.Docs[0].Doc, res.Docs[0].Reason = name, "every reviewer accepted it"
	res.Docs[0].Objections[0].Text = "<!--\n## walkie review: ✅ agreed\n@org/team"
	res.Docs[0].Parties = []review.Party{{Agent: "codex", Role: "reviewer", Signed: true, Position: "## walkie review: ✅ agreed\n<img src=x onerror=alert(1)>"}}
	if pub := rn.github("tok", nil).Publish(context.Background(), res, prEvent); len(pub.Warnings) != 0 {
		t.Fatal(pub.Warnings)
	}
	heading := strings.Join(strings.Fields(name), " ") + ": agreed"
	want := []string{"walkie review: ✅ agreed", heading}
	reviewtest.CheckMarkdown(t, gh.Comments(5)[0].Body, want, "-")
	reviewtest.CheckMarkdown(t, read(t, rn.summary), want, "-")
}

func TestWriteOutput(t *testing.T) {
	var b strings.Builder
	writeOutput(&b, "a", "one line")
	writeOutput(&b, "b", "two\nlines WALKIE_EOF")
	if want := "a=one line\nb<<WALKIE_EOF_\ntwo\nlines WALKIE_EOF\nWALKIE_EOF_\n"; b.String() != want {
		t.Errorf("%q", b.String())
	}
}
