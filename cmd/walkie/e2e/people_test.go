package e2e

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// waitFor waits until the running command's stderr holds s n times.
func (p *proc) waitFor(s string, n int, limit time.Duration) {
	p.d.t.Helper()
	deadline := time.Now().Add(limit)
	for bytes.Count(p.stderrSoFar(), []byte(s)) < n {
		select {
		case <-p.done:
			p.d.t.Fatalf("walkie exited %d before saying %q %d times\nstderr:\n%s", p.res.code, s, n, p.res.stderr)
		default:
		}
		if time.Now().After(deadline) {
			p.d.t.Fatalf("after %s: %q not said %d times\nstderr:\n%s", limit, s, n, p.stderrSoFar())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// post posts a person's turn.
func (d *debate) post(from, body string, sign bool) {
	d.t.Helper()
	d.write("post.md", body+"\n")
	args := []string{"post", d.name, "--from", from, "--body-file", "post.md"}
	if sign {
		args = append(args, "--sign")
	}
	d.mustRun(0, args...)
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
			p := d.start("auto", d.name, "--approve", "--agents", strings.Join(order, ","), "--log-format", "json")
			want := "waiting for alice: walkie post " + d.path(d.name) + " --from alice"
			p.waitFor(want, 1, 20*time.Second)
			d.post("alice", "My view.", false)
			p.waitFor(want, 2, 20*time.Second)
			d.post("alice", "Agreed.", true)
			r := p.wait(30 * time.Second)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
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
	d.mustRun(0, "turn", d.name, "--approve")
	d.wantOutcomes(d.turns(), "accepted")
	r := d.mustRun(0, "watch", "--once", d.name)
	if !strings.Contains(r.stdout, "waiting: waiting for alice: walkie post") {
		t.Errorf("watch --once:\n%s\n%s", r.stdout, r.stderr)
	}
	d.noProcessesLeft()
}
