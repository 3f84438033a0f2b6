package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/walkie-sh/walkie/controller/ledger"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// Fifty debates of fake agents at once under every kind of limit: all
// reach their end, the limits hold (read back from the turn logs, not from
// the daemon's own bookkeeping), and a debate dropped in meanwhile is
// picked up by its file event (the daemon does not poll: a missed event
// is a debate never picked up).
func TestDaemonFiftyDebatesUnderLimits(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		maxSessions = 4
		perAgent    = 2
		rate        = 4 // fc's sessions per window
		window      = time.Second
	)
	dir := t.TempDir()
	cfg := testConfig(t, []string{
		fakeAgent("fa", "--delay", "20ms", "--sign-from", "2"),
		fakeAgent("fb", "--delay", "20ms", "--sign-from", "2"),
		fakeAgent("fc", "--delay", "20ms", "--sign-from", "2"),
	}, fmt.Sprintf("limits:\n  max_sessions: %d\n  per_agent_sessions: {fa: %d, fb: %d, fc: %d}\n  per_agent_turns_per_hour: {fc: %d}\n",
		maxSessions, perAgent, perAgent, perAgent, rate))
	var files []string
	for i := range 50 {
		parts := []string{"fa", "fb"}
		switch {
		case i%5 == 0:
			parts = []string{"fa", "fc"}
		case i%2 == 1:
			parts = []string{"fb", "fa"}
		}
		files = append(files, newDebate(t, dir, fmt.Sprintf("d%02d", i), 3, parts...))
	}
	start := time.Now()
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Listen: "127.0.0.1:0", RateWindow: window})
	defer d.stop(t)

	// Drop a finished debate file in while the others run: it must show up
	// in the daemon's list. How soon is logged, not asserted: the machine
	// is shared, and the daemon has no poll that would find it late.
	sessiontest.WaitFor(t, 30*time.Second, "some turns recorded", func() bool { return len(turnLog(t, files[0])) > 0 })
	stage := t.TempDir()
	staged := newDebate(t, stage, "late", 3, "fb", "fa")
	dropped := filepath.Join(dir, "late.walkie.md")
	if err := os.Rename(staged, dropped); err != nil {
		t.Fatal(err)
	}
	moved := time.Now()
	sessiontest.WaitFor(t, 10*time.Second, "the dropped-in debate picked up", func() bool {
		for _, v := range d.Debates() {
			if v.File == dropped && v.ID == "late" {
				return true
			}
		}
		return false
	})
	t.Logf("dropped-in debate picked up after %v", time.Since(moved).Round(time.Millisecond))
	files = append(files, dropped)

	sessiontest.WaitFor(t, 3*time.Minute, "every debate converged", func() bool {
		for _, f := range files {
			if status(t, f) != walkie.StatusConverged {
				return false
			}
		}
		return true
	})
	t.Logf("%d debates converged in %v", len(files), time.Since(start).Round(time.Millisecond))

	// The HTTP API while the daemon is up.
	resp, err := http.Get("http://" + d.Addr() + "/api/debates")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Debates []DebateView `json:"debates"`
	}
	err = json.NewDecoder(resp.Body).Decode(&api)
	resp.Body.Close()
	if err != nil || len(api.Debates) != len(files) {
		t.Errorf("/api/debates: %d debates, err %v; want %d", len(api.Debates), err, len(files))
	}
	sessiontest.WaitFor(t, 5*time.Second, "the daemon's view caught up", func() bool {
		for _, v := range d.Debates() {
			if v.Status != walkie.StatusConverged {
				return false
			}
		}
		return true
	})
	metrics := get(t, "http://"+d.Addr()+"/metrics", "")
	for _, want := range []string{`walkie_turns_total{agent="fc",outcome="accepted"}`, "walkie_turn_duration_seconds_bucket", "walkie_sessions_running 0",
		`walkie_debates{status="converged"} 51`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	d.stop(t)

	var all []interval
	perAgentIv := map[string][]interval{}
	var fcStarts []time.Time
	for _, f := range files {
		checkRecord(t, f)
		for _, r := range turnLog(t, f) {
			iv := interval{r.Agent, r.Started, r.Ended}
			all = append(all, iv)
			perAgentIv[r.Agent] = append(perAgentIv[r.Agent], iv)
			if r.Agent == "fc" {
				fcStarts = append(fcStarts, r.Started)
			}
		}
	}
	if n := maxOverlap(all); n > maxSessions {
		t.Errorf("%d sessions ran at once; max_sessions is %d", n, maxSessions)
	} else {
		t.Logf("at most %d sessions at once (max %d) over %d sessions", n, maxSessions, len(all))
	}
	for agent, iv := range perAgentIv {
		if n := maxOverlap(iv); n > perAgent {
			t.Errorf("%d %s sessions ran at once; per_agent_sessions is %d", n, agent, perAgent)
		}
	}
	// The limiter counts a start when it grants the slot; the log's start
	// is a few milliseconds later, and not by the same amount each time,
	// so the window checked here is a little shorter than the real one.
	slicesSortTimes(fcStarts)
	const slack = 150 * time.Millisecond
	for i := range fcStarts {
		n := 0
		for j := i; j < len(fcStarts) && fcStarts[j].Sub(fcStarts[i]) < window-slack; j++ {
			n++
		}
		if n > rate {
			t.Errorf("%d fc sessions started within %v of %s; the rate limit is %d per %v", n, window-slack, fcStarts[i].Format(time.StampMilli), rate, window)
		}
	}
	if len(fcStarts) < 20 {
		t.Errorf("only %d fc sessions; the rate limit was hardly exercised", len(fcStarts))
	}
}

