package walkie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Debate statuses.
const (
	StatusOpen       = "open"
	StatusConverged  = "converged"
	StatusMaxRounds  = "max-rounds"
	StatusDeadlocked = "deadlocked"
	StatusHalted     = "halted"
	StatusOverBudget = "over-budget"
	StatusFailed     = "failed"
	// StatusClosed: a participant closed the review thread (an entry of
	// type close); its text is the outcome. Not a convergence: nobody
	// need have agreed to anything.
	StatusClosed = "closed"
)

// State is a debate's mutable control state: the fold of its log
// (.walkie/ID/log.jsonl, log.go), never part of the record. The
// controller reads it again before every turn, so `walkie halt` and
// `walkie extend` act without a restart. Its JSON field names are the
// log's: a line sets them.
type State struct {
	// Status holds a status the record cannot show by itself: halted,
	// failed, over-budget or deadlocked. Empty means "derive it".
	Status      string     `json:"status,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	HaltedAt    *time.Time `json:"halted_at,omitempty"`
	ExtraRounds int        `json:"extra_rounds,omitempty"`
	// EndedCap is the round cap the debate held when it last ended, its
	// extension included: the extension ends with the debate (Settle),
	// and the cap a person reads of an ended debate is the one it had.
	EndedCap   int            `json:"ended_round_cap,omitempty"`
	Attempts   map[string]int `json:"attempts,omitempty"` // failed attempts per turn number, for retries
	LastSeq    int            `json:"last_seq"`           // the record as walkie last wrote it: a shorter file was truncated
	LastHash   string         `json:"last_hash,omitempty"`
	HandledSeq int            `json:"handled_seq,omitempty"` // last sequence a watcher or daemon has acted on
	// CopySupervisor switches the supervisor's copy of every entry on or
	// off for this debate; nil follows the config's notify.copy_supervisor.
	CopySupervisor *bool `json:"copy_supervisor,omitempty"`
	// CostUSD is what the attempts so far are known to have cost.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// UnknownCosts counts the attempts whose cost is not (wholly) known:
	// the agent reports no usage, its CLI was ended before it did, or its
	// model is not in the pricing table. A budget estimates them.
	UnknownCosts int `json:"unknown_costs,omitempty"`
	// MaxCostUSD is the most an attempt whose cost is known has cost:
	// what a budget assumes of an unknown one, at least.
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// ClosedAt is the number of turns when walkie last wrote a closing
	// note into the record (a debate that ended at a limit), so it is
	// written once per ending.
	ClosedAt  int          `json:"closed_at_turns,omitempty"`
	Running   *Attempt     `json:"running,omitempty"` // a controller's attempt in progress
	Watch     *WatchMemory `json:"watch,omitempty"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// Attempt is a turn attempt a controller has started and not yet recorded.
// After a crash it tells the next controller what to clean up.
type Attempt struct {
	Turn          int       `json:"turn"`
	Agent         string    `json:"agent"`
	Number        int       `json:"attempt"`
	Started       time.Time `json:"started"`
	ControllerPID int       `json:"controller_pid"`
	// SessionPID and SessionStart are the session's process as an older
	// walkie recorded it; walkie now writes a SessionNote instead.
	SessionPID   int    `json:"session_pid,omitempty"`
	SessionStart uint64 `json:"session_start_ticks,omitempty"`
	Snapshot     string `json:"snapshot"`          // copy of the file before the attempt
	Size         int64  `json:"size"`              // file size before the attempt
	Seq          int    `json:"seq"`               // last sequence before the attempt
	Hash         string `json:"hash,omitempty"`    // chain hash before the attempt
	Session      string `json:"session,omitempty"` // the session's id (its WALKIE_SESSION), recorded before it starts
	// Worktree is the git worktree the session runs in (workspace:
	// worktree), recorded before it is made, with the repository it
	// belongs to: like the session, it is removed by whoever finds the
	// attempt interrupted.
	Worktree     string `json:"worktree,omitempty"`
	WorktreeRepo string `json:"worktree_repo,omitempty"`
}

// WatchMemory is what `walkie watch --once` remembers between ticks:
// InvokedAt is the last invocation for InvokedSeq (the retry's, once
// retried), FirstAt the first (zero in a state written before it was
// kept).
type WatchMemory struct {
	InvokedSeq int       `json:"invoked_seq"`
	InvokedAt  time.Time `json:"invoked_at"`
	FirstAt    time.Time `json:"first_at,omitzero"`
	Tries      int       `json:"tries"`
	Escalated  bool      `json:"escalated,omitempty"`
}

// Signal is the doorbell in .walkie/ID/signal.json, written only after the
// record's append is on disk.
type Signal struct {
	Seq       int         `json:"seq"`
	Turn      string      `json:"turn"` // whose turn it is next ("" when the debate has ended)
	NextTurn  int         `json:"next_turn"`
	Round     int         `json:"round"`
	Status    string      `json:"status"`
	LastEntry *EntryBrief `json:"last_entry,omitempty"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// EntryBrief names an entry without its text.
type EntryBrief struct {
	Seq    int       `json:"seq"`
	Turn   int       `json:"turn,omitempty"`
	Agent  string    `json:"agent"`
	Signed bool      `json:"signed,omitempty"`
	At     time.Time `json:"at"`
	// The entry's tags (format 3).
	Type    string   `json:"type,omitempty"`
	Verdict string   `json:"verdict,omitempty"`
	Refs    []string `json:"refs,omitempty"`
}

func (b *EntryBrief) setTags(t Tags) {
	b.Type, b.Verdict = t.Type, t.Verdict
	if len(t.Refs) > 0 {
		b.Refs = t.RefStrings()
	}
}

// StateDir is where a debate's side files live: .walkie/ID beside the file.
func StateDir(file, id string) string {
	return filepath.Join(filepath.Dir(file), ".walkie", id)
}

// DebateStatus combines the record's progress with the control state.
func DebateStatus(m *Meta, p Progress, s *State) string {
	switch {
	case p.Closed:
		return StatusClosed
	case p.Converged:
		return StatusConverged
	case s.Status != "":
		return s.Status
	case p.NextRound > m.MaxRounds+s.ExtraRounds:
		return StatusMaxRounds
	}
	return StatusOpen
}

// AddCost counts an attempt's cost: usd is what it is known to have cost,
// complete whether that is all of it. A figure that is no cost at all
// (negative, not a number, infinite) counts as unknown: nothing may lower
// what was spent, or turn the sum into NaN, which no budget stops.
func (s *State) AddCost(usd float64, complete bool) {
	if !(usd >= 0) || math.IsInf(usd, 1) {
		usd, complete = 0, false
	}
	s.CostUSD += usd
	if !complete {
		s.UnknownCosts++
		return
	}
	s.MaxCostUSD = max(s.MaxCostUSD, usd)
}

// Settle drops what lasts only while the debate is open, once a change
// has ended it (its status was before, and is now something else): the
// round extension (walkie extend) ends with the debate, however it ends
// (converged, at its cap, failed, over budget, deadlocked), so a debate
// reopened later starts from its own cap; the cap it held is kept as
// EndedCap for those who read it. A halt is a person's pause, not an end:
// the extension outlives it. One given while the debate stands stopped
// lasts until it ends again.
func (s *State) Settle(m *Meta, p Progress, before string) {
	switch now := DebateStatus(m, p, s); {
	case before == StatusOpen && now != StatusOpen && now != StatusHalted:
		s.EndedCap, s.ExtraRounds = RoundCap(m, s), 0
	case now == StatusOpen:
		s.EndedCap = 0
	}
}

// CapHeld is the round cap as a person reads it: RoundCap while the
// debate is open; for one that has ended, the cap it held at its end
// (EndedCap), and at least the rounds it ran.
func CapHeld(m *Meta, p Progress, s *State) int {
	c := RoundCap(m, s)
	if DebateStatus(m, p, s) != StatusOpen {
		c = max(c, s.EndedCap)
		if p.Turns > 0 {
			c = max(c, m.RoundOf(p.Turns))
		}
	}
	return c
}

// RoundCap is the debate's round cap including any extension.
func RoundCap(m *Meta, s *State) int { return m.MaxRounds + s.ExtraRounds }

// LoadSignal reads signal.json (nil when there is none yet).
func LoadSignal(dir string) (*Signal, error) {
	b, err := os.ReadFile(filepath.Join(dir, "signal.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Signal
	return &s, json.Unmarshal(b, &s)
}

// Ring writes the doorbell. Call it only after the record is synced.
func Ring(dir string, m *Meta, p Progress, s *State, last *EntryBrief) error {
	status := DebateStatus(m, p, s)
	if last != nil && last.Signed && m.IsRoundtable() {
		unsigned := *last // a round table has no sign-offs (see progress)
		unsigned.Signed = false
		last = &unsigned
	}
	sig := Signal{Seq: p.Seq, NextTurn: p.NextTurn, Round: p.NextRound, Status: status, LastEntry: last, UpdatedAt: time.Now().UTC()}
	if status == StatusOpen {
		sig.Turn = p.NextAgent
	}
	// Not synced at all: the doorbell only wakes processes that are
	// running, each of them copes with one it cannot read, and after a
	// machine crash Reconcile rings again one that is behind the record
	// or unreadable. That is one fsync less between two agents.
	if err := writeJSON(filepath.Join(dir, "signal.json"), sig, RewriteUnsynced); err != nil {
		return err
	}
	// After the thread's own doorbell: a channel's names its open thread.
	if err := ringChannel(dir, sig); err != nil {
		return fmt.Errorf("ring the channel's doorbell: %w", err)
	}
	return nil
}

// writeJSON writes v indented to path with write (one of the Replace or
// Rewrite functions).
func writeJSON(path string, v any, write func(string, []byte, os.FileMode) error) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return write(path, append(b, '\n'), 0o644)
}

// WriteFileAtomic replaces path with data: a synced temporary file renamed
// over it, then the directory synced, so a crash leaves the old or the new
// file, never half of one, and once it returns the new one.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := replace(path, data, perm, true); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// ReplaceUnsynced replaces path with data through a rename, syncing
// nothing: a process killed at any moment leaves the old file or the new
// one, whole, and only a machine crash can leave either, or an empty one.
// It is for files whose every reader copes with that.
func ReplaceUnsynced(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm, false)
}

// replace writes data to a temporary file beside path, syncs it when
// asked, and renames it over path.
func replace(path string, data []byte, perm os.FileMode, sync bool) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return fmt.Errorf("sync %s: %w", tmp, err)
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	renamed = true
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// LockRecord takes the record lock, waiting for it. Every write to the
// walkie file and to the log happens under it, and it is held only
// for the length of one write, never for a whole agent session.
func LockRecord(dir string) (*Lock, error) {
	return LockFile(context.Background(), filepath.Join(dir, "lock"))
}

// runLockPatience lets a prober (ControllerRunning) that holds the run lock
// for a moment let go before a controller is refused.
const runLockPatience = 200 * time.Millisecond

// TryRunLock takes the controller lock without waiting: one controller per
// debate. When another process holds it the error wraps ErrLocked and
// names its pid.
func TryRunLock(dir string) (*Lock, error) {
	l, err := TryLockFile(filepath.Join(dir, "run.lock"), runLockPatience)
	if err != nil {
		return nil, fmt.Errorf("controller lock: %w", err)
	}
	return l, nil
}

// ControllerRunning reports whether some process holds the controller lock.
func ControllerRunning(dir string) bool { return Held(filepath.Join(dir, "run.lock")) }
