package notify

import (
	"testing"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// A review thread that closes says who closed it, with what; it is not
// "debate ended closed (…)", and not an escalation.
func TestClosedThreadSummary(t *testing.T) {
	evs := FromController(controller.Event{Kind: controller.EventDebateEnded, Debate: "login-fix", Status: walkie.StatusClosed,
		Line: "by claude in turn 5: Merged as 8d41e07."})
	if len(evs) != 1 {
		t.Fatalf("events %+v", evs)
	}
	if got, want := evs[0].Summary(), "login-fix: thread closed by claude in turn 5: Merged as 8d41e07."; got != want {
		t.Fatalf("summary %q, want %q", got, want)
	}
}
