package fleet

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// newDebateFile is a debate between a and b with its first turn posted.
func newDebateFile(t *testing.T, dir, id string) string {
	t.Helper()
	file := filepath.Join(dir, id+walkie.FileSuffix)
	mustDo(t, walkie.Init(file, walkie.InitOptions{ID: id, Participants: []string{"a", "b"}, MaxRounds: 3, Briefing: []byte("Decide.\n")}))
	_, err := walkie.Approve(file)
	mustDo(t, err)
	_, err = walkie.Append(file, walkie.Post{From: "a", Body: []byte("First.\n")})
	mustDo(t, err)
	return file
}

func logAttempt(t *testing.T, file, id string, turn int, agent string, o walkie.Outcome, detail string) {
	t.Helper()
	start := time.Now().Add(-time.Minute)
	mustDo(t, engine.AppendTurnLog(walkie.StateDir(file, id), engine.TurnRecord{Turn: turn, Round: 1, Agent: agent, Role: "participant", Attempt: 1,
		Started: start, Ended: start.Add(20 * time.Second), DurationMS: 20000, Outcome: o, Detail: detail}))
}

// The debate's page draws its timeline, server-side: an SVG bar per
// attempt, in the page itself, and an agent's text in it only as text.
func TestPageDrawsTheTimeline(t *testing.T) {
	file := newDebateFile(t, t.TempDir(), "tl")
	logAttempt(t, file, "tl", 1, "a", walkie.OutcomeAccepted, "")
	logAttempt(t, file, "tl", 2, "b", walkie.OutcomeTimeout, `</title><script>alert("detail")</script>`)
	s := serverFor(t, file)
	w := get(t, s, s.DebatePage, "GET /d/{key}", "/d/"+walkie.Key(file))
	body := w.Body.String()
	for _, want := range []string{`<section id="timeline" class="picture" aria-label="timeline"><svg xmlns="http://www.w3.org/2000/svg" class="chart timeline"`,
		`class="attempt out-accepted"`, `class="attempt out-timeout"`, "&lt;/title&gt;&lt;script&gt;alert(&#34;detail&#34;)&lt;/script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, `<script>alert`) {
		t.Error("an agent's detail reached the page as markup")
	}
}

// A session running is drawn as a running bar, from the row's view of it
// (the daemon's own, or the activity file's).
func TestPageTimelineShowsTheRunningSession(t *testing.T) {
	file := newDebateFile(t, t.TempDir(), "run")
	now := time.Now()
	row := ReadDebate(walkie.Registered{File: file, ID: "run"}, config.Default(), now)
	row.Running = &Running{Agent: "b", Turn: 2, Attempt: 1, Started: now.Add(-90 * time.Second)}
	s := New(Options{Debates: func() []Debate { return []Debate{row} }, Now: func() time.Time { return now }})
	body := get(t, s, s.DebatePage, "GET /d/{key}", "/d/"+row.Key).Body.String()
	if !strings.Contains(body, `class="attempt out-running"`) || !strings.Contains(body, "running for 1m30s") {
		t.Errorf("the page does not draw b's session running:\n%s", body)
	}
}

// sseEvents reads a stream's events (name and data) until ctx ends.
func sseEvents(t *testing.T, ctx context.Context, url string) <-chan [2]string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan [2]string, 64)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var name string
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && name != "":
				out <- [2]string{name, strings.Join(data, "\n")}
				name, data = "", nil
			}
		}
	}()
	return out
}

// A new attempt in the turn log comes down the debate's stream as a new
// timeline, with one bar more, without the page being read again.
func TestTimelineStreamsANewAttempt(t *testing.T) {
	file := newDebateFile(t, t.TempDir(), "live")
	logAttempt(t, file, "live", 1, "a", walkie.OutcomeAccepted, "")
	s := serverFor(t, file)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /d/{key}/events", s.DebateEvents)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	events := sseEvents(t, sctx, srv.URL+"/d/"+walkie.Key(file)+"/events?after=1.1")
	bars := func(within time.Duration) int {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the stream ended")
				}
				if ev[0] == "timeline" {
					return strings.Count(ev[1], `class="attempt `)
				}
			case <-deadline:
				t.Fatalf("no timeline event within %v", within)
			}
		}
	}
	if n := bars(5 * time.Second); n != 1 {
		t.Fatalf("the first timeline has %d bars, want 1", n)
	}
	logAttempt(t, file, "live", 2, "b", walkie.OutcomeStalled, "quiet")
	s.Changed()
	if n := bars(5 * time.Second); n != 2 {
		t.Errorf("after a new attempt the timeline has %d bars, want 2", n)
	}
}

// The copies of a trials directory that the page lists are summed up on
// a page of their own, drawn: the fleet page links it, and a debate that
// is no copy is on no such page.
func TestTrialsPage(t *testing.T) {
	root := t.TempDir()
	var files []string
	for _, k := range []string{"1", "2"} {
		d := filepath.Join(root, "eval.trials", k)
		mustDo(t, os.MkdirAll(d, 0o755))
		files = append(files, newDebateFile(t, d, "eval-"+k))
	}
	files = append(files, newDebateFile(t, root, "loner"))
	s := serverFor(t, files...)
	dir := filepath.Join(root, "eval.trials")
	fleet := get(t, s, s.FleetPage, "GET /{$}", "/").Body.String()
	if want := `<a href="t/` + walkie.Key(dir) + `">eval</a>: the distribution of 2 copies`; !strings.Contains(fleet, want) {
		t.Errorf("the fleet page lacks %q:\n%s", want, fleet)
	}
	if strings.Count(fleet, `href="t/`) != 1 {
		t.Errorf("the fleet page links %d trials directories, want 1", strings.Count(fleet, `href="t/`))
	}
	w := get(t, s, s.TrialsPage, "GET /t/{key}", "/t/"+walkie.Key(dir))
	body := w.Body.String()
	for _, want := range []string{`<section id="distribution" class="picture"><svg xmlns="http://www.w3.org/2000/svg" class="chart distribution"`,
		`class="bar status-open"`, "Trials of eval: 2 copies", "<h1>Trials of eval"} {
		if !strings.Contains(body, want) {
			t.Errorf("the trials page lacks %q:\n%s", want, body)
		}
	}
	if w := get(t, s, s.TrialsPage, "GET /t/{key}", "/t/"+walkie.Key(root)); w.Code != http.StatusNotFound {
		t.Errorf("a directory with no copies listed: %d, want 404", w.Code)
	}
}
