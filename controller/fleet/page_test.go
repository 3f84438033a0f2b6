package fleet

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serverFor is a page server over the debates at files, read from disk.
func serverFor(t *testing.T, files ...string) *Server {
	t.Helper()
	return New(Options{CSRF: "csrf-token", Debates: func() []Debate {
		var out []Debate
		for _, f := range files {
			out = append(out, ReadDebate(walkie.Registered{File: f, ID: strings.TrimSuffix(filepath.Base(f), walkie.FileSuffix), By: "walkie auto", PID: 7}, config.Default(), time.Now()))
		}
		return out
	}})
}

func get(t *testing.T, s *Server, h http.HandlerFunc, pattern, path string) *httptest.ResponseRecorder {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc(pattern, h)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w
}

// Each entry is tagged with where it came from: a turn whose attempt the
// turn log has is an agent's, one posted by a party walkie did not run a
// person's, a supervisor note the supervisor's, walkie's own note the
// controller's; with its round and sign-off, beside the turn log.
func TestPageSourcesAndTurnLog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "src.walkie.md")
	mustDo(t, walkie.Init(file, walkie.InitOptions{ID: "src", Participants: []string{"claude", "alice"}, MaxRounds: 3, Briefing: []byte("Pick a **name**.\n")}))
	_, err := walkie.Approve(file)
	mustDo(t, err)
	post := func(p walkie.Post) {
		_, err := walkie.Append(file, p)
		mustDo(t, err)
	}
	post(walkie.Post{From: "claude", Body: []byte("I propose `walkie`.\n")})
	post(walkie.Post{From: "alice", Body: []byte("Agreed.\n"), Sign: true})
	post(walkie.Post{Supervisor: true, Body: []byte("Good.\n")})
	post(walkie.Post{Supervisor: true, Body: []byte("walkie: the round table converged.\n")})
	sd := walkie.StateDir(file, "src")
	started := time.Now().Add(-time.Minute)
	mustDo(t, engine.AppendTurnLog(sd, engine.TurnRecord{Turn: 1, Round: 1, Agent: "claude", Role: "participant", Attempt: 1, Started: started, Ended: started.Add(1500 * time.Millisecond),
		DurationMS: 1500, Outcome: walkie.OutcomeAccepted, Transcript: engine.Transcript{Text: "turns/0001-claude-1.txt"}, Usage: &engine.Usage{CostUSD: 0.0123, CostSource: "reported"}}))
	mustDo(t, os.MkdirAll(filepath.Join(sd, "turns"), 0o755))
	mustDo(t, os.WriteFile(filepath.Join(sd, "turns", "0001-claude-1.txt"), []byte("the agent's transcript\n"), 0o644))

	s := serverFor(t, file)
	key := walkie.Key(file)
	w := get(t, s, s.DebatePage, "GET /d/{key}", "/d/"+key)
	if w.Code != 200 {
		t.Fatalf("GET /d/KEY: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{
		`<article class="entry src-agent" id="e-1">`, `<b>Turn 1 · claude</b>`, "#1 · round 1",
		`<article class="entry src-person" id="e-2">`, `<span class="signed">signed off</span>`,
		`<article class="entry src-supervisor" id="e-3">`,
		`<article class="entry src-controller" id="e-4">`,
		"<code>walkie</code>", "Pick a <strong>name</strong>.",
		`<meta name="walkie-stream" content="` + key + `/events?after=4.1">`,
		`href="` + key + `/transcript/0"`, "$0.0123", "1.5s", "accepted",
		`<link rel="stylesheet" href="../static/style.css">`,
		`<section id="controls" class="controls" data-file="` + file + `" hidden>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "Signed-off-by") {
		t.Error("the sign-off line is shown in the body as well as its tag")
	}
	tr := get(t, s, s.Transcript, "GET /d/{key}/transcript/{n}", "/d/"+key+"/transcript/0")
	if tr.Code != 200 || tr.Body.String() != "the agent's transcript\n" || !strings.HasPrefix(tr.Header().Get("Content-Type"), "text/plain") {
		t.Errorf("the transcript: %d %q %s", tr.Code, tr.Body, tr.Header().Get("Content-Type"))
	}
	for _, n := range []string{"1", "-1", "x"} {
		if w := get(t, s, s.Transcript, "GET /d/{key}/transcript/{n}", "/d/"+key+"/transcript/"+n); w.Code != 404 {
			t.Errorf("transcript %s: %d", n, w.Code)
		}
	}
	if w := get(t, s, s.DebatePage, "GET /d/{key}", "/d/0000000000000000"); w.Code != 404 {
		t.Errorf("an unknown key: %d", w.Code)
	}
}

// A turn log that names a file outside the debate's transcripts (edited
// by hand, or by an agent) is not followed.
func TestTranscriptStaysInItsDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "esc.walkie.md")
	mustDo(t, walkie.Init(file, walkie.InitOptions{ID: "esc", Participants: []string{"a", "b"}, MaxRounds: 1}))
	sd := walkie.StateDir(file, "esc")
	for _, p := range []string{"../../esc.walkie.md", "/etc/passwd", "state.json"} {
		mustDo(t, engine.AppendTurnLog(sd, engine.TurnRecord{Turn: 1, Agent: "a", Attempt: 1, Outcome: walkie.OutcomeCrashed, Transcript: engine.Transcript{Text: p}}))
	}
	for i := range 3 {
		if f, _, err := openTranscript(file, i); err == nil {
			f.Close()
			t.Errorf("attempt %d's transcript outside turns/ was served", i)
		}
	}
	// A transcript longer than the bound: its end, said so.
	mustDo(t, os.MkdirAll(filepath.Join(sd, "turns"), 0o755))
	long := strings.Repeat("x", maxTranscript) + "THE END\n"
	mustDo(t, os.WriteFile(filepath.Join(sd, "turns", "long.txt"), []byte(long), 0o644))
	mustDo(t, engine.AppendTurnLog(sd, engine.TurnRecord{Turn: 1, Agent: "a", Attempt: 2, Outcome: walkie.OutcomeCrashed, Transcript: engine.Transcript{Text: "turns/long.txt"}}))
	s := serverFor(t, file)
	w := get(t, s, s.Transcript, "GET /d/{key}/transcript/{n}", "/d/"+walkie.Key(file)+"/transcript/3")
	if w.Code != 200 || !strings.HasPrefix(w.Body.String(), "[walkie: the first 8 bytes are not shown") || !strings.HasSuffix(w.Body.String(), "THE END\n") || w.Body.Len() > maxTranscript+200 {
		t.Errorf("a long transcript: %d, %d bytes, starts %q", w.Code, w.Body.Len(), w.Body.String()[:60])
	}
}

// A round table's page shows its rounds, each reviewer's verdict and the
// grader's result, and the reviewers against the grader.
func TestPageRoundTable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rt.walkie.md")
	mustDo(t, walkie.Init(file, walkie.InitOptions{ID: "rt", Mode: walkie.ModeRoundtable, Implementer: "impl", Reviewers: []string{"r1", "r2"}, Quorum: 1,
		MaxRounds: 3, Grader: walkie.Command{Argv: []string{"true"}}, Workspace: "."}))
	rd := filepath.Join(walkie.StateDir(file, "rt"), "roundtable", "round-1")
	mustDo(t, os.MkdirAll(rd, 0o755))
	rr := roundtable.RoundResult{Round: 1, Workspace: "abc", Grader: &roundtable.GraderResult{Status: roundtable.GraderFail}, Decision: "continue",
		Reviews: []roundtable.ReviewResult{{Reviewer: "r1", Verdict: &roundtable.ReviewVerdict{Approves: true}}, {Reviewer: "r2", Verdict: &roundtable.ReviewVerdict{Approves: false}}}}
	b, err := json.Marshal(rr)
	mustDo(t, err)
	mustDo(t, os.WriteFile(filepath.Join(rd, "round.json"), b, 0o644))
	s := serverFor(t, file)
	w := get(t, s, s.DebatePage, "GET /d/{key}", "/d/"+walkie.Key(file))
	body := w.Body.String()
	for _, want := range []string{"Round table", "implementer <b>impl</b>", `<td class="grader-fail">fail</td>`,
		`<td class="verdict-approved">approved</td>`, `<td class="verdict-blocked">blocked</td>`, "Reviewers against the grader",
		"<tr><td>r1</td><td>1</td><td>0</td><td>1</td><td>0</td><td>0</td><td>0</td></tr>",
		"<tr><td>r2</td><td>1</td><td>1</td><td>0</td><td>0</td><td>0</td><td>0</td></tr>"} {
		if !strings.Contains(body, want) {
			t.Errorf("the round table's page lacks %q", want)
		}
	}
}
