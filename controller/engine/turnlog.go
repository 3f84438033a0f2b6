package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// TurnRecord is one line of .walkie/ID/turns.jsonl: one attempt at a turn.
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

// AppendTurnLog adds one record to turns.jsonl in one synced write. A
// line cut short by a crash before it is ended first, so that the new
// record starts a line of its own. Appends exclude each other (a round
// table's reviewers end at once), so that look at the last byte and the
// write that follows it are one step.
func AppendTurnLog(dir string, r TurnRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "turns.jsonl"), os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return fmt.Errorf("open turn log: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("turn log %s is not a regular file", f.Name())
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock turn log: %w", err)
	}
	line := append(b, '\n')
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err == nil && last[0] != '\n' {
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("write turn log: %w", err)
	}
	return f.Sync()
}

// ReadTurnLog reads every attempt recorded for a debate. A line cut short
// by a crash (its JSON ends early) is skipped, not an error; any other
// damage is an error naming the line, returned with the records before it.
func ReadTurnLog(dir string) ([]TurnRecord, error) {
	path := filepath.Join(dir, "turns.jsonl")
	b, err := walkie.ReadSideFile(dir, "turns.jsonl", walkie.MaxSideFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []TurnRecord
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var r TurnRecord
		if err := json.Unmarshal(line, &r); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset == int64(len(line)) {
				continue // cut short
			}
			return out, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
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
