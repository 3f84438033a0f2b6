package controller

import "github.com/walkie-sh/walkie/controller/engine"

// Every agent session is run by the engine, so the record of an attempt
// and the events of a run are its types; they are named here for the
// controller's callers.
type (
	// TurnRecord is one attempt, as .walkie/ID/log.jsonl records it.
	TurnRecord = engine.TurnRecord
	// Transcript names an attempt's transcripts.
	Transcript = engine.Transcript
	// Usage is what an attempt consumed.
	Usage = engine.Usage
	// CostKind is how much of an attempt's cost its usage's figure is.
	CostKind = engine.CostKind
	// Event is what the controller tells its observer.
	Event = engine.Event
	// EventKind names what happened.
	EventKind = engine.EventKind
)

// The kinds of events a run produces (see engine.Event).
const (
	EventTurnStarted  = engine.EventTurnStarted
	EventOutput       = engine.EventOutput
	EventTurnRecorded = engine.EventTurnRecorded
	EventDebateEnded  = engine.EventDebateEnded
	EventNote         = engine.EventNote
	EventEscalation   = engine.EventEscalation
	EventEntry        = engine.EventEntry
	EventWaiting      = engine.EventWaiting
)

// The kinds of cost (see engine.CostKind): ask Usage.CostKind, never the
// words of its CostSource.
const (
	CostReported  = engine.CostReported
	CostEstimated = engine.CostEstimated
	CostPartial   = engine.CostPartial
	CostUnknown   = engine.CostUnknown
)

// ErrBadInput marks errors in the debate or its configuration that no
// retry can fix: the record does not verify, an agent is not configured,
// its command cannot start.
var ErrBadInput = engine.ErrBadInput

// AcquireFunc is a session slot's wait (Options.Acquire; engine.AcquireFunc).
type AcquireFunc = engine.AcquireFunc

// ReadTurnLog reads every attempt recorded for a debate (state dir dir).
func ReadTurnLog(dir string) ([]TurnRecord, error) { return engine.ReadTurnLog(dir) }

func badInput(err error) error { return engine.BadInput(err) }
