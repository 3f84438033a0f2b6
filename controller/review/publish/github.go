// Package publish puts a review's report where a CI shows it. On GitHub
// Actions: the job summary ($GITHUB_STEP_SUMMARY), the step's outputs
// ($GITHUB_OUTPUT), an annotation on each document line an objection
// cites, and one pull-request comment that a re-run edits rather than
// repeats: the one the token's own login posted, never another's with
// the marker pasted in. Nothing here fails the job: what could not be
// published is a warning in the summary.
package publish

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v84/github"

	"github.com/walkie-sh/walkie/controller/review"
)

// GitHub publishes on GitHub Actions.
type GitHub struct {
	// Getenv reads the runner's variables (GITHUB_STEP_SUMMARY,
	// GITHUB_OUTPUT, GITHUB_API_URL, GITHUB_REPOSITORY).
	Getenv func(string) string
	// Token is the GITHUB_TOKEN; "" posts no comment (and says so).
	Token string
	// Commands receives the workflow commands (annotations): the job's
	// standard output.
	Commands io.Writer
	// HTTP is the client for the REST API; nil is one with a timeout.
	HTTP *http.Client
	// DisagreementOK is --fail-on never: a disagreement does not fail
	// the step, so its annotation is a warning, not an error.
	DisagreementOK bool
}

// Published is what publishing did.
type Published struct {
	CommentURL string
	Edited     bool // an earlier comment of the review was edited
	// Kept is the commit of the run whose verdict the comment still
	// shows, when this run reached none (it failed, or found nothing to
	// review); "" when the comment shows this run's.
	Kept     string
	Warnings []string
}

// Publish annotates, comments, then writes the summary and outputs; the
// warnings of the first two go into r.Warnings, so the summary (and the
// report files written after) show them.
func (g *GitHub) Publish(ctx context.Context, r *review.Result, ev *review.Event) Published {
	var pub Published
	g.annotate(r)
	switch {
	case ev == nil || ev.PullRequest == nil:
		// A push or a manual run: there is no pull request to comment on.
	case r.Verdict == review.VerdictFailed && r.Failure == review.FailureInterrupted:
		// Cancelled, most often by a newer push whose run will comment:
		// an earlier comment stands until then, rather than a "cancelled".
		pub.Warnings = append(pub.Warnings, "the review was cancelled: no comment posted (an earlier comment, if any, stands)")
	case g.Token == "":
		pub.Warnings = append(pub.Warnings, "no GITHUB_TOKEN: the report was not posted on the pull request; give the step the token (github-token) and the job `permissions: pull-requests: write`")
	default:
		c, err := g.comment(ctx, r, ev.PullRequest)
		if c.warning != "" {
			pub.Warnings = append(pub.Warnings, c.warning)
		}
		if err != nil {
			pub.Warnings = append(pub.Warnings, commentWarning(err))
		}
		pub.CommentURL, pub.Edited, pub.Kept = c.url, c.edited, c.kept
	}
	r.Warnings = append(r.Warnings, pub.Warnings...)
	if err := g.appendFile("GITHUB_STEP_SUMMARY", review.Markdown(r)+"\n"); err != nil {
		pub.Warnings = append(pub.Warnings, err.Error())
	}
	md, js := review.ReportPaths(r)
	outputs := [][2]string{
		{"status", r.Verdict}, {"rounds", strconv.Itoa(r.Rounds)}, {"cost", fmt.Sprintf("%.4f", r.CostUSD)},
		{"report", md}, {"report-json", js}, {"out", r.Out}, {"comment-url", pub.CommentURL},
	}
	var b strings.Builder
	for _, kv := range outputs {
		writeOutput(&b, kv[0], kv[1])
	}
	if err := g.appendFile("GITHUB_OUTPUT", b.String()); err != nil {
		pub.Warnings = append(pub.Warnings, err.Error())
	}
	return pub
}

