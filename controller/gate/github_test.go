package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// reviewsServer serves reviews as GitHub does, 100 a page, and counts
// the pages asked for.
func reviewsServer(t *testing.T, reviews []map[string]any, pages *int) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/o/r/pulls/7/reviews" || r.Header.Get("Accept") != "application/vnd.github+json" {
			http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
			return
		}
		*pages++
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		from, to := min((page-1)*100, len(reviews)), min(page*100, len(reviews))
		_ = json.NewEncoder(w).Encode(reviews[from:to])
	}))
	t.Cleanup(srv.Close)
	return srv
}

func rev(login, state, commit string, at time.Time) map[string]any {
	return map[string]any{"user": map[string]string{"login": login}, "state": state, "commit_id": commit, "submitted_at": at.Format(time.RFC3339)}
}

// A listed login's latest decisive review approves the commit after the
// verdict: that counts, and nothing less does.
func TestGitHubApproval(t *testing.T) {
	verdict := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sha := strings.Repeat("a", 40)
	same := func(a, b string) (bool, error) { return a == b, nil }
	later := verdict.Add(time.Hour)
	var filler []map[string]any
	for i := range 120 {
		filler = append(filler, rev(fmt.Sprintf("bot%d", i), "COMMENTED", sha, later))
	}
	for _, c := range []struct {
		name    string
		reviews []map[string]any
		exclude []string
		want    string
	}{
		{"approved after the verdict", []map[string]any{rev("bob", "APPROVED", sha, later)}, nil, "github:bob"},
		{"on the second page", append(slices.Clone(filler), rev("bob", "APPROVED", sha, later)), nil, "github:bob"},
		{"before the verdict", []map[string]any{rev("bob", "APPROVED", sha, verdict.Add(-time.Minute))}, nil, ""},
		{"another commit", []map[string]any{rev("bob", "APPROVED", strings.Repeat("b", 40), later)}, nil, ""},
		{"not listed", []map[string]any{rev("mallory", "APPROVED", sha, later)}, nil, ""},
		{"changes requested since", []map[string]any{rev("bob", "APPROVED", sha, later), rev("bob", "CHANGES_REQUESTED", sha, later.Add(time.Minute))}, nil, ""},
		{"a comment since changes nothing", []map[string]any{rev("bob", "APPROVED", sha, later), rev("bob", "COMMENTED", sha, later.Add(time.Minute))}, nil, "github:bob"},
		{"the verdict's own signer", []map[string]any{rev("bob", "APPROVED", sha, later)}, []string{"github:bob"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			pages := 0
			srv := reviewsServer(t, c.reviews, &pages)
			g := &GitHub{API: srv.URL, Repo: "o/r", PR: 7}
			got, err := g.approval(context.Background(), []string{"alice", "bob"}, sha, verdict, c.exclude, same)
			if err != nil || got != c.want {
				t.Fatalf("approval = %q, %v; want %q", got, err, c.want)
			}
			if want := len(c.reviews)/100 + 1; pages != want {
				t.Fatalf("%d pages read, want %d", pages, want)
			}
		})
	}
}

// An API that refuses is an error naming the request, never an approval.
func TestGitHubRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	g := &GitHub{API: srv.URL, Repo: "o/r", PR: 7, Token: "bad"}
	_, err := g.approval(context.Background(), []string{"bob"}, "a", time.Time{}, nil, func(a, b string) (bool, error) { return true, nil })
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Bad credentials") {
		t.Fatalf("error %v", err)
	}
}

// The logins are the allowed signers' github: principals.
func TestLogins(t *testing.T) {
	got := logins([]byte("# comment\nci-host ssh-ed25519 AAAA\nalice@x,github:alice namespaces=\"walkie-gate\" ssh-ed25519 AAAB\n\ngithub:bob ssh-ed25519 AAAC\ngithub: ssh-ed25519 AAAD\n"))
	if !slices.Equal(got, []string{"alice", "bob"}) {
		t.Fatalf("logins %q", got)
	}
}
