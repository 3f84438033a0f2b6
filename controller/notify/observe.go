package notify

import (
	"fmt"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// FromController turns a controller event into the events sinks receive:
// none for output lines and notes, two for a debate that failed (its end,
// and an escalation, since retries were spent and a person must look).
func FromController(e controller.Event) []Event {
	ev := Event{Debate: e.Debate, File: e.File, Turn: e.Turn, Round: e.Round, Agent: e.Agent, Attempt: e.Attempt, At: time.Now().UTC()}
	switch e.Kind {
	case controller.EventTurnStarted:
		ev.Kind = KindTurnStarted
		if !e.Started.IsZero() {
			ev.At = e.Started
		}
	case controller.EventTurnRecorded:
		ev.Kind, ev.Status = KindTurnRecorded, e.Status
		if r := e.Record; r != nil {
			ev.Outcome, ev.Detail, ev.DurationMS, ev.Signed = string(r.Outcome), r.Detail, r.DurationMS, r.Signed
			if r.Usage != nil {
				ev.CostUSD = r.Usage.CostUSD
			}
		}
	case controller.EventDebateEnded:
		ev.Kind, ev.Status, ev.Reason = KindDebateEnded, e.Status, e.Line
		if e.Status == walkie.StatusFailed {
			esc := ev
			esc.Kind, esc.Reason = KindEscalation, fmt.Sprintf("the debate failed: %s", e.Line)
			return []Event{ev, esc}
		}
	case controller.EventEscalation:
		ev.Kind, ev.Reason = KindEscalation, e.Line
	case controller.EventWaiting:
		ev.Kind, ev.Reason = KindWaiting, e.Line
	case controller.EventEntry:
		ev.Kind, ev.Text = KindEntry, e.Line
		if !e.Started.IsZero() {
			ev.At = e.Started
		}
	default:
		return nil
	}
	return []Event{ev}
}

// Observer returns a controller observer that queues every event worth
// sending with n. It never blocks.
func Observer(n *Notifier) func(controller.Event) {
	return func(e controller.Event) {
		for _, ev := range FromController(e) {
			n.Notify(ev)
		}
	}
}
