package temporal

import (
	"fmt"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// The names registered with Temporal. They are the contract between the
// home, the workers and the workflow histories already recorded: renaming
// one strands every running debate.
const (
	WorkflowName = "walkie.Debate"

	ActDecide  = "walkie.Decide"
	ActBegin   = "walkie.Begin"
	ActTurn    = "walkie.Turn"
	ActSettle  = "walkie.Settle"
	ActNotify  = "walkie.Notify"
	ActAbandon = "walkie.Abandon"

	// SignalHalt cancels the running turn (walkie halt); the worker ends
	// the session and the attempt is recorded as halted.
	SignalHalt = "halt"
	// SignalExtend and SignalWake start the workflow again when it has
	// ended (SignalWithStart): the debate was extended past its cap, or
	// it became runnable again (a person posted, the config changed).
	SignalExtend = "extend"
	SignalWake   = "wake"
)

// Error types that cross the activity boundary.
const (
	// ErrTypeBadInput: the debate or a configuration must change first
	// (the record does not verify, the worker cannot start the agent).
	ErrTypeBadInput = "bad-input"
	// ErrTypeTooLarge: the record or the agent's version of it is more
	// than a Temporal payload carries.
	ErrTypeTooLarge = "too-large"
)

// MaxRecordBytes bounds the record and the agent's version of it: both
// travel in one activity payload, which Temporal caps at 2 MiB by default.
const MaxRecordBytes = 1536 << 10

// QueuePrefix begins every agent's task queue name (AgentQueue).
const QueuePrefix = "walkie-agent-"

// AgentQueue is the task queue of the workers that run agent: the
// override in queues if there is one, else QueuePrefix+agent.
func AgentQueue(agent string, queues map[string]string) string {
	if q := queues[agent]; q != "" {
		return q
	}
	return QueuePrefix + agent
}

// ParseQueues reads AGENT=QUEUE overrides (the --queue flags).
func ParseQueues(specs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range specs {
		agent, queue, ok := strings.Cut(s, "=")
		if !ok || agent == "" || queue == "" {
			return nil, fmt.Errorf("--queue %q: write AGENT=QUEUE, e.g. --queue codex=walkie-codex-gpu", s)
		}
		out[agent] = queue
	}
	return out, nil
}

// DebateInput starts a debate's workflow.
type DebateInput struct {
	// File is the record's absolute path on the home machine.
	File string
}

// Ended is how a workflow run ended: the debate ended, or it cannot go on
// until something changes (a person's turn, another controller).
type Ended struct {
	Action string // controller.Action: end, wait, held, debounce
	Status string
	Why    string
	Turns  int // turns this run settled
}

// Plan is the home's decision: what Decide returns.
type Plan struct {
	Action string // controller.Action
	Why    string
	Status string
	Ref    controller.TurnRef
	// Queue is the task queue of the workers that run the turn.
	Queue string
	// Turn is the turn activity's input without the record, which Begin
	// adds.
	Turn TurnInput
	// StartToClose and Heartbeat are the turn activity's timeouts.
	StartToClose, Heartbeat time.Duration
}

// BeginInput begins the planned attempt.
type BeginInput struct {
	File string
	Ref  controller.TurnRef
}

// Began is a begun attempt: its start and the record the agent starts
// from; or Stale, when the record moved on since Decide and the workflow
// must decide again.
type Began struct {
	Started time.Time
	Record  []byte
	Stale   bool
	// Worktree, for a turn that runs in one, is where it starts.
	Worktree *controller.Worktree
}

// TurnInput is everything a worker needs to run one attempt at a turn.
type TurnInput struct {
	Debate string // the debate's id
	// FileName is the record's base name; the worker's copy keeps it.
	FileName string
	// Record is the record as it stood when the attempt began.
	Record []byte
	// Worktree, for a debate with workspace: worktree (or an agent with
	// it), is the worktree the session runs in, which the worker makes in
	// its clone of the repository (its --repo).
	Worktree             *controller.Worktree
	Turn, Round, Attempt int
	Participant          string
	// Agent is the configured agent that plays the turn, looked up in the
	// worker's config: how to run it there (command, environment, HOME,
	// screen rules, usage) is the worker's.
	Agent string
	// The home's policy for the session: its pinned prompt template and
	// the data that fills it (File is the worker's copy), and its timing.
	PromptName, PromptSource string
	Prompt                   config.PromptData
	Timeout, Stall           time.Duration
	Grace, KillGrace         time.Duration
}

// TurnResult is what a worker sends back: the agent's version of the file,
// how the session went, and its transcripts.
type TurnResult struct {
	// After is the file as the agent left it; nil when it was gone.
	After []byte
	// Commits, for a turn in a worktree, is what the session committed
	// there: its branch's head and the bundle of its commits.
	Commits *controller.Commits
	// Session is the engine's result; its transcript paths are the
	// worker's.
	Session engine.Result
	// Raw and Text are the transcripts, cut to TranscriptCap around the
	// middle when longer; the whole of them stays on the worker (Kept).
	Raw, Text         []byte
	RawSize, TextSize int64
	Kept              string
	Worker            string // the worker's identity
	// Delivery is the activity's attempt: above 1 when the workers that
	// took the turn before were lost.
	Delivery int32
}

// TranscriptCap is how much of each transcript travels home.
const TranscriptCap = 256 << 10

// SettleInput settles the running attempt with a worker's result, or
// records that no worker could deliver one (Lost).
type SettleInput struct {
	File   string
	Ref    controller.TurnRef
	Result *TurnResult
	// Lost, when Result is nil, says why no result came: the workers
	// running it were lost, or timed out.
	Lost        string
	LostTimeout bool // the start-to-close timeout passed (else: lost)
	// At is when the workflow gave up on the attempt: a lost attempt's
	// end, the same however often Settle is retried.
	At time.Time
}

// Settled is the recorded attempt.
type Settled struct {
	Record controller.TurnRecord
	// Stale: the attempt was no longer running and nothing was recorded.
	Stale bool
}

// NotifyInput tells the home's observers about a recorded attempt.
type NotifyInput struct {
	File   string
	Record controller.TurnRecord
}

// AbandonInput clears a running attempt no session ran for.
type AbandonInput struct {
	File  string
	Ref   controller.TurnRef
	Cause string
}

// Progress is a turn activity's heartbeat detail.
type Progress struct {
	Worker string
	Bytes  int64  // output so far
	Line   string // the latest output line
}

// nonRetryable are the error types the turn activity's retry policy never
// retries: what no other attempt or worker can fix, by walkie's own rule.
func nonRetryable() []string {
	out := []string{ErrTypeBadInput, ErrTypeTooLarge}
	for _, o := range walkie.Outcomes {
		if !o.Retryable() {
			out = append(out, string(o))
		}
	}
	return out
}
