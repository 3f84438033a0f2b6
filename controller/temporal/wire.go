package temporal

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/session"
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
	// ActTable runs a round table's own step at home (the phases, a
	// round's reviews); each session of it is a SessionWorkflow, whose
	// activity, ActFile, runs on the agent's queue.
	ActTable        = "walkie.Table"
	ActFile         = "walkie.File"
	SessionWorkflow = "walkie.Session"

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
	// ErrTypeTooLarge: what a turn left cannot travel (a worktree's
	// commits over MaxBundleBytes).
	ErrTypeTooLarge = "too-large"
)

// Protocol is the version of what a home and its workers say to each
// other: the activities, their inputs and results. Each side sends it,
// with its build, at the start of every activity (Hello), and refuses
// the other's when either differs.
const Protocol = 2

// Hello opens every activity's input (the home's) and result (the
// worker's): which walkie speaks, and which blob store it reaches.
type Hello struct {
	Protocol int
	// Build is the walkie version (walkie --version's first line).
	Build string
	// Store is the id of the blob store the home keeps what travels by
	// reference in ("" on a worker's result).
	Store string `json:",omitempty"`
}

func (h Hello) String() string { return fmt.Sprintf("walkie %s (protocol %d)", h.Build, h.Protocol) }

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
	// Table: a round table's own step comes instead of the turn
	// (ActTable runs it at home); Ref names the turn it stands for.
	Table bool `json:",omitempty"`
}

// BeginInput begins the planned attempt.
type BeginInput struct {
	File string
	Ref  controller.TurnRef
	// Implementer: a round table's implementer turn, whose workspace
	// travels with it.
	Implementer bool `json:",omitempty"`
}

// Began is a begun attempt: its start and the record the agent starts
// from; or Stale, when the record moved on since Decide and the workflow
// must decide again.
type Began struct {
	Started time.Time
	Record  Blob
	Stale   bool
	// Implementer, for a round table's implementer turn, is the workspace
	// and the phase files, packed (ImplementerTurn.Files).
	Implementer *Blob `json:",omitempty"`
	// Worktree, for a turn that runs in one, is where it starts.
	Worktree *controller.Worktree
}

// TurnInput is everything a worker needs to run one attempt at a turn.
type TurnInput struct {
	Hello
	Debate string // the debate's id
	// FileName is the record's base name; the worker's copy keeps it.
	FileName string
	// Record is the record as it stood when the attempt began.
	Record Blob
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
	Timing
	// Implementer, for a round table's implementer turn, replaces the
	// prompt above with the round table's, and brings the workspace.
	Implementer *ImplementerTurn `json:",omitempty"`
}

// Timing is the home's timing for a session: its config's, whatever the
// worker's says.
type Timing struct {
	Timeout, Stall   time.Duration
	Grace, KillGrace time.Duration
}

// ImplementerTurn is what a round table's implementer turn adds: its
// prompt (the home's implementer template, and its data with the home's
// paths, which the worker replaces with its copies'), and the workspace
// and approved phase files, packed (Files: workspace/PATH and
// phases/KIND.md).
type ImplementerTurn struct {
	Template string
	Data     config.ImplementerPromptData
	Files    Blob
	// Workspace is where the workspace lies relative to the record's
	// directory ("." for that directory itself), "" when it lies outside:
	// the worker's copies keep the layout, so paths the briefing and the
	// turns mention read the same.
	Workspace string
}

// TurnResult is what a worker sends back: the agent's version of the file,
// how the session went, and its transcripts.
type TurnResult struct {
	Hello
	// After is the file as the agent left it; nil when it was gone.
	After *Blob
	// Commits, for a turn in a worktree, is what the session committed
	// there: its branch's head; the bundle of its commits is Bundle.
	Commits *controller.Commits
	Bundle  *Blob `json:",omitempty"`
	// Session is the engine's result; its transcript paths are the
	// worker's.
	Session engine.Result
	// Raw and Text are the transcripts, whole (each at most the agent's
	// transcript_cap).
	Raw, Text Blob
	// Kept is the attempt's directory on the worker.
	Kept   string
	Worker string // the worker's identity
	// Delivery is the activity's attempt: above 1 when the workers that
	// took the turn before were lost.
	Delivery int32
	// Workspace, for a round table's implementer, is what the session
	// changed in its copy of the workspace.
	Workspace *WorkspaceChanges `json:",omitempty"`
}

