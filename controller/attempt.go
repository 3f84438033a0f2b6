package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// watchTick is the fallback for file systems that drop change events; the
// watcher is what normally wakes the controller.
const watchTick = 500 * time.Millisecond

// attempt runs one attempt at a turn and records it: snapshot, session,
// judge, settle, log, doorbell.
func (c *controller) attempt(ctx context.Context, t *plan) (TurnRecord, error) {
	// Acquire before begin: waiting for a slot is not a turn in progress,
	// so a controller that dies while waiting leaves nothing to recover.
	if c.opts.Acquire != nil {
		// The wait may be long: the last attempt must not look running
		// meanwhile.
		if err := c.flush(); err != nil {
			return TurnRecord{}, err
		}
		release, err := c.opts.Acquire(ctx, t.agent.Name)
		if err != nil {
			return TurnRecord{}, err
		}
		defer release()
	}
	snapshot, started, err := c.begin(t)
	if err != nil {
		return TurnRecord{}, err
	}
	rec := TurnRecord{Turn: t.turn, Round: t.round, Agent: t.participant, Role: firstNonEmpty(t.role, "participant"), Attempt: t.attempt, Started: started}
	// Announced once the agent is running: a command that cannot start is
	// a configuration error, not a turn that started and never ended.
	announce := func() {
		c.emit(Event{Kind: EventTurnStarted, Turn: t.turn, Round: t.round, Agent: t.participant, Attempt: t.attempt, Started: started})
		c.log.Info("turn started", zap.Int("turn", t.turn), zap.Int("round", t.round), zap.String("agent", t.participant), zap.Int("attempt", t.attempt))
	}
	spec, cleanup, err := c.sessionSpec(t, started)
	if err != nil {
		return rec, c.abandon(t, snapshot, err)
	}
	defer cleanup()
	rec.Transcript = Transcript{Raw: rel(c.dir, spec.RawPath), Text: rel(c.dir, spec.TextPath)}
	res, how, err := c.supervise(ctx, t, spec, snapshot, announce)
	if err != nil {
		return rec, c.abandon(t, snapshot, err)
	}
	c.fillFromSession(&rec, res)
	keep := walkie.KeepPath(c.dir, t.turn, t.participant, t.attempt)
	expect := walkie.Expect{Turn: t.turn, Agent: t.participant}
	var settled walkie.Settled
	if how != "" { // halted or interrupted: the attempt is void whatever it wrote
		settled, err = walkie.Discard(c.file, snapshot, keep)
	} else {
		settled, err = walkie.Settle(c.file, snapshot, expect, keep)
	}
	if err != nil {
		return rec, fmt.Errorf("settle: %w", err)
	}
	rec.Outcome, rec.Detail = classify(res, settled, how)
	rec.Signed = rec.Outcome == OutcomeAccepted && settled.Signed
	rec.Kept = rel(c.dir, settled.Kept)
	if settled.Entry != nil {
		rec.Seq = settled.Entry.Seq
	}
	rec.Usage = c.usage(t.agent, spec.TextPath)
	if err := appendTurnLog(c.dir, rec); err != nil {
		return rec, err
	}
	c.tries[t.turn] = max(c.tries[t.turn], t.attempt)
	if _, err := walkie.FlushInbox(c.file); err != nil {
		c.log.Warn("queued supervisor notes not recorded", zap.Error(err))
	}
	c.log.Info("turn recorded", zap.Int("turn", t.turn), zap.String("agent", t.participant), zap.String("outcome", rec.Outcome),
		zap.String("detail", rec.Detail), zap.Int64("duration_ms", rec.DurationMS), zap.Int64("output_bytes", rec.Bytes))
	c.emit(Event{Kind: EventTurnRecorded, Turn: t.turn, Round: t.round, Agent: t.participant, Attempt: t.attempt, Record: &rec, Status: settled.Status})
	return rec, nil
}

// begin snapshots the file and records the attempt as running, so that a
// controller killed from here on is cleaned up after by the next one. Both
// happen under the record lock: a supervisor note posted at the same moment
// is either in the snapshot or queued until the turn is recorded, never
// lost when a rejected turn is undone. The previous attempt's pending
// outcome goes into the same write.
func (c *controller) begin(t *plan) ([]byte, time.Time, error) {
	path := filepath.Join(c.dir, "snapshot.md")
	started := time.Now().UTC().Truncate(time.Millisecond)
	var snapshot []byte
	_, err := c.updateState(func(d *walkie.Doc, raw []byte, s *walkie.State) error {
		p := d.Progress()
		if p.Turns != t.turn-1 {
			return fmt.Errorf("the record changed while turn %d was being planned", t.turn)
		}
		if err := writeUnsynced(path, raw); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		snapshot = raw
		if c.pending != nil {
			c.pending.applyTo(s)
		}
		s.Running = &walkie.Attempt{Turn: t.turn, Agent: t.participant, Number: t.attempt, Started: started,
			ControllerPID: os.Getpid(), Snapshot: path, Size: int64(len(raw)), Seq: p.Seq}
		return nil
	})
	if err == nil {
		c.pending = nil
	}
	return snapshot, started, err
}