func slicesSortTimes(ts []time.Time) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// get fetches url with an optional bearer token and returns the body; a
// status other than 200 fails the test.
func get(t testing.TB, url, token string) string {
	t.Helper()
	code, body := fetch(t, url, token)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return body
}

func fetch(t testing.TB, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(resp))
	return resp.StatusCode, b.String()
}

func readAll(resp *http.Response) string {
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

// An idle daemon starts the first turn of a debate dropped into its
// directory, and of one in a new subdirectory too, on the file's event:
// the daemon does not poll, so a missed event is a debate never started.
// How soon is logged; the speed is BenchmarkServeScale's pickup figure.
func TestDaemonDropInStartsOnItsEvent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa", "--sign"), fakeAgent("fb", "--sign")}, "")
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	for _, sub := range []string{"", "team/new"} {
		stage := t.TempDir()
		id := "drop" + strings.ReplaceAll(sub, "/", "-")
		staged := newDebate(t, stage, id, 2, "fa", "fb")
		target := filepath.Join(dir, sub, id+".walkie.md")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		// Give the daemon a moment to watch the new directory, which is
		// what a person copying a tree in would get anyway.
		if sub != "" {
			time.Sleep(50 * time.Millisecond)
		}
		if err := os.Rename(staged, target); err != nil {
			t.Fatal(err)
		}
		moved := time.Now()
		sessiontest.WaitFor(t, 10*time.Second, "the first turn started for "+id, func() bool {
			for _, v := range d.Debates() {
				if v.File == target && (v.Running != nil || v.Turns > 0) {
					return true
				}
			}
			return false
		})
		t.Logf("%s: first turn started %v after the file appeared", id, time.Since(moved).Round(time.Millisecond))
		sessiontest.WaitFor(t, 20*time.Second, id+" converged and logged", func() bool { return status(t, target) == walkie.StatusConverged && settled(t, target) })
		checkRecord(t, target)
	}
}

// walkie halt ends a running turn at once and the daemon starts no
// other; walkie extend on a debate at its cap makes the daemon go on.
func TestDaemonHaltAndExtendActAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{
		fakeAgent("slow", "--behavior", "hang"),
		fakeAgent("fa"), fakeAgent("fb"), // never sign: only the cap ends it
	}, "")
	hung := newDebate(t, dir, "hung", 3, "slow", "fa")
	capped := newDebate(t, dir, "capped", 1, "fa", "fb")
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)

	sessiontest.WaitFor(t, 10*time.Second, "the hanging turn running", func() bool {
		for _, v := range d.Debates() {
			if v.File == hung && v.Running != nil {
				return true
			}
		}
		return false
	})
	if err := walkie.Halt(hung, "test"); err != nil {
		t.Fatal(err)
	}
	halted := time.Now()
	sessiontest.WaitFor(t, 10*time.Second, "the halted turn recorded", func() bool {
		recs := turnLog(t, hung)
		return len(recs) == 1 && recs[0].Outcome == walkie.OutcomeHalted
	})
	t.Logf("halt ended the running turn after %v", time.Since(halted).Round(time.Millisecond))

	sessiontest.WaitFor(t, 10*time.Second, "capped at max-rounds", func() bool { return status(t, capped) == walkie.StatusMaxRounds })
	if _, err := walkie.Extend(capped, 1); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 10*time.Second, "two more turns after extend", func() bool {
		return status(t, capped) == walkie.StatusMaxRounds && settled(t, capped)
	})
	if n := len(turnLog(t, hung)); n != 1 {
		t.Errorf("the halted debate has %d attempts; the daemon must not start another", n)
	}
	checkRecord(t, capped)
}