// appendFile appends to the file a runner variable names.
func (g *GitHub) appendFile(name, text string) error {
	path := g.Getenv(name)
	if path == "" {
		return fmt.Errorf("%s is not set: not written (is this a GitHub Actions step?)", name)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// writeOutput writes one output; a value with a line break takes the
// delimited form, with a delimiter the value cannot hold.
func writeOutput(b *strings.Builder, name, value string) {
	if !strings.ContainsAny(value, "\r\n") {
		fmt.Fprintf(b, "%s=%s\n", name, value)
		return
	}
	delim := "WALKIE_EOF"
	for strings.Contains(value, delim) {
		delim += "_"
	}
	fmt.Fprintf(b, "%s<<%s\n%s\n%s\n", name, delim, value, delim)
}

// annotate writes one annotation per objection that cites a document
// line, and one for the verdict.
func (g *GitHub) annotate(r *review.Result) {
	if g.Commands == nil {
		return
	}
	level := "notice"
	switch {
	case r.Verdict == review.VerdictFailed, r.Verdict == review.VerdictDisagreed && !g.DisagreementOK:
		level = "error" // the step fails
	case r.Verdict == review.VerdictDisagreed:
		level = "warning"
	}
	Annotate(g.Commands, level, "walkie review: "+r.Verdict, r.Reason)
	for _, d := range r.Docs {
		for _, o := range d.Objections {
			if o.Line == 0 {
				continue
			}
			props := fmt.Sprintf("file=%s,line=%d", property(o.File), o.Line)
			if o.EndLine > o.Line {
				props += fmt.Sprintf(",endLine=%d", o.EndLine)
			}
			props += ",title=" + property("walkie review: objection by "+o.Agent)
			fmt.Fprintf(g.Commands, "::warning %s::%s\n", props, data(o.Text))
		}
	}
}

// Annotate writes one workflow command (level "error", "warning" or
// "notice") with a title, for messages outside a report.
func Annotate(w io.Writer, level, title, message string) {
	fmt.Fprintf(w, "::%s title=%s::%s\n", level, property(title), data(message))
}

// data escapes a workflow command's message.
func data(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// property escapes a workflow command's property value.
func property(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// maxPages bounds the search for the earlier comment: 3,000 comments.
const maxPages = 30

// comment creates the review's comment on the pull request, or edits the
// one an earlier run made: the newest comment with review.CommentMarker
// whose author is the token's own login. A token that may write to the
// pull request may edit anyone's comment there, so the marker alone
// proves nothing: anyone can paste it. When the token's login cannot be
// told, nothing is edited and a new comment is posted (warning says so).
// A run that could not review keeps the verdict the earlier comment shows
// (review.Comment); one that found nothing to review, and has no earlier
// comment, posts none.
func (g *GitHub) comment(ctx context.Context, r *review.Result, pr *review.PullRequest) (c commented, err error) {
	owner, repo, err := g.repo(pr)
	if err != nil {
		return c, err
	}
	client, err := g.client()
	if err != nil {
		return c, err
	}
	var earlier *github.IssueComment
	me, idErr := g.identity(ctx, client)
	if idErr != nil {
		c.warning = fmt.Sprintf("could not tell which login the token posts as (%v), so no earlier comment was edited: a new one was posted", idErr)
	} else {
		found, err := findComments(ctx, client, owner, repo, pr.Number)
		if err != nil {
			return c, fmt.Errorf("list the comments of #%d: %w", pr.Number, err)
		}
		if i := slices.IndexFunc(found, func(x *github.IssueComment) bool { return strings.EqualFold(x.GetUser().GetLogin(), me) }); i >= 0 {
			earlier = found[i]
		}
	}
	if earlier == nil && r.Verdict == review.VerdictNone {
		if idErr != nil {
			c.warning = fmt.Sprintf("could not tell which login the token posts as (%v), so an earlier comment, if any, was not told that this run found nothing to review", idErr)
		}
		return c, nil
	}
	body := review.Comment(r, earlier.GetBody())
	if kept, ok := review.KeptVerdict(body); ok && !r.HasVerdict() {
		c.kept = kept.Head
	}
	if earlier != nil {
		done, _, err := client.Issues.EditComment(ctx, owner, repo, earlier.GetID(), &github.IssueComment{Body: &body})
		if err != nil {
			return c, fmt.Errorf("edit comment %d: %w", earlier.GetID(), err)
		}
		c.url, c.edited = done.GetHTMLURL(), true
		return c, nil
	}
	created, _, err := client.Issues.CreateComment(ctx, owner, repo, pr.Number, &github.IssueComment{Body: &body})
	if err != nil {
		return c, fmt.Errorf("comment on #%d: %w", pr.Number, err)
	}
	c.url = created.GetHTMLURL()
	return c, nil
}

// commented is what comment did.
type commented struct {
	url     string
	edited  bool
	kept    string // the commit whose verdict the comment still shows
	warning string
}

// identity is the login the token acts as: the author of the comments it
// posts. GET /user answers for a person's token; an app's installation
// token (GITHUB_TOKEN is one) may not call it, and the GraphQL viewer
// answers for both ("github-actions[bot]" for GITHUB_TOKEN).
func (g *GitHub) identity(ctx context.Context, client *github.Client) (string, error) {
	u, _, userErr := client.Users.Get(ctx, "")
	if userErr == nil && u.GetLogin() != "" {
		return u.GetLogin(), nil
	}
	req, err := client.NewRequest(http.MethodPost, g.graphqlURL(), map[string]string{"query": "query { viewer { login } }"})
	if err != nil {
		return "", fmt.Errorf("GET /user: %v; GraphQL: %w", userErr, err)
	}
	var out struct {
		Data struct {
			Viewer struct{ Login string }
		}
		Errors []struct{ Message string }
	}
	if _, err := client.Do(ctx, req, &out); err != nil {
		return "", fmt.Errorf("GET /user: %v; GraphQL viewer: %w", userErr, err)
	}
	if out.Data.Viewer.Login == "" {
		msg := "no login"
		if len(out.Errors) > 0 {
			msg = out.Errors[0].Message
		}
		return "", fmt.Errorf("GET /user: %v; GraphQL viewer: %s", userErr, msg)
	}
	return out.Data.Viewer.Login, nil
}

// graphqlURL is GITHUB_GRAPHQL_URL, which runners set; without it, the
// GraphQL endpoint beside GITHUB_API_URL (GitHub Enterprise Server serves
// the REST API under /api/v3 and GraphQL at /api/graphql).
func (g *GitHub) graphqlURL() string {
	if u := g.Getenv("GITHUB_GRAPHQL_URL"); u != "" {
		return u
	}
	api := strings.TrimSuffix(cmp.Or(g.Getenv("GITHUB_API_URL"), "https://api.github.com"), "/")
	if base, ok := strings.CutSuffix(api, "/api/v3"); ok {
		return base + "/api/graphql"
	}
	return api + "/graphql"
}

// findComments lists the pull request's comments that are a review's
// report (they start with the marker), newest first.
func findComments(ctx context.Context, client *github.Client, owner, repo string, number int) ([]*github.IssueComment, error) {
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	var found []*github.IssueComment
	for range maxPages {
		page, resp, err := client.Issues.ListComments(ctx, owner, repo, number, opts)
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			if strings.HasPrefix(strings.TrimSpace(c.GetBody()), review.CommentMarker) {
				found = append(found, c)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	slices.SortStableFunc(found, func(a, b *github.IssueComment) int { return cmp.Compare(b.GetID(), a.GetID()) })
	return found, nil
}

// repo is the owner and name of the pull request's repository.
func (g *GitHub) repo(pr *review.PullRequest) (string, string, error) {
	full := cmp.Or(g.Getenv("GITHUB_REPOSITORY"), pr.Repo)
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" {
		return "", "", fmt.Errorf("no repository to comment in (GITHUB_REPOSITORY is %q)", full)
	}
	return owner, name, nil
}

// client is a REST client for GITHUB_API_URL (GitHub Enterprise Server
// sets it to https://HOST/api/v3), with the token.
func (g *GitHub) client() (*github.Client, error) {
	hc := g.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := github.NewClient(hc).WithAuthToken(g.Token)
	api := cmp.Or(g.Getenv("GITHUB_API_URL"), "https://api.github.com")
	u, err := url.Parse(strings.TrimSuffix(api, "/") + "/")
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("GITHUB_API_URL %q is not a URL", api)
	}
	c.BaseURL = u
	return c, nil
}

func status(err error) int {
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// commentWarning says why the comment is missing and what to do.
func commentWarning(err error) string {
	msg := "the report was not posted on the pull request: " + err.Error()
	switch status(err) {
	case http.StatusForbidden, http.StatusNotFound, http.StatusUnauthorized:
		msg += "; the job needs `permissions: pull-requests: write` (on a pull request from a fork the token is read-only: see docs/ci.md)"
	}
	return msg
}
