package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Reviewers run at the same time, each in a sandbox of its own made for
// each attempt, outside the state directory (so no grader result is one
// "../" away):
//
//	SANDBOX/NAME.walkie.md   the record as it stood after the implementer's turn
//	SANDBOX/workspace/       a copy of the frozen workspace
//	SANDBOX/verdict.json     where the verdict is to be written
//
// (The workspace copy keeps the workspace's relative path when it has one:
// SANDBOX/src for `workspace: src`.) The session runs in SANDBOX with {file} and {dir} pointing into it, and
// WALKIE_VERDICT, WALKIE_WORKSPACE, WALKIE_ROLE and WALKIE_ROUND set. It is
// ended once a valid verdict has been on disk for the agent's grace.

// sandboxWorkspace names the workspace copy inside a sandbox: the
// workspace's own path relative to the record where it has one, so paths
// the briefing and the turns mention read the same from the record copy;
// else "workspace".
func sandboxWorkspace(ws, record string) string {
	rel := filepath.Clean(ws)
	if filepath.IsAbs(rel) || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) ||
		rel == record || rel == "verdict.json" || strings.HasPrefix(rel, ".walkie") {
		return "workspace"
	}
	return rel
}

// reviewJob is what every reviewer of a round shares.
type reviewJob struct {
	plan     *plan
	freeze   *Freeze
	manifest manifest
	record   []byte // the record after the implementer's turn
	changed  []Change
	logMu    *sync.Mutex // turns.jsonl is appended to from several goroutines
}

