package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Issue 31: per_agent_turns_per_hour bound only walkie serve; walkie auto
// ran as many sessions of the agent as it liked. Now two walkie auto runs
// and a walkie serve on the same machine count in one ledger: four
// debates want fa eight times, and fa starts exactly three sessions in
// the hour, whoever asks. Each run then says which limit holds it and
// until when, and waits.
func TestLimitsHoldAcrossAutoAndServe(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"fa", "fb"}, maxRounds: 3,
		scripts: map[string]string{"fa": "sign_from: 2", "fb": "sign_from: 2"},
		top:     "limits:\n  per_agent_turns_per_hour: {fa: 3}\n"})
	// The machine of this test: its own state directory, so its ledger
	// counts these runs alone.
	d.Env = append(d.Env, "XDG_STATE_HOME="+t.TempDir())
	if err := os.MkdirAll(d.path("served"), 0o755); err != nil {
		t.Fatal(err)
	}
	d.MustRun(0, "init", "b.walkie.md", "--agents", "fa,fb", "--max-rounds", "3", "--briefing", "briefing.md")
	for _, f := range []string{"served/c.walkie.md", "served/e.walkie.md"} {
		d.MustRun(0, "init", f, "--agents", "fa,fb", "--max-rounds", "3", "--briefing", "briefing.md")
		d.MustRun(0, "brief", "approve", f, "--yes")
	}
	stateDirs := []string{d.path(".walkie/d"), d.path(".walkie/b"), d.path("served/.walkie/c"), d.path("served/.walkie/e")}
	faStarts := func() int {
		n := 0
		for _, dir := range stateDirs {
			for _, r := range blackbox.ReadTurns(t, dir) {
				if r.Agent == "fa" {
					n++
				}
			}
		}
		return n
	}

	autos := []*blackbox.Proc{
		d.Start("auto", "d.walkie.md", "--approve", "--log-format", "json"),
		d.Start("auto", "b.walkie.md", "--approve", "--log-format", "json"),
	}
	serve := d.Start("serve", "--dir", "served", "--listen", "", "--log-format", "json")
	procs := append(autos, serve)
	defer func() {
		for _, p := range procs {
			if _, done := p.Exited(); !done {
				p.Kill()
			}
		}
	}()
	// Every run comes to a turn of fa's that the limit holds back.
	for _, p := range procs {
		if err := p.WaitSaid(`"msg":"held by a limit"`, 1, 90*time.Second); err != nil {
			t.Fatalf("%v\nfa sessions so far: %d", err, faStarts())
		}
	}
	// Nothing can start an fa session now; give a wrong one the time to.
	sessiontest.WaitFor(t, 30*time.Second, "the sessions already begun to be logged", func() bool { return faStarts() >= 3 })
	time.Sleep(time.Second)
	if n := faStarts(); n != 3 {
		t.Fatalf("fa started %d sessions in the hour across two autos and a serve, limit 3", n)
	}
	for _, p := range procs {
		if s := p.Stderr(); !strings.Contains(s, `"limit":"per_agent_turns_per_hour"`) || !strings.Contains(s, "held by per_agent_turns_per_hour: fa started 3 sessions in the last 1h0m0s (limit 3); next at ") {
			t.Errorf("a held run does not say which limit and until when:\n%s", blackbox.Tail(s, 5))
		}
	}
	// Held runs wait as their mode does, and end cleanly when told to:
	// an auto interrupted while it waits for a slot, as while it waits
	// for a person.
	for _, p := range autos {
		p.Signal(syscall.SIGINT)
		if r := p.Wait(30 * time.Second); r.Code != 130 {
			t.Errorf("auto interrupted while held: exit %d\n%s", r.Code, blackbox.Tail(r.Stderr, 5))
		}
	}
	serve.Signal(syscall.SIGTERM)
	if r := serve.Wait(60 * time.Second); r.Code != 0 {
		t.Errorf("serve: exit %d\n%s", r.Code, blackbox.Tail(r.Stderr, 5))
	}
	if n := faStarts(); n != 3 {
		t.Errorf("fa started %d sessions in all, limit 3", n)
	}
}
