// Package reviewtest holds what tests of walkie review share: a git
// repository with a base and a head commit changing design documents, a
// recorded pull_request event payload, a local stand-in for the GitHub
// API that records every request and keeps the pull request's comments,
// and CheckMarkdown, which reads a report as GitHub renders it.
package reviewtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Repo is a git repository with two commits.
type Repo struct {
	Dir  string
	Base string // the first commit
	Head string // the second, checked out
}

// gitEnv makes commits reproducible: the same files give the same hashes
// on every run and machine, so a golden report can quote them.
var gitEnv = []string{
	"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	"GIT_AUTHOR_NAME=Ada Author", "GIT_AUTHOR_EMAIL=ada@example.com", "GIT_AUTHOR_DATE=2026-11-30T12:00:00Z",
	"GIT_COMMITTER_NAME=Ada Author", "GIT_COMMITTER_EMAIL=ada@example.com", "GIT_COMMITTER_DATE=2026-11-30T12:00:00Z",
}

// NewRepo makes a repository in a new temporary directory: base holds
// the files of base, head replaces and adds those of head (a value ""
// deletes the file).
func NewRepo(t testing.TB, base, head map[string]string) *Repo {
	t.Helper()
	r := &Repo{Dir: t.TempDir()}
	r.Git(t, "init", "--quiet", "--initial-branch=main")
	r.Base = r.commit(t, base, "base: the design as it was")
	r.Head = r.commit(t, head, "head: the change under review")
	return r
}

