package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// In a channel of review threads the daemon runs only the thread the
// channel's doorbell names as open; a thread put there by hand waits,
// and says why on the page.
func TestDaemonRunsOnlyTheChannelsOpenThread(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	channel := filepath.Join(dir, "reviews")
	o := walkie.InitOptions{Participants: []string{"fa", "fb"}, MaxRounds: 2, Approve: true,
		Briefing: []byte("Review the change. Sign off when it is right.\n")}
	open, err := walkie.NewThread(channel, "open", o)
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(channel, "stray.walkie.md")
	o.Typed = true
	if err := walkie.Init(stray, o); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, []string{fakeAgent("fa", "--sign"), fakeAgent("fb", "--sign")}, "")
	d := startDaemon(t, Options{Dir: dir, Config: cfg})
	defer d.stop(t)
	sessiontest.WaitFor(t, 20*time.Second, "the open thread converged", func() bool {
		return status(t, open) == walkie.StatusConverged && settled(t, open)
	})
	sessiontest.WaitFor(t, 5*time.Second, "the stray thread shown waiting", func() bool {
		for _, v := range d.Debates() {
			if v.File == stray {
				return v.Waiting == "not the open thread of its channel"
			}
		}
		return false
	})
	if recs := turnLog(t, stray); len(recs) != 0 {
		t.Fatalf("the stray thread ran %d attempts", len(recs))
	}
	checkRecord(t, open)
}
