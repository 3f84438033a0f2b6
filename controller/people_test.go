package controller

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// events collects a run's events (not output lines) for a test.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) observe(ev Event) {
	if ev.Kind == EventOutput {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) of(kind EventKind) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// A debate between an agent and a person (issue 13: auto exited 2 at the
// person's turn). walkie runs the agent's turns and, at the person's,
// waits for the post on the doorbell, saying once whose post it waits for
// and how to make it; the post wakes it and the debate goes on.
func TestRunWaitsForAPerson(t *testing.T) {
	for _, order := range [][]string{{"a", "alice"}, {"alice", "a"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			// a signs from the file's second turn on; alice's second post
			// is signed: the debate converges on it.
			sign := `if [ "$(grep -c "^## Turn" "$3")" -ge 2 ]; then printf "Signed-off-by: %s\n" "$2" >> "$3"; fi`
			file, cfg := testDebate(t, 3, map[string]string{"a": shAgent(sign)}, order...)
			var ev events
			done := make(chan struct{})
			var sum Summary
			var err error
			go func() {
				defer close(done)
				sum, err = Run(context.Background(), Options{File: file, Config: cfg, Wait: true, Observe: ev.observe})
			}()
			posts := 0
			for posts < 2 {
				want := posts + 1
				sessiontest.WaitFor(t, 10*time.Second, "waiting for alice's post", func() bool { return len(ev.of(EventWaiting)) >= want })
				w := ev.of(EventWaiting)[posts]
				if w.Agent != "alice" || !strings.Contains(w.Line, "waiting for alice: walkie post "+file+" --from alice") {
					t.Fatalf("waiting event %+v", w)
				}
				select {
				case <-done:
					t.Fatalf("Run returned at alice's turn: %+v, %v", sum, err)
				default:
				}
				posted := time.Now()
				if _, err := walkie.Append(file, walkie.Post{From: "alice", Body: []byte("I agree.\n"), Sign: posts == 1}); err != nil {
					t.Fatal(err)
				}
				posts++
				if posts == 2 {
					break
				}
				// The doorbell wakes the run at once: the agent's next turn starts.
				sessiontest.WaitFor(t, 5*time.Second, "a's next turn after the post", func() bool { return len(ev.of(EventTurnStarted)) >= posts+map[bool]int{true: 1}[order[0] == "a"] })
				if took := time.Since(posted); took > 3*time.Second {
					t.Errorf("the run took %s to notice the post", took)
				}
			}
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("Run did not end after the last post")
			}
			if err != nil || sum.Status != walkie.StatusConverged {
				t.Fatalf("%+v, %v", sum, err)
			}
			for _, r := range turnLog(t, file) {
				if r.Agent != "a" {
					t.Errorf("walkie ran a turn of %s: %+v", r.Agent, r)
				}
			}
		})
	}
}

// walkie turn stops after its one turn before it looks the next party up
// (issue 13: it exited 2 when the next party had no command), and a
// waiting run that is not asked to wait says whose post it waits for.
func TestRunOnceStopsBeforeTheNextParty(t *testing.T) {
	file, cfg := testDebate(t, 3, map[string]string{"a": shAgent("")}, "a", "alice")
	sum, err := Run(context.Background(), Options{File: file, Config: cfg, Once: true})
	if err != nil || sum.Turns != 1 || len(sum.Attempts) != 1 || sum.Status != walkie.StatusOpen {
		t.Fatalf("walkie turn: %+v, %v", sum, err)
	}
	// Again, without Wait: nothing to run, nothing wrong.
	sum, err = Run(context.Background(), Options{File: file, Config: cfg, Once: true})
	if err != nil || len(sum.Attempts) != 0 || !strings.HasPrefix(sum.Waiting, "waiting for alice: walkie post") {
		t.Fatalf("at alice's turn: %+v, %v", sum, err)
	}
	// With Wait (walkie turn on a terminal): the person's post is the turn.
	done := make(chan struct{})
	var ev events
	go func() {
		defer close(done)
		sum, err = Run(context.Background(), Options{File: file, Config: cfg, Once: true, Wait: true, Observe: ev.observe})
	}()
	sessiontest.WaitFor(t, 10*time.Second, "the run waiting", func() bool { return len(ev.of(EventWaiting)) == 1 })
	if _, err := walkie.Append(file, walkie.Post{From: "alice", Body: []byte("Noted.\n")}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("walkie turn did not return after the post")
	}
	if err != nil || sum.Turns != 2 || len(sum.Attempts) != 0 {
		t.Fatalf("after the post: %+v, %v", sum, err)
	}
}

// A halt lands while the run waits for a person: the doorbell wakes it,
// and it stops halted.
func TestRunWaitingHalted(t *testing.T) {
	file, cfg := testDebate(t, 3, map[string]string{"a": shAgent("")}, "alice", "a")
	done := make(chan struct{})
	var sum Summary
	var err error
	var ev events
	go func() {
		defer close(done)
		sum, err = Run(context.Background(), Options{File: file, Config: cfg, Wait: true, Observe: ev.observe})
	}()
	sessiontest.WaitFor(t, 10*time.Second, "waiting", func() bool { return len(ev.of(EventWaiting)) > 0 })
	if err := walkie.Halt(file, "lunch"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting run did not see the halt")
	}
	if err != nil || sum.Status != walkie.StatusHalted {
		t.Fatalf("%+v, %v", sum, err)
	}
}