// abandon clears a running attempt that never got an agent going.
func (c *controller) abandon(t *plan, snapshot []byte, cause error) error {
	_, _ = walkie.Discard(c.file, snapshot, "")
	_, _, _ = walkie.UpdateState(c.file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.Running = nil
		return nil
	})
	return cause
}

// sessionSpec turns the agent's configuration into a session.
func (c *controller) sessionSpec(t *plan, started time.Time) (session.Spec, func(), error) {
	a := t.agent
	v := config.Vars{File: c.file, Agent: t.participant, Dir: filepath.Dir(c.file), Turn: t.turn, Round: t.round}
	prompt, err := t.prompt, error(nil)
	if prompt == "" {
		prompt, err = c.opts.Config.RenderPrompt(a.Prompt, config.PromptData{Agent: t.participant, File: c.file, Turn: t.turn, Round: t.round,
			MaxRounds: t.roundCap, Participants: t.meta.Participants})
	}
	if err != nil {
		return session.Spec{}, nil, badInput(fmt.Errorf("prompt for %s: %w", t.participant, err))
	}
	v.Prompt = prompt
	argv, err := a.Argv(v)
	if err != nil {
		return session.Spec{}, nil, badInput(err)
	}
	env, err := a.Environ(os.Environ(), v)
	if err != nil {
		return session.Spec{}, nil, badInput(err)
	}
	wd, err := a.WorkDir(v)
	if err != nil {
		return session.Spec{}, nil, badInput(err)
	}
	dirs, cleanup, err := sessionDirs(a)
	if err != nil {
		return session.Spec{}, nil, err
	}
	env = append(env, dirs...)
	rules, err := sessionRules(a.Rules)
	if err != nil {
		cleanup()
		return session.Spec{}, nil, badInput(err)
	}
	base := transcriptBase(c.dir, t.turn, t.participant, t.attempt)
	spec := session.Spec{Argv: argv, Dir: wd, Env: env, Timeout: a.Timeout, Stall: a.Stall, Grace: a.KillGrace,
		RawPath: base + ".log", TextPath: base + ".txt", Rules: rules, TranscriptCap: a.TranscriptCap}
	if c.opts.Observe != nil {
		var lt lineTracker
		spec.Observer = func(chunk []byte) {
			if line, changed := lt.feed(chunk); changed {
				c.emit(Event{Kind: EventOutput, Turn: t.turn, Round: t.round, Agent: t.participant, Attempt: t.attempt, Started: started, Line: line})
			}
		}
	}
	return spec, cleanup, nil
}

// maxLine bounds the line a lineTracker keeps; a progress display shows
// far less, and an agent may print megabytes without a newline.
const maxLine = 512

// lineTracker follows an agent's output and tells its latest line: the
// line being written if it has text yet, else the last line that had.
type lineTracker struct {
	plain     session.PlainText
	buf       []byte // plain text of the current chunk
	cur, last []byte
	shown     string
}

// feed takes a chunk of raw output and returns the latest line, and
// whether it differs from the one returned before.
func (l *lineTracker) feed(chunk []byte) (string, bool) {
	l.buf = l.plain.Append(l.buf[:0], chunk)
	for _, b := range l.buf {
		if b == '\n' {
			if len(bytes.TrimSpace(l.cur)) > 0 {
				l.last = append(l.last[:0], l.cur...)
			}
			l.cur = l.cur[:0]
			continue
		}
		if len(l.cur) < maxLine {
			l.cur = append(l.cur, b)
		}
	}
	line := bytes.TrimSpace(l.cur)
	if len(line) == 0 {
		line = bytes.TrimSpace(l.last)
	}
	if len(line) == 0 || string(line) == l.shown {
		return l.shown, false
	}
	l.shown = string(line)
	return l.shown, true
}

