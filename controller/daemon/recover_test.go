package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/recovertest"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// A controller killed after stamping a turn and before logging it leaves
// the attempt running in state.json. The daemon finishes it even when
// nothing is left to run: when that turn ended the debate (its round cap),
// and when the next party is a person, whom nobody invokes. Before, both
// stayed unlogged (and shown as running) for good: the daemon only ever
// recovered a debate on its way to running the next turn.
func TestDaemonRecoversAttemptsLeftByADeadController(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cfg := testConfig(t, []string{fakeAgent("fa"), fakeAgent("fb")}, "")
	ended := newDebate(t, dir, "ended", 1, "fa", "fb")
	postAs(t, ended, "fa")
	recovertest.StampedNotLogged(t, ended, "fb", "The last turn of the last round.")
	waiting := newDebate(t, dir, "waiting", 2, "fa", "alice")
	recovertest.StampedNotLogged(t, waiting, "fa", "Over to you, alice.")

	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	for _, c := range []struct {
		file string
		turn int
	}{{ended, 2}, {waiting, 1}} {
		var recs []controller.TurnRecord
		sessiontest.WaitFor(t, 10*time.Second, filepath.Base(c.file)+"'s attempt recovered", func() bool {
			st, err := walkie.LoadState(walkie.StateDir(c.file, strings.TrimSuffix(filepath.Base(c.file), ".walkie.md")))
			recs = turnLog(t, c.file)
			return err == nil && st.Running == nil && len(recs) > 0
		})
		if len(recs) != 1 {
			t.Errorf("%s: %d attempts logged, want the recovered one", c.file, len(recs))
		}
		if r := recs[len(recs)-1]; r.Turn != c.turn || r.Outcome != walkie.OutcomeAccepted || !strings.Contains(r.Detail, "found on restart") {
			t.Errorf("%s: last attempt logged %+v", c.file, r)
		}
		if d, err := walkie.Load(c.file); err != nil {
			t.Error(err)
		} else if err := d.Verify(); err != nil {
			t.Errorf("%s does not verify: %v", c.file, err)
		}
	}
	if s := status(t, ended); s != walkie.StatusMaxRounds {
		t.Errorf("the ended debate is %s", s)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the person's debate shown waiting", func() bool {
		v := viewOf(d.Daemon, waiting)
		return v.Running == nil && strings.Contains(v.Waiting, "waiting for alice")
	})
}
