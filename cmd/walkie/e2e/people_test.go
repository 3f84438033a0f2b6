package e2e

import (
	"strings"
	"testing"
	"time"
)

// post posts a person's turn.
func (d *debate) post(from, body string, sign bool) {
	d.T.Helper()
	d.write("post.md", body+"\n")
	args := []string{"post", d.name, "--from", from, "--body-file", "post.md"}
	if sign {
		args = append(args, "--sign")
	}
	d.MustRun(0, args...)
}

// walkie auto on a debate with a person (issue 13: it exited 2 at once
// with the person first, and after the agent's turn with the agent
// first): the agent's turns run, and at the person's walkie waits for the
// post, saying how to make it, and goes on when it lands.
func TestAutoWithAPerson(t *testing.T) {
	for _, order := range [][]string{{"alice", "b"}, {"b", "alice"}} {
		t.Run(strings.Join(order, ","), func(t *testing.T) {
			d := newDebate(t, setup{participants: order, people: []string{"alice"}, maxRounds: 3,
				scripts: map[string]string{"b": "sign_from: 2"}})
			p := d.Start("auto", d.name, "--approve", "--agents", strings.Join(order, ","), "--log-format", "json")
			want := "waiting for alice: walkie post " + d.path(d.name) + " --from alice"
			must(t, p.WaitSaid(want, 1, 20*time.Second))
			d.post("alice", "My view.", false)
			must(t, p.WaitSaid(want, 2, 20*time.Second))
			d.post("alice", "Agreed.", true)
			r := p.Wait(30 * time.Second)
			if r.Code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
			}
			for _, rec := range d.turns() {
				if rec.Agent != "b" || rec.Outcome != "accepted" {
					t.Errorf("%s", rec)
				}
			}
			if d.status() != "converged" {
				t.Errorf("status %s", d.status())
			}
			d.noProcessesLeft()
		})
	}
}

// walkie turn stops after its turn (issue 13: exit 2 when the next party
// had no command), and the cron tick reports the person's turn as
// waiting, not as an error.
func TestTurnThenAPerson(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"b", "alice"}, people: []string{"alice"}})
	d.MustRun(0, "turn", d.name, "--approve")
	d.wantOutcomes(d.turns(), "accepted")
	r := d.MustRun(0, "watch", "--once", d.name)
	if !strings.Contains(r.Stdout, "waiting: waiting for alice: walkie post") {
		t.Errorf("watch --once:\n%s\n%s", r.Stdout, r.Stderr)
	}
	d.noProcessesLeft()
}