// reviewAll runs every reviewer whose result for the round is not yet on
// disk, all at once, and returns the results in reviewer order. A nil
// result means that reviewer was halted or interrupted.
func (c *controller) reviewAll(ctx context.Context, t *plan, fr *Freeze, mf manifest, record []byte) ([]*ReviewResult, []TurnRecord, error) {
	m := &t.meta
	rd := c.roundDir(t.round)
	job := &reviewJob{plan: t, freeze: fr, manifest: mf, record: record, logMu: &sync.Mutex{}}
	if t.round > 1 {
		var prev manifest
		if ok, err := readJSON(filepath.Join(c.roundDir(t.round-1), "manifest.json"), &prev); err != nil {
			return nil, nil, err
		} else if ok {
			job.changed = diffManifests(prev, mf)
		}
	}
	results := make([]*ReviewResult, len(m.Reviewers))
	var (
		mu   sync.Mutex
		recs []TurnRecord
		errs []error
		wg   sync.WaitGroup
	)
	n := len(m.Participants)
	// Attempts are numbered across runs (an interrupted run's attempts
	// count), so every attempt keeps its own transcript.
	logged, err := ReadTurnLog(c.dir)
	if err != nil {
		return nil, nil, err
	}
	for i, name := range m.Reviewers {
		var stored ReviewResult
		ok, err := readJSON(filepath.Join(rd, "review-"+name+".json"), &stored)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			results[i] = &stored
			continue
		}
		turn := (t.round-1)*n + 2 + i
		before := 0
		for _, r := range logged {
			if r.Turn == turn && r.Agent == name {
				before++
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, rs, err := c.review(ctx, job, name, turn, before)
			mu.Lock()
			defer mu.Unlock()
			recs = append(recs, rs...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			results[i] = res
		}()
	}
	wg.Wait()
	return results, recs, errors.Join(errs...)
}

// review runs one reviewer's attempts: up to 1 + its retries, until a
// valid verdict comes in. Auth failures are never retried. before is how
// many attempts earlier runs made (interrupted ones): numbering goes on
// from there, the retry count starts afresh.
func (c *controller) review(ctx context.Context, job *reviewJob, name string, turn, before int) (*ReviewResult, []TurnRecord, error) {
	t := job.plan
	agent, err := c.agentFor(name)
	if err != nil {
		return nil, nil, err
	}
	res := &ReviewResult{Round: t.round, Reviewer: name, Turn: turn}
	var recs []TurnRecord
	for try := 1; ; try++ {
		attempt := before + try
		rec, verdict, discarded, how, err := c.reviewAttempt(ctx, job, agent, name, turn, attempt)
		if err != nil {
			return nil, recs, err
		}
		recs = append(recs, rec)
		if how != "" {
			return nil, recs, nil
		}
		if res.Started.IsZero() {
			res.Started = rec.Started
		}
		res.Ended = rec.Ended
		if rec.Usage != nil {
			res.CostUSD += rec.Usage.CostUSD
		}
		res.Attempts = append(res.Attempts, ReviewAttempt{Attempt: attempt, Outcome: rec.Outcome, Detail: rec.Detail, Started: rec.Started, Ended: rec.Ended, Discarded: discarded})
		res.Discarded = append(res.Discarded, discarded...)
		res.Outcome, res.Detail = rec.Outcome, rec.Detail
		if verdict != nil {
			res.Verdict = verdict
			break
		}
		if !retryable(rec.Outcome) || try > agent.Retries {
			break
		}
		c.log.Info("reviewer gave no valid verdict; retrying", zap.String("reviewer", name), zap.Int("round", t.round),
			zap.String("outcome", rec.Outcome), zap.String("detail", rec.Detail))
	}
	if err := writeJSON(filepath.Join(c.roundDir(t.round), "review-"+name+".json"), res); err != nil {
		return nil, recs, err
	}
	return res, recs, nil
}

// reviewAttempt runs one reviewer session in a fresh sandbox and records it.
// how is "" for a normal end, or OutcomeHalted / OutcomeInterrupted.
func (c *controller) reviewAttempt(ctx context.Context, job *reviewJob, a config.Agent, name string, turn, attempt int) (rec TurnRecord, verdict *ReviewVerdict, discarded []Change, how string, err error) {
	t := job.plan
	if c.opts.Acquire != nil {
		release, err := c.opts.Acquire(ctx, a.Name)
		if err != nil {
			return rec, nil, nil, "", err
		}
		defer release()
	}
	sandbox, err := os.MkdirTemp("", "walkie-review-")
	if err != nil {
		return rec, nil, nil, "", err
	}
	defer os.RemoveAll(sandbox)
	copyDir := filepath.Join(sandbox, sandboxWorkspace(t.meta.Workspace, filepath.Base(c.file)))
	if err := copySnapshot(filepath.Join(c.roundDir(t.round), "snapshot"), job.manifest, copyDir); err != nil {
		return rec, nil, nil, "", err
	}
	recordCopy := filepath.Join(sandbox, filepath.Base(c.file))
	if err := os.WriteFile(recordCopy, job.record, 0o644); err != nil {
		return rec, nil, nil, "", err
	}
	verdictPath := filepath.Join(sandbox, "verdict.json")
	started := time.Now().UTC().Truncate(time.Millisecond)
	rec = TurnRecord{Turn: turn, Round: t.round, Agent: name, Role: "reviewer", Attempt: attempt, Started: started}
	spec, cleanup, err := c.reviewerSpec(job, a, name, turn, attempt, sandbox, recordCopy, copyDir, verdictPath, started)
	if err != nil {
		return rec, nil, nil, "", err
	}
	defer cleanup()
	rec.Transcript = Transcript{Raw: rel(c.dir, spec.RawPath), Text: rel(c.dir, spec.TextPath)}
	c.emit(Event{Kind: EventTurnStarted, Turn: turn, Round: t.round, Agent: name, Attempt: attempt, Started: started})
	c.log.Info("review started", zap.Int("round", t.round), zap.String("reviewer", name), zap.Int("attempt", attempt))

	res, how, err := c.superviseReview(ctx, spec, name, verdictPath, a.Grace)
	if err != nil {
		return rec, nil, nil, "", err
	}
	c.fillFromSession(&rec, res)
	data, readErr := os.ReadFile(verdictPath)
	var v ReviewVerdict
	var parseErr error
	if readErr == nil {
		v, parseErr = parseVerdict(data)
		// Keep what the reviewer wrote, valid or not, for inspection.
		keep := filepath.Join(c.roundDir(t.round), fmt.Sprintf("verdict-%s-%d.json", name, attempt))
		if err := walkie.WriteFileAtomic(keep, data, 0o644); err != nil {
			return rec, nil, nil, "", err
		}
		rec.Kept = rel(c.dir, keep)
	} else if !errors.Is(readErr, fs.ErrNotExist) {
		parseErr = readErr
	}
	now, err := scanTree(copyDir)
	if err != nil {
		return rec, nil, nil, "", fmt.Errorf("check %s's copy of the workspace: %w", name, err)
	}
	discarded = diffManifests(job.manifest, now)
	rec.Outcome, rec.Detail = classifyReview(res, how, readErr == nil, parseErr)
	if rec.Outcome == OutcomeAccepted {
		verdict = &v
	}
	if len(discarded) > 0 {
		rec.Detail += fmt.Sprintf("; %d change(s) to its copy of the workspace discarded", len(discarded))
	}
	rec.Usage = c.usage(a, spec.TextPath)
	job.logMu.Lock()
	err = appendTurnLog(c.dir, rec)
	job.logMu.Unlock()
	if err != nil {
		return rec, nil, nil, "", err
	}
	if rec.Usage != nil && rec.Usage.CostUSD > 0 {
		if _, _, err := walkie.UpdateState(c.file, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
			s.CostUSD += rec.Usage.CostUSD
			return nil
		}); err != nil {
			return rec, nil, nil, "", err
		}
	}
	c.log.Info("review recorded", zap.Int("round", t.round), zap.String("reviewer", name), zap.Int("attempt", attempt),
		zap.String("outcome", rec.Outcome), zap.String("detail", rec.Detail), zap.Int64("duration_ms", rec.DurationMS))
	c.emit(Event{Kind: EventTurnRecorded, Turn: turn, Round: t.round, Agent: name, Attempt: attempt, Record: &rec, Status: walkie.StatusOpen})
	return rec, verdict, discarded, how, nil
}

