package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller/review/reviewtest"
	"github.com/walkie-sh/walkie/walkie"
)

func TestReadEvent(t *testing.T) {
	dir := t.TempDir()
	p := reviewtest.WriteEvent(t, dir, reviewtest.PullRequest{Number: 12, Title: "T", Body: "B", Repo: "o/r", Base: "b1", Head: "h1"})
	ev, err := ReadEvent(p, "pull_request")
	if err != nil {
		t.Fatal(err)
	}
	pr := ev.PullRequest
	if ev.Name != "pull_request" || pr == nil || pr.Number != 12 || pr.Title != "T" || pr.Body != "B" || pr.Repo != "o/r" ||
		pr.BaseSHA != "b1" || pr.HeadSHA != "h1" || pr.BaseRef != "main" || pr.URL != "https://github.com/o/r/pull/12" || pr.Fork {
		t.Fatalf("%+v", pr)
	}
}

func TestParseEvent(t *testing.T) {
	push, err := ParseEvent("e.json", "push", []byte(`{"ref": "refs/heads/main", "repository": {"full_name": "o/r"}}`))
	if err != nil || push.PullRequest != nil {
		t.Fatalf("a push: %+v, %v", push, err)
	}
	fork, err := ParseEvent("e.json", "pull_request", []byte(`{"pull_request": {"number": 1, "base": {"repo": {"full_name": "o/r"}}, "head": {"repo": {"full_name": "mallory/r"}}}}`))
	if err != nil || !fork.PullRequest.Fork {
		t.Fatalf("a fork: %+v, %v", fork, err)
	}
	// A fork whose repository was deleted has head.repo null.
	gone, err := ParseEvent("e.json", "pull_request", []byte(`{"pull_request": {"number": 1, "head": {"repo": null}}, "repository": {"full_name": "o/r"}}`))
	if err != nil || gone.PullRequest.Repo != "o/r" {
		t.Fatalf("%+v, %v", gone, err)
	}
	for name, data := range map[string]string{
		"not JSON":        "{\n  \"pull_request\": {\n    oops\n",
		"empty":           "",
		"a number":        `{"pull_request": {"number": "seven"}}`,
		"no number":       `{"pull_request": {"title": "x"}}`,
		"truncated":       `{"pull_request": {"number": 7`,
		"an array at top": `[1, 2]`,
	} {
		_, err := ParseEvent("/runner/event.json", "pull_request", []byte(data))
		var ie *walkie.InputError
		if !errors.As(err, &ie) || ie.File != "/runner/event.json" || ie.Fix == "" {
			t.Errorf("%s: %v", name, err)
		}
	}
	_, err = ParseEvent("f", "", []byte("{\n  \"pull_request\": {\n    oops\n"))
	var ie *walkie.InputError
	if !errors.As(err, &ie) || ie.Line != 3 || !strings.Contains(ie.Error(), "f:3: the event payload is not JSON") {
		t.Errorf("%v", err)
	}
	if _, err := ReadEvent(filepath.Join(t.TempDir(), "missing.json"), ""); !errors.As(err, &ie) || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("%v", err)
	}
}

// FuzzParseEvent: any payload is an event or bad input, never a panic,
// and a pull request always has a number.
func FuzzParseEvent(f *testing.F) {
	f.Add([]byte(`{"pull_request": {"number": 1, "title": "t", "base": {"sha": "x"}}}`))
	f.Add([]byte(`{"pull_request": null}`))
	f.Add([]byte(`{"pull_request": {"number": -1}}`))
	b, _ := os.ReadFile(reviewtest.WriteEvent(f, f.TempDir(), reviewtest.PullRequest{Number: 2, Repo: "o/r"}))
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := ParseEvent("e.json", "pull_request", data)
		var ie *walkie.InputError
		switch {
		case err != nil && !errors.As(err, &ie):
			t.Fatalf("not an input error: %v", err)
		case err == nil && ev.PullRequest != nil && ev.PullRequest.Number <= 0:
			t.Fatalf("pull request without a number: %+v", ev.PullRequest)
		}
	})
}