// A participant without a command waits for `walkie post`; the daemon
// wakes on the post and runs the next participant. The turn before the
// person's is no error (issue 13: the run after it failed as bad input,
// looking up the person's agent).
func TestDaemonWaitsForAPersonAndWakesOnPost(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa", "--sign")}, "")
	file := newDebate(t, dir, "mixed", 2, "fa", "alice")
	core, logs := observer.New(zap.WarnLevel)
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Log: zap.New(core)})
	defer d.stop(t)
	sessiontest.WaitFor(t, 10*time.Second, "fa's first turn", func() bool {
		v := viewOf(d.Daemon, file)
		return v.Turns == 1 && strings.Contains(v.Waiting, "waiting for alice: walkie post")
	})
	for _, e := range logs.All() {
		t.Errorf("warned while the person's turn came: %s %v", e.Message, e.ContextMap())
	}
	if _, err := walkie.Append(file, walkie.Post{From: "alice", Body: []byte("Agreed.\n"), Sign: true}); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 10*time.Second, "converged after alice's post", func() bool { return status(t, file) == walkie.StatusConverged })
}

func viewOf(d *Daemon, file string) DebateView {
	for _, v := range d.Debates() {
		if v.File == file {
			return v
		}
	}
	return DebateView{}
}

// SIGTERM's drain: a turn that ends within the grace is recorded as
// usual; one that does not is interrupted and recorded so, and runs again
// on the next start.
func TestDaemonDrainGrace(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("quick", "--delay", "400ms", "--sign"), fakeAgent("stuck", "--behavior", "hang"), fakeAgent("fb", "--sign")}, "")
	quick := newDebate(t, dir, "quick", 2, "quick", "fb")
	stuck := newDebate(t, dir, "stuck", 2, "stuck", "fb")
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Grace: 1500 * time.Millisecond})
	sessiontest.WaitFor(t, 10*time.Second, "both turns running", func() bool {
		return viewOf(d.Daemon, quick).Running != nil && viewOf(d.Daemon, stuck).Running != nil
	})
	began := time.Now()
	d.stop(t)
	took := time.Since(began)
	if took < 1500*time.Millisecond || took > 8*time.Second {
		t.Errorf("the drain took %v; want the 1.5s grace plus the kill", took)
	}
	q := turnLog(t, quick)
	if len(q) != 1 || q[0].Outcome != walkie.OutcomeAccepted {
		t.Errorf("the quick turn: %+v, want one accepted attempt", q)
	}
	s := turnLog(t, stuck)
	if len(s) != 1 || s[0].Outcome != walkie.OutcomeInterrupted {
		t.Errorf("the stuck turn: %+v, want one interrupted attempt", s)
	}
	for _, f := range []string{quick, stuck} {
		st, _ := walkie.LoadState(walkie.StateDir(f, strings.TrimSuffix(filepath.Base(f), ".walkie.md")))
		if st.Running != nil {
			t.Errorf("%s: state still shows a running attempt after the drain", f)
		}
	}
}

// One daemon per directory; the second is told which pid holds it.
func TestDaemonOnePerDirectory(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, nil, "")
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	_, err := New(Options{Dir: dir, Config: cfg})
	if !errors.Is(err, walkie.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second daemon: %v; want ErrLocked naming pid %d", err, os.Getpid())
	}
}