// A debate that ends at its cap gets walkie's closing note in the record
// (issue 13: only round tables had one), once per ending.
func TestRunClosingNoteAtTheCap(t *testing.T) {
	file, cfg := testDebate(t, 1, map[string]string{"a": shAgent(""), "b": shAgent(`printf "Signed-off-by: %s\n" "$2" >> "$3"`)}, "a", "b")
	for range 2 {
		sum, err := Run(context.Background(), Options{File: file, Config: cfg})
		if err != nil || sum.Status != walkie.StatusMaxRounds {
			t.Fatalf("%+v, %v", sum, err)
		}
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range d.Entries {
		if e.Kind != walkie.KindTurn {
			notes = append(notes, string(e.Body))
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "ended at its round cap of 1, after 2 turns") ||
		!strings.Contains(notes[0], "Signed off on the proposal as it stands: b.") || !strings.Contains(notes[0], "walkie extend t.walkie.md --rounds N") {
		t.Fatalf("closing notes: %q", notes)
	}
	// Extended and ended again: a new note for the new ending, and the
	// extension is gone with it.
	if _, err := walkie.Extend(file, 1); err != nil {
		t.Fatal(err)
	}
	if sum, err := Run(context.Background(), Options{File: file, Config: cfg}); err != nil || sum.Status != walkie.StatusMaxRounds || sum.Turns != 4 {
		t.Fatalf("after extend: %+v, %v", sum, err)
	}
	d, _ = walkie.Load(file)
	if n := len(d.Entries); n != 6 || d.Entries[n-1].Kind == walkie.KindTurn || !strings.Contains(string(d.Entries[n-1].Body), "round cap of 2, after 4 turns") {
		t.Errorf("entries after the second ending: %d, last %q", n, d.Entries[n-1].Body)
	}
	if st := loadState(t, file); st.ExtraRounds != 0 {
		t.Errorf("extension after the debate ended at its extended cap: %d", st.ExtraRounds)
	}
}

// An attempt whose cost is unknown is not free while a budget is set: it
// counts as the costliest known one, and at least a tenth of the budget
// (issue 13: such turns ran a debate far past its budget).
func TestRunBudgetCountsUnknownCosts(t *testing.T) {
	// a reports $0.30 like claude does; b reports nothing at all.
	priced := shAgent(`echo ''{"type":"result","total_cost_usd":0.3,"usage":{"input_tokens":1,"output_tokens":1}}''`)
	file, cfg := testDebate(t, 10, map[string]string{"a": priced, "b": shAgent("")}, "a", "b")
	a := cfg.Agents["a"]
	a.Usage = "claude-json"
	cfg.Agents["a"] = a
	cfg.BudgetUSD = 1
	var ev events
	sum, err := Run(context.Background(), Options{File: file, Config: cfg, CheckPricing: true, Observe: ev.observe})
	if err != nil {
		t.Fatal(err)
	}
	// Before each turn: $0, $0.30, $0.30 + one unknown at $0.30, $0.60 +
	// $0.30, then $0.60 + two unknown at $0.30 = $1.20: over the $1 budget
	// after 4 turns (counted as free, it would have run all 20).
	if sum.Status != walkie.StatusOverBudget || sum.Turns != 4 || sum.UnknownCosts != 2 || sum.CostUSD < 0.6-1e-9 || sum.CostUSD > 0.6+1e-9 {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(sum.Reason, "spent $0.60 of a $1.00 budget, counting 2 attempts of unknown cost as $0.30 each") {
		t.Errorf("reason %q", sum.Reason)
	}
	if sum.UnknownUSD < 0.6-1e-9 || sum.UnknownUSD > 0.6+1e-9 || sum.BudgetUSD != 1 {
		t.Errorf("estimate %v of budget %v", sum.UnknownUSD, sum.BudgetUSD)
	}
	notes := ev.of(EventNote)
	if len(notes) != 1 || notes[0].Agent != "b" || !strings.Contains(notes[0].Line, "b reports no usage") {
		t.Errorf("notes before the first turn: %+v", notes)
	}
	if started := ev.of(EventTurnStarted); len(started) == 0 || len(notes) == 0 {
		t.Fatal("no turn or no note")
	}
	d, _ := walkie.Load(file)
	if last := d.Entries[len(d.Entries)-1]; last.Kind == walkie.KindTurn || !strings.Contains(string(last.Body), "stopped over its budget") {
		t.Errorf("no closing note for the budget: %q", last.Body)
	}
}

// NoRetry: one attempt, and its failure leaves the debate open for the
// caller to retry; a never-retried outcome still fails it.
func ruleAuth() config.Rule {
	return config.Rule{Match: "Not logged in", Outcome: "auth", Detail: "log in"}
}

func TestRunNoRetry(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": "[sh, -c, 'exit 3']", "b": shAgent("")}, "a", "b")
	for i := 1; i <= 3; i++ {
		sum, err := Run(context.Background(), Options{File: file, Config: cfg, Once: true, NoRetry: true})
		if err != nil || len(sum.Attempts) != 1 || sum.Status != walkie.StatusOpen {
			t.Fatalf("run %d: %+v, %v", i, sum, err)
		}
	}
	if st := loadState(t, file); st.Status != "" || st.Attempts["1"] != 3 {
		t.Errorf("state %+v", st)
	}
	file, cfg = testDebate(t, 2, map[string]string{"a": "[sh, -c, 'echo Not logged in; exit 1']", "b": shAgent("")}, "a", "b")
	a := cfg.Agents["a"]
	a.Rules = append(a.Rules, ruleAuth())
	cfg.Agents["a"] = a
	if sum, err := Run(context.Background(), Options{File: file, Config: cfg, Once: true, NoRetry: true}); err != nil || sum.Status != walkie.StatusFailed {
		t.Fatalf("auth with NoRetry: %+v, %v", sum, err)
	}
}
