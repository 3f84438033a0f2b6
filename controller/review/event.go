package review

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/walkie-sh/walkie/walkie"
)

// PullRequest is what the CI event says of the pull request under review.
type PullRequest struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body,omitempty"`
	URL     string `json:"url,omitempty"`
	BaseRef string `json:"base_ref,omitempty"` // the branch it merges into
	BaseSHA string `json:"base_sha,omitempty"`
	HeadSHA string `json:"head_sha,omitempty"`
	// Repo is "owner/name" of the repository the pull request is in.
	Repo string `json:"repo,omitempty"`
	// Fork is set when the head is in another repository.
	Fork bool `json:"fork,omitempty"`
}

// Event is the part of a CI event payload a review reads.
type Event struct {
	Name        string       // GITHUB_EVENT_NAME, e.g. pull_request
	PullRequest *PullRequest // nil when the event is not about a pull request
}

// ReadEvent reads a GitHub Actions event payload ($GITHUB_EVENT_PATH).
// Events that carry no pull request (push, workflow_dispatch) give an
// Event without one; a file that is not JSON is bad input.
func ReadEvent(file, name string) (*Event, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &walkie.InputError{File: file, Msg: fmt.Sprintf("the event payload cannot be read: %v", err),
			Fix: "GITHUB_EVENT_PATH must name the event's JSON file (the runner sets it); unset it to review outside GitHub Actions"}
	}
	return ParseEvent(file, name, data)
}

// ParseEvent decodes an event payload; file names it in errors.
func ParseEvent(file, name string, data []byte) (*Event, error) {
	var p struct {
		PullRequest *struct {
			Number  int    `json:"number"`
			Title   string `json:"title"`
			Body    string `json:"body"`
			HTMLURL string `json:"html_url"`
			Base    struct {
				Ref  string `json:"ref"`
				SHA  string `json:"sha"`
				Repo struct {
					FullName string `json:"full_name"`
				} `json:"repo"`
			} `json:"base"`
			Head struct {
				SHA  string `json:"sha"`
				Repo *struct {
					FullName string `json:"full_name"`
				} `json:"repo"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, &walkie.InputError{File: file, Line: jsonErrorLine(data, err), Msg: "the event payload is not JSON: " + err.Error(),
			Fix: "GITHUB_EVENT_PATH must name the event's JSON file as the runner wrote it; unset it to review outside GitHub Actions"}
	}
	ev := &Event{Name: name}
	if p.PullRequest == nil {
		return ev, nil
	}
	pr := p.PullRequest
	ev.PullRequest = &PullRequest{Number: pr.Number, Title: pr.Title, Body: pr.Body, URL: pr.HTMLURL,
		BaseRef: pr.Base.Ref, BaseSHA: pr.Base.SHA, HeadSHA: pr.Head.SHA,
		Repo: cmp.Or(pr.Base.Repo.FullName, p.Repository.FullName)}
	if pr.Head.Repo != nil && pr.Head.Repo.FullName != "" && pr.Head.Repo.FullName != ev.PullRequest.Repo {
		ev.PullRequest.Fork = true
	}
	if pr.Number <= 0 {
		return nil, &walkie.InputError{File: file, Msg: "the event's pull_request has no number",
			Fix: "a pull_request payload carries pull_request.number; record one with the runner, or unset GITHUB_EVENT_PATH"}
	}
	return ev, nil
}

// jsonErrorLine is the line a JSON syntax error is on, or 0.
func jsonErrorLine(data []byte, err error) int {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return 0
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}