// WorkspaceChanges is what a session changed in a copy of a workspace:
// the added and modified files, packed, and the paths it removed.
type WorkspaceChanges struct {
	Changed []tree.Change
	Files   Blob
}

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

// TableInput runs a round table's own step at home (Step.Table).
type TableInput struct {
	File string
	Ref  controller.TurnRef
}

// Tabled is how the step went: the attempts it recorded.
type Tabled struct {
	Attempts int
}

// SessionInput starts the workflow of one of a round table's own
// sessions (a phase's, a reviewer's): its file attempt, on the agent's
// queue, with the activity's timeouts.
type SessionInput struct {
	Queue                   string
	StartToClose, Heartbeat time.Duration
	File                    FileInput
}

// FileInput is one file attempt for a worker to run (engine.FileAttempt,
// as it travels): the home made and filled its sandbox, and sends it
// packed, with the session's job; every path in the job that lies in the
// home's sandbox (Home) the worker moves into its own.
type FileInput struct {
	Hello
	Debate string
	Role   string // reviewer, or the phase's kind
	// Session is the role the session runs in (config.RoleReviewer,
	// config.RolePhase): its tools and its sandbox follow from it; Reach
	// is what it reaches, named in the home's sandbox.
	Session                         string
	Reach                           session.Reach
	Turn, Round, Attempt            int
	Agent                           string // the configured agent
	Sandbox                         Blob
	Home                            string // the sandbox's path at home
	Prompt, Dir, Result, Done, Keep string
	Vars                            config.Vars
	Env                             []string
	Timing
	// The file: its check's kind (roundtable.FileCheck), how much of it is
	// read, the name it was given, the words of its outcomes, and the
	// directory of the sandbox whose changes are listed.
	Kind  string
	Limit int
	Name  string
	Words engine.FileWords
	Watch string
}

// FileOutput is how a worker's file attempt went: the session, the file
// as far as it was read, what changed under Watch, the transcripts.
type FileOutput struct {
	Hello
	Session engine.Result
	File    *Blob // nil when nothing could be read
	Size    int64 // the file's whole size
	Wrote   bool
	Bad     string // why the file is of no use ("" when usable or missing)
	Changed []tree.Change
	Raw     Blob
	Text    Blob
	Worker  string
}

// SessionOutput is how a session's workflow ended: the worker's result,
// or why none came (Lost), or nothing when a halt came before any worker
// took it (Halted).
type SessionOutput struct {
	Result      *FileOutput
	Lost        string
	LostTimeout bool
	Halted      bool
	At          time.Time
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

// Blob is a file that travels: inside the payload when it is small, else
// by reference to the home's blob store (package blob), so what goes
// between a home and its workers is bounded by walkie's own bounds
// (docs/format.md), not by Temporal's payload limit.
type Blob struct {
	Data []byte    `json:",omitempty"`
	Ref  *blob.Ref `json:",omitempty"`
}

// InlineMax is the most a Blob carries inside a payload: a result holds
// a few (the agent's version, two transcripts), well under Temporal's 2
// MiB.
const InlineMax = 128 << 10

// UnmarshalJSON also reads the bytes a field of a Blob's place held
// before it was one (protocol 1, base64 in a JSON string): the histories
// of workflows that ran then replay.
func (b *Blob) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &b.Data)
	}
	type plain Blob
	return json.Unmarshal(data, (*plain)(b))
}

// Size is how many bytes the blob carries.
func (b Blob) Size() int64 {
	if b.Ref != nil {
		return b.Ref.Size
	}
	return int64(len(b.Data))
}
