package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// GitHub reads a pull request's reviews through the REST API: an
// approving review by a login the base's allowed signers list (as
// github:LOGIN) counts as the ack. GitHub itself refuses an author's
// approval of their own pull request.
type GitHub struct {
	API    string // the API's base URL: GITHUB_API_URL, https://api.github.com by default
	Repo   string // OWNER/NAME
	PR     int
	Token  string // GITHUB_TOKEN; may be empty for a public repository
	Client *http.Client
}

// review is one review of a pull request, as the API gives it.
type review struct {
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	State       string    `json:"state"`
	CommitID    string    `json:"commit_id"`
	SubmittedAt time.Time `json:"submitted_at"`
}

// maxPages bounds how many pages of reviews the gate reads (100 each).
const maxPages = 20

// approval is the first listed login whose latest decisive review
// approves sha, given after after, none of whose principals is in
// exclude: "github:LOGIN", or "".
func (g *GitHub) approval(ctx context.Context, allowed []string, sha string, after time.Time, exclude []string, same walkie.SameCommit) (string, error) {
	reviews, err := g.reviews(ctx)
	if err != nil {
		return "", err
	}
	latest := map[string]review{}
	for _, r := range reviews {
		switch r.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			if l, ok := latest[r.User.Login]; !ok || !r.SubmittedAt.Before(l.SubmittedAt) {
				latest[r.User.Login] = r
			}
		}
	}
	for _, login := range allowed {
		r, ok := latest[login]
		if !ok || r.State != "APPROVED" || !r.SubmittedAt.After(after) || slices.Contains(exclude, "github:"+login) {
			continue
		}
		if ok, err := same(r.CommitID, sha); err != nil {
			return "", err
		} else if ok {
			return "github:" + login, nil
		}
	}
	return "", nil
}

// reviews lists the pull request's reviews, every page.
func (g *GitHub) reviews(ctx context.Context) ([]review, error) {
	client := g.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	api := strings.TrimRight(g.API, "/")
	if api == "" {
		api = "https://api.github.com"
	}
	var all []review
	for page := 1; page <= maxPages; page++ {
		url := fmt.Sprintf("%s/repos/%s/pulls/%d/reviews?per_page=100&page=%d", api, g.Repo, g.PR, page)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
		if g.Token != "" {
			req.Header.Set("Authorization", "Bearer "+g.Token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("read the pull request's reviews: %w", err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the pull request's reviews: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("read the pull request's reviews: GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body[:min(len(body), 200)])))
		}
		var got []review
		if err := json.Unmarshal(body, &got); err != nil {
			return nil, fmt.Errorf("read the pull request's reviews: GET %s: %w", url, err)
		}
		all = append(all, got...)
		if len(got) < 100 {
			return all, nil
		}
	}
	return all, nil
}