// Beyond loopback the API needs a token, checked as a bearer token;
// /healthz stays open for liveness probes, and the page without it is the
// prompt for it (401).
func TestDaemonHTTPToken(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, nil, "")
	if _, err := New(Options{Dir: dir, Config: cfg, Listen: "0.0.0.0:0"}); !errors.Is(err, ErrNeedToken) {
		t.Fatalf("listening on 0.0.0.0 without a token: %v", err)
	}
	// The token applies wherever it is set; the test stays on loopback.
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Listen: "127.0.0.1:0", Token: "s3cret"})
	defer d.stop(t)
	base := "http://" + d.Addr()
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/healthz", "", 200},
		{"/api/debates", "", 401},
		{"/api/debates", "wrong", 401},
		{"/api/debates", "s3cret", 200},
		{"/metrics", "", 401},
		{"/metrics", "s3cret", 200},
		{"/", "", 401},
		{"/", "s3cret", 200},
		{"/d/0123456789abcdef", "", 401},
		{"/events", "", 401},
	} {
		if code, _ := fetch(t, base+c.path, c.token); code != c.want {
			t.Errorf("GET %s with token %q: %d, want %d", c.path, c.token, code, c.want)
		}
	}
}

// SIGHUP's reload: a broken config is refused and the old one keeps
// running; a good one applies, and a debate that waited for an agent the
// old config lacked starts.
func TestDaemonReload(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "walkie.yaml")
	write := func(agents ...string) {
		y := "defaults:\n  timeout: 30s\n  grace: 50ms\n  kill_grace: 300ms\nagents:\n" + strings.Join(agents, "")
		if err := os.WriteFile(cfgFile, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(fakeAgent("fa", "--sign"))
	cfg := loadConfig(t, cfgFile)
	file := newDebate(t, dir, "later", 2, "fa", "fz")
	d := startDaemon(t, Options{Dir: dir, Config: cfg, ConfigPath: cfgFile})
	defer d.stop(t)
	sessiontest.WaitFor(t, 10*time.Second, "waiting for fz", func() bool { return strings.Contains(viewOf(d.Daemon, file).Waiting, "fz") })

	if err := os.WriteFile(cfgFile, []byte("agents:\n  fz:\n    comand: [x]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Reload(); err == nil {
		t.Fatal("a config with a misspelt key was accepted")
	}
	if d.cfg.Load() != cfg {
		t.Fatal("the refused config replaced the running one")
	}
	write(fakeAgent("fa", "--sign"), fakeAgent("fz", "--sign"))
	if err := d.Reload(); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 10*time.Second, "converged once fz exists", func() bool { return status(t, file) == walkie.StatusConverged })
}

// The daemon's events reach a webhook that fails at first: turns started
// and recorded, the debate's end, and with copy_supervisor a copy of each
// turn, each once.
func TestDaemonNotifiesAWebhook(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var (
		mu    sync.Mutex
		kinds []string
		calls atomic.Int32
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "not yet", http.StatusBadGateway)
			return
		}
		var e notify.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		kinds = append(kinds, fmt.Sprintf("%s %d %s%s", e.Kind, e.Turn, e.Outcome, e.Status))
		mu.Unlock()
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa", "--sign"), fakeAgent("fb", "--sign")},
		fmt.Sprintf("notify:\n  copy_supervisor: true\n  webhook:\n    url: %s\n", srv.URL))
	file := newDebate(t, dir, "told", 2, "fa", "fb")
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Notify: notify.Options{Backoff: 5 * time.Millisecond}})
	sessiontest.WaitFor(t, 20*time.Second, "converged", func() bool { return status(t, file) == walkie.StatusConverged && settled(t, file) })
	d.stop(t) // delivers what is queued
	mu.Lock()
	defer mu.Unlock()
	got := strings.Join(kinds, "\n")
	for _, want := range []string{"turn-started 1 ", "turn-recorded 1 acceptedopen", "turn-started 2 ", "turn-recorded 2 acceptedconverged",
		"debate-ended 0 converged", "entry 1 ", "entry 2 "} {
		if strings.Count(got, want) != 1 {
			t.Errorf("want %q once in the webhook's events:\n%s", want, got)
		}
	}
}