// sessionDirs makes the directories a session gets of its own: a private
// HOME holding the agent's home_files (unless home: inherit), and with
// tmpdir: private a TMPDIR inside it (or on its own), so what a CLI leaves
// in its temp dir (gemini's error reports) goes with the session. It
// returns the variables that point there and a cleanup that removes them.
func sessionDirs(a config.Agent) ([]string, func(), error) {
	var env, made []string
	cleanup := func() {
		for _, d := range made {
			os.RemoveAll(d)
		}
	}
	tmp := ""
	if a.Home != config.HomeInherit {
		home, err := privateHome(a.HomeFiles)
		if err != nil {
			return nil, nil, err
		}
		made, env, tmp = append(made, home), append(env, "HOME="+home), filepath.Join(home, ".tmp")
	}
	if a.TmpDir == config.TmpDirPrivate {
		var err error
		if tmp != "" {
			err = os.MkdirAll(tmp, 0o700)
		} else if tmp, err = os.MkdirTemp("", "walkie-tmp-"); err == nil {
			made = append(made, tmp)
		}
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("private TMPDIR: %w", err)
		}
		env = append(env, "TMPDIR="+tmp)
	}
	return env, cleanup, nil
}

func privateHome(files map[string]string) (string, error) {
	home, err := os.MkdirTemp("", "walkie-home-")
	if err != nil {
		return "", fmt.Errorf("private HOME: %w", err)
	}
	for name, content := range files {
		p := filepath.Join(home, filepath.FromSlash(name))
		if !strings.HasPrefix(p, home+string(filepath.Separator)) {
			os.RemoveAll(home)
			return "", badInput(fmt.Errorf("home file %q escapes the private HOME", name))
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			os.RemoveAll(home)
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			os.RemoveAll(home)
			return "", err
		}
	}
	return home, nil
}

func sessionRules(rules []config.Rule) ([]session.Rule, error) {
	var out []session.Rule
	for _, r := range rules {
		re, err := regexp.Compile(r.Match)
		if err != nil {
			return nil, fmt.Errorf("prompt rule %q: %w", r.Match, err)
		}
		out = append(out, session.Rule{Pattern: re, Reply: r.Reply, Outcome: r.Outcome, Detail: r.Detail})
	}
	return out, nil
}

// supervise runs the session and watches the file and the state while it
// runs. It ends the session as soon as a valid turn has been on disk and
// quiet for the grace, when the debate is halted, or when ctx is done.
// how is "" for a normal end, or OutcomeHalted / OutcomeInterrupted.
func (c *controller) supervise(ctx context.Context, t *plan, spec session.Spec, snapshot []byte, started func()) (session.Result, string, error) {
	w, err := c.watcher()
	if err != nil {
		return session.Result{}, "", err
	}
	// The session outlives ctx on purpose: on cancellation the controller
	// ends it itself, so the attempt is recorded as interrupted.
	s, err := session.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		err = fmt.Errorf("start %s: %w", t.participant, err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			// The configured command cannot run: no retry will fix it.
			err = badInput(err)
		}
		return session.Result{}, "", err
	}
	started()
	c.noteSession(s)
	expect := walkie.Expect{Turn: t.turn, Agent: t.participant}
	res, how := c.watchSession(ctx, s, w, c.file, t.agent.Grace, func() bool { return c.turnIsIn(snapshot, expect) }, "the turn is in")
	return res, how, nil
}

// watchSession waits for s to end while watching path (the record, or a
// reviewer's verdict file) and the debate's state through w, which must
// watch both directories. A change to path is progress (it restarts the
// stall window) and restarts a quiet period; once path has been quiet for
// grace and ready() holds, the session is ended with doneReason: the
// result is judged once it is still, not on every write, and an agent
// that exits by itself, as most do, is judged only afterwards. A halt or
// the end of ctx ends the session too; how says which ("" otherwise).
func (c *controller) watchSession(ctx context.Context, s *session.Session, w *fsnotify.Watcher, path string, grace time.Duration, ready func() bool, doneReason string) (session.Result, string) {
	done := make(chan session.Result, 1)
	go func() { done <- s.Wait() }()
	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	how := ""
	lastSize, lastMod := fileStamp(path)
	statePath := filepath.Join(c.dir, "state.json")
	onChange := func() {
		s.Progress()
		if how == "" {
			quiet.Reset(grace)
		}
	}
	checkHalt := func() {
		if how == "" && c.halted() {
			how = OutcomeHalted
			s.End("halted by walkie halt")
		}
	}
	// Done once cancelled, and a closed channel is always ready: it is
	// taken out of the select after the first time, or the loop would spin
	// for as long as the session takes to end.
	cancelled := ctx.Done()
	for {
		select {
		case res := <-done:
			return res, how
		case ev := <-w.Events:
			switch ev.Name {
			case path:
				lastSize, lastMod = fileStamp(path)
				onChange()
			case statePath:
				checkHalt()
			}
		case err := <-w.Errors:
			c.log.Warn("file watch error; falling back to the tick", zap.Error(err))
		case <-tick.C:
			if sz, mt := fileStamp(path); sz != lastSize || !mt.Equal(lastMod) {
				lastSize, lastMod = sz, mt
				onChange()
			}
			checkHalt()
		case <-quiet.C:
			if how == "" && ready() {
				s.End(doneReason)
			}
		case <-cancelled:
			cancelled = nil
			if how == "" {
				how = OutcomeInterrupted
				s.End("the controller was interrupted")
			}
		}
	}
}