func (r *Repo) commit(t testing.TB, files map[string]string, msg string) string {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(r.Dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.Git(t, "add", "--all")
	r.Git(t, "commit", "--quiet", "--allow-empty", "-m", msg)
	return strings.TrimSpace(r.Git(t, "rev-parse", "HEAD"))
}

// Git runs git in the repository and returns its output.
func (r *Repo) Git(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir}, args...)...)
	cmd.Env = append(os.Environ(), gitEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Status is `git status --porcelain` of the work tree, ignored files too.
func (r *Repo) Status(t testing.TB) string {
	t.Helper()
	return r.Git(t, "status", "--porcelain", "--ignored", "--untracked-files=all")
}

// PullRequest is what an event payload says of a pull request.
type PullRequest struct {
	Number      int
	Title, Body string
	Repo        string // owner/name
	Base, Head  string // commits
}

// WriteEvent writes a pull_request "synchronize" payload as the runner
// records it (the fields walkie reads, and some it does not) and returns
// its path.
func WriteEvent(t testing.TB, dir string, pr PullRequest) string {
	t.Helper()
	repo := map[string]any{"full_name": pr.Repo, "html_url": "https://github.com/" + pr.Repo, "private": false}
	payload := map[string]any{
		"action": "synchronize",
		"number": pr.Number,
		"pull_request": map[string]any{
			"number": pr.Number, "title": pr.Title, "body": pr.Body, "state": "open", "draft": false,
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d", pr.Repo, pr.Number),
			"user":     map[string]any{"login": "ada", "type": "User"},
			"base":     map[string]any{"ref": "main", "sha": pr.Base, "repo": repo},
			"head":     map[string]any{"ref": "design/cache", "sha": pr.Head, "repo": repo},
		},
		"repository": repo,
		"sender":     map[string]any{"login": "ada", "type": "User"},
	}
	b, err := json.MarshalIndent(payload, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "event.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Request is one request the stand-in received.
type Request struct {
	Method, Path, Query string
	Auth                string // the Authorization header
	Body                string
}

// Comment is an issue comment the stand-in keeps.
type Comment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
		Type  string `json:"type"`
	} `json:"user"`
	HTMLURL string `json:"html_url"`
}

// GitHub is a stand-in for the API of one repository's issue comments,
// on 127.0.0.1, and for the token's identity: GET /user and the GraphQL
// viewer. As on GitHub, a token that may write may edit anyone's comment:
// telling its own from another's is the client's job.
type GitHub struct {
	URL  string // the API's base, as GITHUB_API_URL
	Repo string

	mu       sync.Mutex
	requests []Request
	comments map[int][]*Comment // by pull request number
	nextID   int64
	// Refuse, when set, answers every write with this status.
	refuse int
	// login and userType are who the token is: by default GITHUB_TOKEN,
	// an app's installation token, which GET /user refuses.
	login, userType string
}

var (
	listPath = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$`)
	editPath = regexp.MustCompile(`^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$`)
)

// StartGitHub starts the stand-in; it is closed when the test ends.
func StartGitHub(t testing.TB, repo string) *GitHub {
	t.Helper()
	g := &GitHub{Repo: repo, comments: map[int][]*Comment{}, nextID: 1000, login: "github-actions[bot]", userType: "Bot"}
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

// Refuse makes every later write fail with status (0: accept again).
func (g *GitHub) Refuse(status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refuse = status
}

// ActAs makes the token someone else's: a "User" (a person's token, which
// GET /user answers) or a "Bot" (an app's, which only the GraphQL viewer
// names).
func (g *GitHub) ActAs(login, userType string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.login, g.userType = login, userType
}

// AddComment puts a comment on pull request n as if someone wrote it, and
// returns a copy of it as posted (a later edit does not change the copy).
func (g *GitHub) AddComment(n int, login, userType, body string) Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	return *g.add(n, login, userType, body)
}

func (g *GitHub) add(n int, login, userType, body string) *Comment {
	g.nextID++
	c := &Comment{ID: g.nextID, Body: body, HTMLURL: fmt.Sprintf("https://github.com/%s/pull/%d#issuecomment-%d", g.Repo, n, g.nextID)}
	c.User.Login, c.User.Type = login, userType
	g.comments[n] = append(g.comments[n], c)
	return c
}

// Requests returns every request so far.
func (g *GitHub) Requests() []Request {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Request(nil), g.requests...)
}

// Comments returns a copy of pull request n's comments, oldest first.
func (g *GitHub) Comments(n int) []Comment {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []Comment
	for _, c := range g.comments[n] {
		out = append(out, *c)
	}
	return out
}

func (g *GitHub) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = append(g.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"), Body: string(body)})
	if r.Header.Get("Authorization") == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Requires authentication"})
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	// Served under any prefix: GitHub Enterprise Server's API is under
	// /api/v3, github.com's at the root.
	path := r.URL.Path
	if i := strings.Index(path, "/repos/"); i > 0 {
		path = path[i:]
	}
	switch {
	case r.Method == http.MethodGet && (path == "/user" || strings.HasSuffix(path, "/api/v3/user")):
		if g.userType == "Bot" {
			writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"login": g.login, "type": g.userType})
		return
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/graphql"):
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(body, &q); err != nil || !strings.Contains(q.Query, "viewer") {
			writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]string{{"message": "the stand-in answers the viewer query only"}}})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]string{"login": g.login}}})
		return
	}
	if m := listPath.FindStringSubmatch(path); m != nil && m[1] == g.Repo {
		n, _ := strconv.Atoi(m[2])
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, append([]*Comment{}, g.comments[n]...))
			return
		case http.MethodPost:
			if g.refuse != 0 {
				writeJSON(w, g.refuse, map[string]string{"message": "Resource not accessible by integration"})
				return
			}
			if err := json.Unmarshal(body, &in); err != nil || in.Body == "" {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request: body is missing"})
				return
			}
			writeJSON(w, http.StatusCreated, g.add(n, g.login, g.userType, in.Body))
			return
		}
	}
	if m := editPath.FindStringSubmatch(path); m != nil && m[1] == g.Repo && r.Method == http.MethodPatch {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		for _, cs := range g.comments {
			for _, c := range cs {
				if c.ID != id {
					continue
				}
				if g.refuse != 0 {
					writeJSON(w, g.refuse, map[string]string{"message": "Resource not accessible by integration"})
					return
				}
				if err := json.Unmarshal(body, &in); err != nil || in.Body == "" {
					writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request: body is missing"})
					return
				}
				c.Body = in.Body
				writeJSON(w, http.StatusOK, c)
				return
			}
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