// classifyReview names a review attempt's outcome. A valid verdict counts
// whatever the exit code; the session's ending comes before a missing or
// invalid file, so a timeout reads as a timeout.
func classifyReview(res session.Result, how string, wrote bool, parseErr error) (string, string) {
	switch {
	case how == OutcomeHalted:
		return OutcomeHalted, "halted by walkie halt; the review was discarded"
	case how == OutcomeInterrupted:
		return OutcomeInterrupted, "the controller was interrupted; the review was discarded"
	case wrote && parseErr == nil:
		d := "verdict recorded"
		if res.EndedBy == session.EndedByController {
			d += "; the reviewer was ended after the grace period"
		}
		return OutcomeAccepted, d
	}
	if out, detail, ok := sessionFailure(res, "verdict"); ok {
		return out, detail
	}
	if parseErr != nil {
		return OutcomeMalformed, parseErr.Error()
	}
	return OutcomeNoTurn, "no verdict file was written"
}

// reviewerSpec turns a reviewer's configuration into a session in its sandbox.
func (c *controller) reviewerSpec(job *reviewJob, a config.Agent, name string, turn, attempt int, sandbox, recordCopy, copyDir, verdictPath string, started time.Time) (session.Spec, func(), error) {
	t := job.plan
	prompt, err := renderTemplate(reviewerPrompt, reviewerPromptData{Agent: name, Record: recordCopy, Workspace: copyDir, Verdict: verdictPath,
		Implementer: t.meta.Implementer, Round: t.round, MaxRounds: t.roundCap, ImplementerTurn: job.freeze.Turn,
		Changed: job.changed[:min(len(job.changed), maxChangedListed)], ChangedMore: max(0, len(job.changed)-maxChangedListed)})
	if err != nil {
		return session.Spec{}, nil, fmt.Errorf("reviewer prompt: %w", err)
	}
	v := config.Vars{Prompt: prompt, File: recordCopy, Agent: name, Dir: sandbox, Turn: turn, Round: t.round}
	argv, err := a.Argv(v)
	if err != nil {
		return session.Spec{}, nil, badInput(err)
	}
	env, err := a.Environ(os.Environ(), v)
	if err != nil {
		return session.Spec{}, nil, badInput(err)
	}
	env = append(env, "WALKIE_ROLE=reviewer", "WALKIE_VERDICT="+verdictPath, "WALKIE_WORKSPACE="+copyDir, "WALKIE_ROUND="+strconv.Itoa(t.round))
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
	base := filepath.Join(c.dir, "turns", fmt.Sprintf("%04d-%s-%d", turn, name, attempt))
	var lt lineTracker
	// The sandbox is the working directory whatever the agent's dir: says:
	// a reviewer must not start in the real workspace.
	spec := session.Spec{Argv: argv, Dir: sandbox, Env: env, Timeout: a.Timeout, Stall: a.Stall, Grace: a.KillGrace,
		RawPath: base + ".log", TextPath: base + ".txt", Rules: rules, TranscriptCap: a.TranscriptCap,
		Observer: func(chunk []byte) {
			if line, changed := lt.feed(chunk); changed && c.opts.Observe != nil {
				c.emit(Event{Kind: EventOutput, Turn: turn, Round: t.round, Agent: name, Attempt: attempt, Started: started, Line: line})
			}
		}}
	return spec, cleanup, nil
}