// A debate halted while it waits for a session slot leaves the queue: no
// session is wasted on it when the slot frees.
func TestDaemonHaltWhileQueued(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("slow", "--delay", "1500ms", "--sign"), fakeAgent("fa", "--sign")}, "limits:\n  max_sessions: 1\n")
	first := newDebate(t, dir, "first", 2, "slow", "fa")
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	sessiontest.WaitFor(t, 10*time.Second, "slow running", func() bool { return viewOf(d.Daemon, first).Running != nil })
	queued := newDebate(t, dir, "queued", 2, "fa", "slow")
	sessiontest.WaitFor(t, 5*time.Second, "queued waiting for the slot", func() bool {
		return strings.Contains(viewOf(d.Daemon, queued).Waiting, "max_sessions 1")
	})
	if err := walkie.Halt(queued, "not now"); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 20*time.Second, "the first debate converged", func() bool { return status(t, first) == walkie.StatusConverged && settled(t, first) })
	if recs := turnLog(t, queued); len(recs) != 0 {
		t.Errorf("the halted debate ran %d attempts: %+v", len(recs), recs)
	}
	if v := viewOf(d.Daemon, queued); v.Status != walkie.StatusHalted || v.Waiting != "" {
		t.Errorf("queued: %+v", v)
	}
}

// The rate window survives a restart, and counts every walkie of the
// machine: the sessions in the ledger count.
func TestDaemonRateLimitSurvivesRestart(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa", "--sign"), fakeAgent("fb", "--sign")}, "limits:\n  per_agent_turns_per_hour: {fa: 2}\n")
	file := newDebate(t, dir, "busy", 2, "fa", "fb")
	// Two fa sessions ten minutes ago, as a previous daemon (or a walkie
	// auto) counted them.
	path := filepath.Join(t.TempDir(), ledger.FileName)
	ago := time.Now().Add(-10 * time.Minute)
	b := &ledger.Book{}
	for i := range 2 {
		h := b.Take("fa", ago.Add(time.Duration(i)*time.Second), session.ProcIdentity{Pid: os.Getpid()}, fmt.Sprint(i))
		b.Give("fa", h, 0, ago)
	}
	if err := os.WriteFile(path, b.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Options{Dir: dir, Config: cfg, Ledger: path})
	defer d.stop(t)
	sessiontest.WaitFor(t, 5*time.Second, "fa rate-limited", func() bool {
		return strings.Contains(viewOf(d.Daemon, file).Waiting, "held by per_agent_turns_per_hour")
	})
	t.Log(viewOf(d.Daemon, file).Waiting)
	time.Sleep(300 * time.Millisecond)
	if n := len(turnLog(t, file)); n != 0 {
		t.Errorf("%d attempts logged; the rate limit should have held fa back", n)
	}
}

// Issue 11: a reviewer whose CLI is not installed was an ordinary error,
// retried with backoff (1s, 2s, 4s…) for ever. It is bad input: the
// daemon parks the debate, showing why, until its record or the config
// changes. Installing the missing program alone changes neither, so a
// backoff retry is the only way the review could go on: within the time of
// three backoff retries it must not.
func TestDaemonParksAReviewerWithoutItsCLI(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), "late-reviewer")
	cfg := testConfig(t, []string{fakeAgent("ada"), fmt.Sprintf("  cy:\n    command: [%q, \"--file\", \"{file}\"]\n    usage: none\n", bin)}, "")
	file := filepath.Join(dir, "rt.walkie.md")
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	front := "---\nwalkie: 1\nid: rt\nmode: roundtable\nimplementer: ada\nreviewers: [cy]\ngrader: [\"true\"]\nworkspace: work\nmax_rounds: 2\n---\n# Briefing\nWrite anything.\n"
	if err := os.WriteFile(file, []byte(front), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	sessiontest.WaitFor(t, 20*time.Second, "the review parked as bad input", func() bool {
		v := viewOf(d.Daemon, file)
		return v.Turns == 1 && strings.Contains(v.Error, "agents.cy") && strings.Contains(v.Error, "bad input")
	})
	// Now the program exists (a verdict writer): only a retry would run it.
	script := "#!/bin/sh\nexec " + bins.fakeagent + " --behavior verdict --agent cy \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // three backoff retries' worth: 1s + 2s, and a margin
	if v := viewOf(d.Daemon, file); v.Turns != 1 {
		t.Fatalf("the parked review was retried without a change: %+v", v)
	}
	if _, err := os.Stat(filepath.Join(dir, ".walkie", "rt", "roundtable", "round-1", "review-cy.json")); err == nil {
		t.Fatal("the parked reviewer ran without a change")
	}
	// A change of the record (here a supervisor's note) is what brings it
	// back.
	if _, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte("cy's CLI is installed now.\n")}); err != nil {
		t.Fatal(err)
	}
	sessiontest.WaitFor(t, 20*time.Second, "the review ran once the record changed", func() bool { return status(t, file) == walkie.StatusConverged })
}
