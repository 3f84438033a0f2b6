package mcpserver

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// WaitIn is wait_for_turn's input.
type WaitIn struct {
	File     string `json:"file" jsonschema:"the walkie file"`
	AfterSeq int    `json:"after_seq,omitempty" jsonschema:"the last sequence number already seen (get_standing's seq): return once an entry follows it"`
	Timeout  int    `json:"timeout_seconds,omitempty" jsonschema:"how long to wait at most, in seconds (default 300, at most 3600)"`
}

// Waited is wait_for_turn's answer.
type Waited struct {
	// Why it returned: entries, ended, person (the next turn is a
	// person's, or the briefing waits for approval), timeout.
	Why      string              `json:"why"`
	Standing controller.Standing `json:"standing"`
	Entries  []Entry             `json:"entries"`
}

// The reasons wait_for_turn returns.
const (
	waitedEntries = "entries"
	waitedEnded   = "ended"
	waitedPerson  = "person"
	waitedTimeout = "timeout"
)

// wait waits, woken by the debate's files (the record, its state, the
// doorbell, its activity), never by polling, until the record moves past
// after_seq, the debate stops being open or waits for a person, or the
// time is up. Each wake-up is a progress notification, when the host
// asked for them.
func (s *server) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitIn) (*mcp.CallToolResult, Waited, error) {
	file, err := s.record(in.File)
	if err != nil {
		return nil, Waited{}, err
	}
	timeout := time.Duration(in.Timeout) * time.Second
	switch {
	case in.Timeout < 0:
		return nil, Waited{}, &walkie.InputError{Msg: fmt.Sprintf("timeout_seconds %d: must not be negative", in.Timeout), Fix: "give the seconds to wait, e.g. 300"}
	case in.Timeout == 0:
		timeout = 5 * time.Minute
	case timeout > time.Hour:
		timeout = time.Hour
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, Waited{}, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, Waited{}, fmt.Errorf("wait for %s: %w", file, err)
	}
	defer w.Close()
	for _, dir := range []string{filepath.Dir(file), walkie.StateDir(file, d.Meta.ID)} {
		if err := w.Add(dir); err != nil {
			return nil, Waited{}, fmt.Errorf("wait for %s: %w", file, err)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	token, progress := req.Params.GetProgressToken(), 0
	last := ""
	for {
		out, done, err := s.look(file, in.AfterSeq)
		if err != nil || done {
			return nil, out, err
		}
		if msg := progressLine(out.Standing); token != nil && msg != last {
			last, progress = msg, progress+1
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: msg, Progress: float64(progress)})
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return nil, Waited{}, fmt.Errorf("wait for %s: %w", file, err)
		case <-deadline.C:
			out.Why = waitedTimeout
			return nil, out, nil
		case <-ctx.Done():
			return nil, Waited{}, ctx.Err()
		}
	}
}

// look is where the debate stands, and whether the wait is over.
func (s *server) look(file string, afterSeq int) (Waited, bool, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return Waited{}, false, err
	}
	st, err := controller.ReadStanding(d, controller.StandingOptions{Config: s.o.Config, Registry: s.o.Registry})
	if err != nil {
		return Waited{}, false, err
	}
	out := Waited{Standing: st, Entries: entriesAfter(d, afterSeq).Entries}
	switch {
	case len(out.Entries) > 0:
		out.Why = waitedEntries
	case st.Status != walkie.StatusOpen:
		out.Why = waitedEnded
	case st.Decision.Action == controller.ActWait && (st.Decision.Person || !st.Approved):
		out.Why = waitedPerson
	}
	return out, out.Why != "", nil
}

// progressLine says in one line what the debate is doing, from its
// standing: the running attempt, or why none runs.
func progressLine(st controller.Standing) string {
	if r := st.Running; r != nil && !r.Interrupted {
		return fmt.Sprintf("turn %d by %s (attempt %d) running since %s", r.Turn, r.Agent, r.Attempt, r.Started.Local().Format(time.TimeOnly))
	}
	if st.Waiting != "" {
		return st.Waiting
	}
	return fmt.Sprintf("%s, %d turns", st.Status, st.Turns)
}