func (c *controller) turnIsIn(snapshot []byte, want walkie.Expect) bool {
	return walkie.TurnIsIn(c.file, snapshot, want)
}

func (c *controller) halted() bool {
	st, err := walkie.LoadState(c.dir)
	return err == nil && st.Status == walkie.StatusHalted
}

// noteSession records the session's process identity in the running
// attempt, so a controller that dies now leaves enough to end the group.
func (c *controller) noteSession(s *session.Session) {
	id, err := session.Identify(s.Pid())
	if err != nil {
		c.log.Warn("cannot identify the session's process", zap.Int("pid", s.Pid()), zap.Error(err))
		return
	}
	// Only the running attempt changes: no need to read the record or
	// ring the doorbell.
	err = func() error {
		lock, err := walkie.LockRecord(c.dir)
		if err != nil {
			return err
		}
		defer lock.Unlock()
		st, err := walkie.LoadState(c.dir)
		if err != nil || st.Running == nil {
			return err
		}
		st.Running.SessionPID, st.Running.SessionStart = id.Pid, id.StartTicks
		return walkie.SaveState(c.dir, st)
	}()
	if err != nil {
		c.log.Warn("cannot record the session's process", zap.Error(err))
	}
}

func fileStamp(path string) (int64, time.Time) {
	fi, err := os.Stat(path)
	if err != nil {
		return -1, time.Time{}
	}
	return fi.Size(), fi.ModTime()
}

// fillFromSession copies what the session knows into the record. Started
// stays the attempt's own start, the key under which a restarted controller
// finds the attempt in the log.
func (c *controller) fillFromSession(rec *TurnRecord, res session.Result) {
	rec.Ended = res.Ended.UTC()
	rec.DurationMS = res.Duration.Milliseconds()
	if res.Signal == "" && res.ExitCode >= 0 {
		code := res.ExitCode
		rec.ExitCode = &code
	}
	rec.Signal = res.Signal
	rec.EndedBy = res.EndedBy
	rec.Bytes = res.Bytes
}

// classify names the attempt's outcome from what the session did and what
// the judge found in the file. A valid turn counts whatever the exit code;
// tampering is reported before anything else, since the file was restored.
func classify(res session.Result, s walkie.Settled, how string) (string, string) {
	v := s.Verdict
	switch {
	case how == OutcomeHalted:
		return OutcomeHalted, "halted by walkie halt; the attempt was discarded"
	case how == OutcomeInterrupted:
		return OutcomeInterrupted, "the controller was interrupted; the attempt was discarded"
	case v.Outcome == walkie.VerdictAccepted:
		return OutcomeAccepted, acceptedDetail(res, v)
	case v.Outcome == walkie.VerdictTampered:
		return OutcomeTampered, v.Detail + "; the file was restored"
	}
	if out, detail, ok := sessionFailure(res, "turn"); ok {
		return out, detail
	}
	if v.Outcome == walkie.VerdictMalformed {
		return OutcomeMalformed, v.Detail
	}
	return OutcomeNoTurn, firstNonEmpty(v.Detail, "no new turn was written")
}

// sessionFailure names the outcome of a session that left no valid result
// (a turn, a verdict) when its ending says more than the file does: a
// prompt rule, the timeout, a stall, a crash. ok is false for a clean exit,
// where the file alone tells what went wrong.
func sessionFailure(res session.Result, what string) (outcome, detail string, ok bool) {
	switch {
	case res.Ending == session.EndBlocked:
		out := res.RuleOutcome
		if out == "" {
			out = OutcomeBlockedPrompt
		}
		return out, firstNonEmpty(res.Detail, "blocked on: "+res.Matched), true
	case res.Ending == session.EndTimeout:
		return OutcomeTimeout, res.Detail, true
	case res.Ending == session.EndStalled:
		return OutcomeStalled, res.Detail, true
	case res.Ending == session.EndExited && (res.ExitCode != 0 || res.Signal != ""):
		return OutcomeCrashed, firstNonEmpty(res.Detail, fmt.Sprintf("exited with code %d", res.ExitCode)) + " without a valid " + what, true
	}
	return "", "", false
}

func acceptedDetail(res session.Result, v walkie.Verdict) string {
	d := "turn recorded"
	if v.Stamped {
		d = "turn posted with walkie post"
	}
	if res.EndedBy == session.EndedByController {
		d += "; the agent was ended after the grace period"
	}
	return d
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func rel(dir, path string) string {
	if path == "" {
		return ""
	}
	if r, err := filepath.Rel(dir, path); err == nil {
		return r
	}
	return path
}
