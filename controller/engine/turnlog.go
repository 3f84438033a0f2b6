package engine

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// TurnRecord is one attempt at a turn, as the log records it: the
// attempt of its line in .walkie/ID/log.jsonl (docs/controller.md, "The
// attempts in the log").
type TurnRecord struct {
	Seq        int            `json:"seq,omitempty"` // sequence number of the recorded entry (accepted only)
	Turn       int            `json:"turn"`
	Round      int            `json:"round"`
	Agent      string         `json:"agent"`
	Role       string         `json:"role"`
	Attempt    int            `json:"attempt"`
	Started    time.Time      `json:"started"`
	Ended      time.Time      `json:"ended"`
	DurationMS int64          `json:"duration_ms"`
	ExitCode   *int           `json:"exit_code,omitempty"`
	Signal     string         `json:"signal,omitempty"`
	Outcome    walkie.Outcome `json:"outcome"`
	Detail     string         `json:"detail,omitempty"`
	EndedBy    string         `json:"ended_by,omitempty"` // "self" or "controller"
	Transcript Transcript     `json:"transcript"`
	Bytes      int64          `json:"output_bytes"`
	Usage      *Usage         `json:"usage,omitempty"`
	Signed     bool           `json:"signed"`
	Kept       string         `json:"kept,omitempty"`   // the agent's rejected version
	Worker     string         `json:"worker,omitempty"` // the remote worker that ran it (scale-out); "" for this machine
	// Branch is BRANCH@SHA, where the commits the session made in its own
	// git worktree came back (workspace: worktree); empty when it made none.
	Branch string `json:"branch,omitempty"`
	// SentBytes is what walkie gave an agent whose CLI reports no token
	// counts: its prompt and the record it was to read, in bytes.
	SentBytes int64 `json:"sent_bytes,omitempty"`
	// BudgetInputTokens is what the turn should have cost in input
	// tokens at the least, by its preset's measured fixed prompt, its
	// prompt and the record (config.Agent.TurnBudget), beside which the
	// usage the CLI reported reads; 0 when there is no such figure.
	BudgetInputTokens int64 `json:"budget_input_tokens,omitempty"`
	// Sandbox says how the session's boundary was applied and what its
	// output reported refused; nil when it ran without one.
	Sandbox *session.SandboxReport `json:"sandbox,omitempty"`
	// What produced the attempt.
	Provenance
}

// Transcript names an attempt's transcript files, relative to the state dir.
type Transcript struct {
	Raw  string `json:"raw,omitempty"`
	Text string `json:"text,omitempty"`
}

// Usage is what an attempt consumed, as far as the agent's output says.
type Usage struct {
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// CachedInputTokens is the part of InputTokens read from the
	// provider's prompt cache, as the CLI reported it.
	CachedInputTokens int64   `json:"cached_input_tokens,omitempty"`
	CostUSD           float64 `json:"cost_usd"`
	// Kind is how much of the attempt's cost CostUSD is: reported by the
	// CLI, estimated from the pricing table, partial, or unknown. Ask
	// CostKind, which also reads lines written before the field existed.
	Kind CostKind `json:"cost_kind,omitempty"`
	// CostSource says, for a person, where the figure came from:
	// "reported" by the CLI, "estimated (pricing as of DATE)" from the
	// config's table, or "unknown (why)" when neither was possible.
	CostSource string `json:"cost_source"`
	// Partial: the CLI was ended before its final figure; the tokens and
	// cost are what it streamed before, the rest is unknown. It is set
	// with Kind CostPartial.
	Partial bool `json:"partial,omitempty"`
}

// MarshalJSON writes times as RFC 3339 with milliseconds, in UTC.
func (r TurnRecord) MarshalJSON() ([]byte, error) {
	type plain TurnRecord
	return json.Marshal(struct {
		plain
		Started string `json:"started"`
		Ended   string `json:"ended"`
	}{plain(r), stamp(r.Started), stamp(r.Ended)})
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// AppendTurnLog logs an attempt that changes nothing in the debate's
// state, in one synced line of the log of the debate whose state
// directory is dir: an "ended" line with the record and no set. A
// debate's own attempts log their end with what it changes instead
// (LogAttempt, or the controller's line for a turn).
func AppendTurnLog(dir string, r TurnRecord) error {
	lock, err := walkie.LockRecord(dir)
	if err != nil {
		return fmt.Errorf("lock the log: %w", err)
	}
	defer lock.Unlock()
	l := walkie.OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return err
	}
	_, err = l.Save(walkie.OpEnded, st, r)
	return err
}

// LogAttempt logs the attempt r of the debate of the record file with its
// cost charged (Charge), in one line of the debate's log: the attempts a
// round table makes besides its turns (its phases, its reviews).
func LogAttempt(file string, r TurnRecord) error {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return err
	}
	_, _, err = walkie.ChangeState(file, walkie.StateDir(file, meta.ID), walkie.StateChange{Op: walkie.OpEnded, Attempt: r, OnlyStatus: true},
		func(_ *walkie.Doc, _ []byte, s *walkie.State) error {
			Charge(s, r.Usage)
			return nil
		})
	return err
}

// ReadTurnLog reads every attempt recorded for a debate (state directory
// dir), from its log: each line's attempt, in the order they ended (or,
// in a debate directory not yet converted, turns.jsonl's lines). A line of
// the log damaged before a whole one is an error naming it, returned with
// the records before it.
func ReadTurnLog(dir string) ([]TurnRecord, error) {
	raws, err := walkie.LogAttempts(dir)
	out := make([]TurnRecord, 0, len(raws))
	for _, b := range raws {
		var r TurnRecord
		if jerr := json.Unmarshal(b, &r); jerr != nil {
			return out, fmt.Errorf("%s: an attempt's record: %w", filepath.Join(dir, walkie.LogFile), jerr)
		}
		out = append(out, r)
	}
	return out, err
}

// LoggedAttempt returns the logged record of an attempt, if there is one,
// so a controller restarted after a crash never records it twice. Attempts
// are told apart by turn, number and start time.
func LoggedAttempt(dir string, turn, attempt int, started time.Time) (TurnRecord, bool) {
	recs, _ := ReadTurnLog(dir)
	for _, r := range recs {
		if r.Turn == turn && r.Attempt == attempt && r.Started.Equal(started.Truncate(time.Millisecond)) {
			return r, true
		}
	}
	return TurnRecord{}, false
}
