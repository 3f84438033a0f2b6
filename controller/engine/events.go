package engine

import "time"

// EventKind names what happened.
type EventKind string

// Event kinds, in the order a turn produces them.
const (
	EventTurnStarted  EventKind = "turn-started"
	EventOutput       EventKind = "output" // the latest line of the running agent's output
	EventTurnRecorded EventKind = "turn-recorded"
	EventDebateEnded  EventKind = "debate-ended"
	EventNote         EventKind = "note" // something the person running walkie should know
	// EventEscalation: the supervisor must look (an invoked party did not
	// answer after its retry). Line says why.
	EventEscalation EventKind = "escalation"
	// EventEntry: a copy of a recorded entry for the supervisor. Line is
	// the entry's body, Started its time; Turn is 0 for supervisor notes.
	EventEntry EventKind = "entry"
	// EventWaiting: the next turn is a party's that walkie does not run
	// (a person, a live session): Agent, Turn and Round name it, Line says
	// how to post it.
	EventWaiting EventKind = "waiting"
)

// Event is what the controller tells its observer (a progress display, a
// notifier). Observers must return quickly, and must be safe to call from
// several goroutines at once: a round table's reviewers run in parallel.
type Event struct {
	Kind    EventKind
	Debate  string // debate id
	File    string
	Turn    int
	Round   int
	Agent   string
	Attempt int
	Started time.Time
	Line    string      // EventOutput: latest output line; EventNote: the note
	Record  *TurnRecord // EventTurnRecorded
	Status  string      // EventDebateEnded: the final status; EventTurnRecorded: the status after it
}