// superviseReview runs a reviewer's session and ends it once a valid
// verdict has been on disk and quiet for the grace, when the round table
// is halted, or when ctx is done.
func (c *controller) superviseReview(ctx context.Context, spec session.Spec, name, verdictPath string, grace time.Duration) (session.Result, string, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return session.Result{}, "", fmt.Errorf("watch: %w", err)
	}
	defer w.Close()
	for _, d := range []string{filepath.Dir(verdictPath), c.dir} {
		if err := w.Add(d); err != nil {
			return session.Result{}, "", fmt.Errorf("watch %s: %w", d, err)
		}
	}
	s, err := session.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		return session.Result{}, "", fmt.Errorf("start %s: %w", name, err)
	}
	c.noteRunning(name, s.Pid(), filepath.Dir(verdictPath))
	defer c.forgetRunning(name)
	valid := func() bool {
		b, err := os.ReadFile(verdictPath)
		if err != nil {
			return false
		}
		_, err = parseVerdict(b)
		return err == nil
	}
	res, how := c.watchSession(ctx, s, w, verdictPath, grace, valid, "the verdict is in")
	return res, how, nil
}

// Running reviewers (and the grader) are remembered in
// .walkie/ID/roundtable/running/NAME.json: the process identity and the
// sandbox, so a controller that dies mid-review leaves enough for the next
// one to end their process groups and remove their sandboxes.

type runningSession struct {
	session.ProcIdentity
	Sandbox string `json:"sandbox,omitempty"`
}

func (c *controller) runningPath(name string) string {
	return filepath.Join(c.dir, "roundtable", "running", name+".json")
}

func (c *controller) noteRunning(name string, pid int, sandbox string) {
	id, err := session.Identify(pid)
	if err != nil {
		c.log.Warn("cannot identify a round-table process", zap.String("name", name), zap.Int("pid", pid), zap.Error(err))
		return
	}
	if err := writeJSON(c.runningPath(name), runningSession{id, sandbox}); err != nil {
		c.log.Warn("cannot record a round-table process", zap.String("name", name), zap.Error(err))
	}
}

func (c *controller) forgetRunning(name string) { _ = os.Remove(c.runningPath(name)) }

// recoverReviewers ends the process groups of reviewers (and a grader) a
// dead controller left running, and removes their sandboxes. Their results
// were never saved, so they run again.
func (c *controller) recoverReviewers() error {
	dir := filepath.Join(c.dir, "roundtable", "running")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range ents {
		var rs runningSession
		p := filepath.Join(dir, e.Name())
		if ok, err := readJSON(p, &rs); err != nil || !ok {
			_ = os.Remove(p)
			continue
		}
		if err := session.KillStale(rs.ProcIdentity); err != nil {
			return fmt.Errorf("end the interrupted %s (pid %d): %w", strings.TrimSuffix(e.Name(), ".json"), rs.Pid, err)
		}
		if rs.Sandbox != "" && strings.HasPrefix(filepath.Base(rs.Sandbox), "walkie-") {
			_ = os.RemoveAll(rs.Sandbox)
		}
		c.log.Warn("ended a round-table process left running by an interrupted controller", zap.String("name", strings.TrimSuffix(e.Name(), ".json")), zap.Int("pid", rs.Pid))
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}
