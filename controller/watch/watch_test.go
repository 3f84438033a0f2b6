package watch_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/controller/recovertest"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/controller/watch"
	"github.com/walkie-sh/walkie/walkie"
)

var watchBin struct {
	once sync.Once
	path string
	err  error
}

// watchFakeAgent builds the fake agent once for the watch tests.
func watchFakeAgent(t *testing.T) string {
	t.Helper()
	watchBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "walkie-watch-test-")
		if err != nil {
			watchBin.err = err
			return
		}
		watchBin.path = filepath.Join(dir, "fakeagent")
		out, err := exec.Command("go", "build", "-o", watchBin.path, "github.com/walkie-sh/walkie/cmd/fakeagent").CombinedOutput()
		if err != nil {
			watchBin.err = fmt.Errorf("%v: %s", err, out)
		}
	})
	if watchBin.err != nil {
		t.Fatalf("building fakeagent: %v", watchBin.err)
	}
	return watchBin.path
}

// watchConfig has fake agents fa and fb that sign from round 2, with the
// given debounce, and "ghost", whose command does not exist.
func watchConfig(t *testing.T, debounce time.Duration) *config.Config {
	t.Helper()
	bin := watchFakeAgent(t)
	agent := func(name, cmd string) string {
		return fmt.Sprintf("  %s:\n    command: [%q, --file, '{file}', --agent, '{agent}', --turn, '{turn}', --round, '{round}', --sign-from, '2']\n    usage: none\n", name, cmd)
	}
	y := fmt.Sprintf("defaults:\n  timeout: 20s\n  grace: 50ms\n  kill_grace: 300ms\n  retries: 0\n  debounce: %s\nagents:\n", debounce) +
		agent("fa", bin) + agent("fb", bin) + agent("ghost", filepath.Join(t.TempDir(), "no-such-cli"))
	cfg, err := config.Parse("", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func approvedDebate(t *testing.T, dir, id string, participants ...string) string {
	t.Helper()
	file := filepath.Join(dir, id+".walkie.md")
	// alice is the person of these tests; every other name an agent.
	var people []string
	if slices.Contains(participants, "alice") {
		people = []string{"alice"}
	}
	if err := walkie.Init(file, walkie.InitOptions{ID: id, Participants: participants, People: people, MaxRounds: 3,
		Briefing: []byte("Decide it. Sign off when you agree.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	return file
}

// A loop standing in for cron, ticking every 40ms over a directory: a
// debate of two commands runs to convergence with each turn invoked once,
// never before its debounce; a debate whose next party has no command
// waits for its post.
func TestWatchOnceCronLoop(t *testing.T) {
	const debounce = 250 * time.Millisecond
	dir := t.TempDir()
	cfg := watchConfig(t, debounce)
	both := approvedDebate(t, dir, "both", "fa", "fb")
	approved := time.Now()
	mixed := approvedDebate(t, dir, "mixed", "fa", "alice")
	invoked, invokedDetail := map[string]int{}, map[string]string{}
	var actions []string
	tick := func() {
		res, err := watch.Once(context.Background(), watch.Options{Path: dir, Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			actions = append(actions, filepath.Base(r.File)+" "+r.Action)
			switch r.Action {
			case watch.Invoked:
				invoked[r.Debate]++
				invokedDetail[r.Debate] = r.Detail
			case watch.Retried, watch.Escalated, watch.Error:
				t.Errorf("%s: %s: %s", r.File, r.Action, r.Detail)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for status(t, both) != walkie.StatusConverged {
		if time.Now().After(deadline) {
			t.Fatalf("not converged; actions: %v", actions)
		}
		tick()
		time.Sleep(40 * time.Millisecond)
	}
	if invoked["both"] != 4 {
		t.Errorf("both: %d invocations for 4 turns", invoked["both"])
	}
	// Debounce: every turn began at least `debounce` after the entry before
	// it (the file's approval for the first).
	d, _ := walkie.Load(both)
	prev := approved.Add(-50 * time.Millisecond) // the file's mtime is a little earlier
	for i, r := range acceptedStarts(t, both) {
		if gap := r.Sub(prev); gap < debounce {
			t.Errorf("turn %d started %v after the last entry; the debounce is %v", i+1, gap, debounce)
		}
		prev = d.Entries[i].Marker.At
	}
	// mixed: fa's first turn ran; alice, with no command, is never invoked.
	if invoked["mixed"] != 1 {
		t.Errorf("mixed: %d invocations, want 1 (alice has no command)", invoked["mixed"])
	}
	// The invocation that wrote fa's turn said so: the next party having
	// no command is no error (issue 13: it was "bad input: … no agent").
	var mixedActions []string
	for _, a := range actions {
		if strings.HasPrefix(a, "mixed") {
			mixedActions = append(mixedActions, a)
		}
	}
	if len(mixedActions) == 0 || mixedActions[len(mixedActions)-1] != "mixed.walkie.md waiting" {
		t.Errorf("mixed: actions %v", mixedActions)
	}
	if !strings.Contains(invokedDetail["mixed"], "fa wrote turn 1; the debate is open") {
		t.Errorf("mixed: fa's invocation said %q", invokedDetail["mixed"])
	}
	res, _ := watch.Once(context.Background(), watch.Options{Path: mixed, Config: cfg})
	if len(res) != 1 || res[0].Action != watch.Waiting || !strings.Contains(res[0].Detail, "waiting for alice: walkie post") {
		t.Fatalf("mixed after fa's turn: %+v", res)
	}
	if _, err := walkie.Append(mixed, walkie.Post{From: "alice", Body: []byte("Go on.\n")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(debounce)
	res, _ = watch.Once(context.Background(), watch.Options{Path: mixed, Config: cfg})
	if res[0].Action != watch.Invoked || len(walkieEntries(t, mixed)) != 3 {
		t.Fatalf("after alice's post: %+v", res)
	}
}

// Once per sequence number, one timed retry, then one escalation: the
// party whose CLI is missing is invoked, retried after RetryAfter, and the
// supervisor is told once, however many ticks follow.
func TestWatchOnceRetryThenEscalate(t *testing.T) {
	dir := t.TempDir()
	cfg := watchConfig(t, 0)
	file := approvedDebate(t, dir, "ghosted", "ghost", "fa")
	now := time.Now()
	start := now
	clock := func() time.Time { return now }
	var events []controller.Event
	tick := func() watch.Result {
		t.Helper()
		res, err := watch.Once(context.Background(), watch.Options{Path: file, Config: cfg, RetryAfter: time.Minute,
			Now: clock, Observe: func(e controller.Event) { events = append(events, e) }})
		if err != nil || len(res) != 1 {
			t.Fatalf("tick: %v %+v", err, res)
		}
		return res[0]
	}
	steps := []struct {
		advance time.Duration
		want    string
	}{
		{0, watch.Invoked},
		{0, watch.Waiting}, // invoked for this seq already
		{30 * time.Second, watch.Waiting},
		{31 * time.Second, watch.Retried}, // a minute after the first
		{10 * time.Second, watch.Waiting},
		{time.Minute, watch.Escalated},
		{time.Minute, watch.Waiting}, // told once
		{time.Hour, watch.Waiting},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		r := tick()
		if r.Action != s.want {
			t.Fatalf("tick %d (+%v): %s (%s), want %s", i+1, s.advance, r.Action, r.Detail, s.want)
		}
	}
	var esc []controller.Event
	for _, e := range events {
		if e.Kind == controller.EventEscalation {
			esc = append(esc, e)
		}
	}
	if len(esc) != 1 || esc[0].Agent != "ghost" || esc[0].Turn != 1 || !strings.Contains(esc[0].Line, "invoked 2 times") {
		t.Fatalf("escalations: %+v", esc)
	}
	// Issue 32 item 23: the first invocation's time is the first's, the
	// retry's the retry's (the retry came 61 s after the first).
	first, retry := start.Local().Format(time.DateTime), start.Add(61*time.Second).Local().Format(time.DateTime)
	if want := "(seq 0, first at " + first + ", last at " + retry + ")"; !strings.Contains(esc[0].Line, want) {
		t.Errorf("escalation %q, want it to say %q", esc[0].Line, want)
	}
	st, _ := walkie.LoadState(walkie.StateDir(file, "ghosted"))
	if st.Watch == nil || !st.Watch.Escalated || st.Watch.Tries != 2 || st.Watch.InvokedSeq != 0 {
		t.Errorf("state.json watch memory: %+v", st.Watch)
	}
	// The memory lives in state.json only: the record has no entry.
	if n := len(walkieEntries(t, file)); n != 0 {
		t.Errorf("the walkie file has %d entries", n)
	}
}

// An agent that simply does not reply: the tick's rule holds, not the
// controller's retries (issue 13: the controller retried at once and the
// debate ended failed before the timed retry or the escalation). Once for
// the sequence number, one timed retry, then the supervisor; the debate
// stays open for a person to act on.
func TestWatchOnceMuteAgentEscalates(t *testing.T) {
	bin := watchFakeAgent(t)
	cfg, err := config.Parse("", []byte(fmt.Sprintf(`defaults: {timeout: 20s, grace: 50ms, kill_grace: 300ms, retries: 1, debounce: 0s}
agents:
  mute: {command: [%q, --file, '{file}', --agent, '{agent}', --behavior, none], usage: none}
  fa: {command: [%q, --file, '{file}', --agent, '{agent}'], usage: none}
`, bin, bin)))
	if err != nil {
		t.Fatal(err)
	}
	file := approvedDebate(t, t.TempDir(), "mute", "mute", "fa")
	now := time.Now()
	var escalations int
	tick := func() watch.Result {
		t.Helper()
		res, err := watch.Once(context.Background(), watch.Options{Path: file, Config: cfg, RetryAfter: time.Minute,
			Now: func() time.Time { return now }, Observe: func(e controller.Event) {
				if e.Kind == controller.EventEscalation {
					escalations++
				}
			}})
		if err != nil || len(res) != 1 {
			t.Fatalf("tick: %v %+v", err, res)
		}
		return res[0]
	}
	for i, s := range []struct {
		advance  time.Duration
		action   string
		attempts int
	}{
		{0, watch.Invoked, 1},
		{30 * time.Second, watch.Waiting, 1},
		{31 * time.Second, watch.Retried, 2},
		{61 * time.Second, watch.Escalated, 2},
		{time.Hour, watch.Waiting, 2},
	} {
		now = now.Add(s.advance)
		r := tick()
		if r.Action != s.action || r.Status != walkie.StatusOpen {
			t.Fatalf("tick %d: %s, %s (%s); want %s and open", i+1, r.Action, r.Status, r.Detail, s.action)
		}
		if n := len(turnLogOf(t, file)); n != s.attempts {
			t.Fatalf("tick %d: %d attempts, want %d", i+1, n, s.attempts)
		}
	}
	if escalations != 1 {
		t.Errorf("%d escalations, want 1", escalations)
	}
	for _, r := range turnLogOf(t, file) {
		if r.Outcome != walkie.OutcomeNoTurn {
			t.Errorf("attempt %d: %s", r.Attempt, r.Outcome)
		}
	}
}

// The supervisor's copy: each new turn once, never supervisor notes.
func TestCopyEntries(t *testing.T) {
	dir := t.TempDir()
	file := approvedDebate(t, dir, "copied", "fa", "fb")
	var got []string
	emit := func(e controller.Event) {
		got = append(got, fmt.Sprintf("%d %s %s", e.Turn, e.Agent, strings.TrimSpace(e.Line)))
	}
	post := func(p walkie.Post) {
		if _, err := walkie.Append(file, p); err != nil {
			t.Fatal(err)
		}
	}
	post(walkie.Post{From: "fa", Body: []byte("One.\n")})
	post(walkie.Post{Supervisor: true, Body: []byte("Note.\n")})
	if n, err := notify.CopyEntries(file, emit); n != 1 || err != nil {
		t.Fatalf("CopyEntries = %d, %v", n, err)
	}
	if n, _ := notify.CopyEntries(file, emit); n != 0 {
		t.Fatalf("copied again: %d", n)
	}
	post(walkie.Post{From: "fb", Body: []byte("Two.\n"), Sign: true})
	notify.CopyEntries(file, emit)
	want := []string{"1 fa One.", "2 fb Two.\nSigned-off-by: fb"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("copies %q, want %q", got, want)
	}
}

func status(t *testing.T, file string) string {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		t.Fatal(err)
	}
	return walkie.DebateStatus(&d.Meta, d.Progress(), st)
}

func walkieEntries(t *testing.T, file string) []walkie.Entry {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return d.Entries
}

func acceptedStarts(t *testing.T, file string) []time.Time {
	var out []time.Time
	for _, r := range turnLogOf(t, file) {
		if r.Outcome == walkie.OutcomeAccepted {
			out = append(out, r.Started)
		}
	}
	return out
}

func turnLogOf(t *testing.T, file string) []controller.TurnRecord {
	t.Helper()
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, meta.ID))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A round table's next step runs whole on each tick: the implementer's
// turn, then the round's reviews together (sealed from each other, as in
// walkie auto), then the table has converged. A phase whose file awaits
// approval is a person's: the tick says so, and how.
func TestWatchOnceRunsARoundTablesSteps(t *testing.T) {
	bin := watchFakeAgent(t)
	y := "defaults:\n  timeout: 20s\n  grace: 50ms\n  kill_grace: 300ms\n  retries: 0\n  debounce: 0s\nagents:\n" +
		fmt.Sprintf("  fa:\n    command: [%q, --file, '{file}', --agent, '{agent}', --shell, 'echo done > w/out']\n    usage: none\n", bin) +
		fmt.Sprintf("  fb:\n    command: [%q, --file, '{file}', --agent, '{agent}', --behavior, verdict]\n    usage: none\n", bin) +
		fmt.Sprintf("  fc:\n    command: [%q, --file, '{file}', --agent, '{agent}', --behavior, write]\n    usage: none\n", bin)
	cfg, err := config.Parse("", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	tick := func(file string) watch.Result {
		t.Helper()
		res, err := watch.Once(context.Background(), watch.Options{Path: file, Config: cfg})
		if err != nil || len(res) != 1 {
			t.Fatalf("tick: %+v, %v", res, err)
		}
		return res[0]
	}
	table := func(id, more string) string {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "w"), 0o755); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, id+".walkie.md")
		rt := "---\nwalkie: 2\nid: " + id + "\nmode: roundtable\nimplementer: fa\nreviewers: [fb]\n" + more + "grader: [\"true\"]\nworkspace: w\nmax_rounds: 2\n---\n# Briefing\nBuild it.\n"
		if err := os.WriteFile(file, []byte(rt), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := walkie.Approve(file); err != nil {
			t.Fatal(err)
		}
		return file
	}
	file := table("rt", "")
	for i, want := range []struct{ action, turns string }{{watch.Invoked, "1"}, {watch.Invoked, "2"}, {watch.Ended, "2"}} {
		r := tick(file)
		d, err := walkie.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if r.Action != want.action || fmt.Sprint(d.Progress().Turns) != want.turns {
			t.Fatalf("tick %d: %+v with %d turns, want %s with %s", i+1, r, d.Progress().Turns, want.action, want.turns)
		}
	}
	if r := tick(file); r.Status != walkie.StatusConverged {
		t.Fatalf("the table is %s, want converged", r.Status)
	}
	recs := turnLogOf(t, file)
	if len(recs) != 2 || recs[1].Role != "reviewer" || recs[1].Outcome != walkie.OutcomeAccepted {
		t.Fatalf("attempts %+v", recs)
	}

	phased := table("ph", "phases:\n  - research: fc\n")
	if r := tick(phased); r.Action != watch.Invoked {
		t.Fatalf("the phase's tick: %+v", r)
	}
	r := tick(phased)
	if r.Action != watch.Waiting || !strings.Contains(r.Detail, "the research phase's file by fc awaits approval") || !strings.Contains(r.Detail, "walkie phase approve "+phased+" research") {
		t.Fatalf("after the phase wrote its file: %+v", r)
	}
	if _, err := roundtable.ApprovePhase(phased, "research", roundtable.ApprovedByPerson); err != nil {
		t.Fatal(err)
	}
	if r := tick(phased); r.Action != watch.Invoked || !strings.Contains(r.Detail, "fa wrote turn 1") {
		t.Fatalf("after the approval: %+v", r)
	}
}

// The debate's own switch wins over the config's default, both ways, and
// a watch tick copies entries only when the switch says so.
func TestCopyWantedPerDebate(t *testing.T) {
	dir := t.TempDir()
	file := approvedDebate(t, dir, "switch", "fa", "fb")
	set := func(v *bool) {
		t.Helper()
		if _, _, err := walkie.UpdateState(file, walkie.OpState, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
			s.CopySupervisor = v
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	on, off := true, false
	for _, c := range []struct {
		name       string
		sw         *bool
		dflt, want bool
	}{
		{"no switch follows the config (on)", nil, true, true},
		{"no switch follows the config (off)", nil, false, false},
		{"on beats a config that is off", &on, false, true},
		{"off beats a config that is on", &off, true, false},
	} {
		set(c.sw)
		if got := notify.CopyWanted(file, c.dflt); got != c.want {
			t.Errorf("%s: CopyWanted = %v", c.name, got)
		}
	}

	if _, err := walkie.Append(file, walkie.Post{From: "fa", Body: []byte("One.\n")}); err != nil {
		t.Fatal(err)
	}
	var copies int
	observe := func(e controller.Event) {
		if e.Kind == controller.EventEntry {
			copies++
		}
	}
	tick := func(dflt bool) {
		t.Helper()
		// A config whose agents do not exist: the tick only copies, waits.
		cfg, err := config.Parse("", []byte("agents: {}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := watch.Once(context.Background(), watch.Options{Path: file, Config: cfg, Observe: observe, CopyEntries: dflt}); err != nil {
			t.Fatal(err)
		}
	}
	set(&off)
	tick(true)
	if copies != 0 {
		t.Fatalf("copied with the debate's switch off: %d", copies)
	}
	set(&on)
	tick(false)
	if copies != 1 {
		t.Fatalf("copies with the debate's switch on: %d, want 1", copies)
	}
}

// A cron tick finishes the attempt a dead controller left running even
// when the next party is a person, whom the tick never invokes: the turn
// the controller stamped is logged once, and the debate waits for alice.
func TestWatchOnceRecoversAnAttemptLeftRunning(t *testing.T) {
	dir := t.TempDir()
	file := approvedDebate(t, dir, "left", "fa", "alice")
	recovertest.StampedNotLogged(t, file, "fa", "Over to you, alice.")
	res, err := watch.Once(context.Background(), watch.Options{Path: dir, Config: watchConfig(t, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Action != watch.Waiting || !strings.Contains(res[0].Detail, "waiting for alice") {
		t.Fatalf("the tick: %+v", res)
	}
	recs := turnLogOf(t, file)
	if len(recs) != 1 || recs[0].Turn != 1 || recs[0].Outcome != walkie.OutcomeAccepted {
		t.Fatalf("logged %+v, want turn 1 accepted once", recs)
	}
	st, err := walkie.LoadState(walkie.StateDir(file, "left"))
	if err != nil || st.Running != nil {
		t.Fatalf("state %+v (%v): the attempt is still running", st, err)
	}
}
