package roundtable

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

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Reviewers run at the same time, each in a sandbox of its own made for
// each attempt, outside the state directory (so no grader result is one
// "../" away):
//
//	SANDBOX/NAME.walkie.md   the record as it stood after the implementer's turn
//	SANDBOX/workspace/       a copy of the frozen workspace
//	SANDBOX/phases/KIND.md   copies of the approved phase outputs (the spec)
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
		rel == record || rel == "verdict.json" || strings.HasPrefix(rel, ".walkie") ||
		rel == "phases" || strings.HasPrefix(rel, "phases"+string(filepath.Separator)) {
		return "workspace"
	}
	return rel
}

// reviewJob is what every reviewer of a round shares.
type reviewJob struct {
	plan     *Turn
	freeze   *Freeze
	manifest manifest
	record   []byte // the record after the implementer's turn
	phases   []config.PhaseFile
	changed  []Change
}

// reviewAll runs every reviewer whose result for the round is not yet on
// disk, all at once, and returns the results in reviewer order. A nil
// result means that reviewer was halted or interrupted.
func (rt *Table) reviewAll(ctx context.Context, t *Turn, fr *Freeze, mf manifest, record []byte) ([]*ReviewResult, []engine.TurnRecord, error) {
	m := &t.Meta
	rd := rt.roundDir(t.Round)
	d, err := walkie.Parse(rt.File, record)
	if err != nil {
		return nil, nil, engine.BadInput(err)
	}
	phases, err := rt.approvedPhases(m.Phases, PhasePins(d))
	if err != nil {
		return nil, nil, err
	}
	job := &reviewJob{plan: t, freeze: fr, manifest: mf, record: record, phases: phases}
	if t.Round > 1 {
		var prev manifest
		if ok, err := readJSON(filepath.Join(rt.roundDir(t.Round-1), "manifest.json"), &prev); err != nil {
			return nil, nil, err
		} else if ok {
			job.changed = tree.Diff(prev, mf)
		}
	}
	results := make([]*ReviewResult, len(m.Reviewers))
	var (
		mu   sync.Mutex
		recs []engine.TurnRecord
		errs []error
		wg   sync.WaitGroup
	)
	n := len(m.Participants)
	// Attempts are numbered across runs (an interrupted run's attempts
	// count), so every attempt keeps its own transcript.
	logged, err := engine.ReadTurnLog(rt.Dir)
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
		turn := (t.Round-1)*n + 2 + i
		before := 0
		for _, r := range logged {
			if r.Turn == turn && r.Agent == name {
				before++
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, rs, err := rt.review(ctx, job, name, turn, before)
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
func (rt *Table) review(ctx context.Context, job *reviewJob, name string, turn, before int) (*ReviewResult, []engine.TurnRecord, error) {
	t := job.plan
	agent, err := rt.Agent(name)
	if err != nil {
		return nil, nil, err
	}
	res := &ReviewResult{Round: t.Round, Reviewer: name, Turn: turn}
	var recs []engine.TurnRecord
	for try := 1; ; try++ {
		attempt := before + try
		rec, verdict, discarded, stop, err := rt.reviewAttempt(ctx, job, agent, name, turn, attempt)
		if err != nil {
			return nil, recs, err
		}
		recs = append(recs, rec)
		if stop != "" {
			return nil, recs, nil
		}
		if res.Started.IsZero() {
			res.Started = rec.Started
		}
		res.Ended = rec.Ended
		usd, _ := rec.Usage.Cost()
		res.CostUSD += usd
		res.Attempts = append(res.Attempts, ReviewAttempt{Attempt: attempt, Outcome: rec.Outcome, Detail: rec.Detail, Started: rec.Started, Ended: rec.Ended, Discarded: discarded})
		res.Discarded = append(res.Discarded, discarded...)
		res.Outcome, res.Detail = rec.Outcome, rec.Detail
		if verdict != nil {
			res.Verdict = verdict
			break
		}
		if !rec.Outcome.Retryable() || try > agent.Retries {
			break
		}
		rt.Log.Info("reviewer gave no valid verdict; retrying", zap.String("reviewer", name), zap.Int("round", t.Round),
			zap.String("outcome", string(rec.Outcome)), zap.String("detail", rec.Detail))
	}
	if err := writeJSON(filepath.Join(rt.roundDir(t.Round), "review-"+name+".json"), res); err != nil {
		return nil, recs, err
	}
	return res, recs, nil
}

// reviewAttempt runs one reviewer session in a fresh sandbox and records it.
// stop is "" for a normal end, or walkie.OutcomeHalted / walkie.OutcomeInterrupted.
func (rt *Table) reviewAttempt(ctx context.Context, job *reviewJob, a config.Agent, name string, turn, attempt int) (rec engine.TurnRecord, verdict *ReviewVerdict, discarded []Change, stop walkie.Outcome, err error) {
	t := job.plan
	fa := rt.fileAttempt(name, engine.TurnRecord{Turn: turn, Round: t.Round, Agent: name, Role: "reviewer", Attempt: attempt})
	fa.Sandbox, fa.Words, fa.Kind = "walkie-review-", reviewWords, KindVerdict
	fa.Limit, fa.Name, fa.Check = maxVerdictBytes, "verdict.json", CheckVerdict
	fa.Keep = filepath.Join(rt.roundDir(t.Round), fmt.Sprintf("verdict-%s-%d.json", name, attempt))
	fa.Watch = sandboxWorkspace(t.Meta.Workspace, filepath.Base(rt.File))
	fa.Prepare = func(sandbox string, started time.Time) (engine.Job, error) {
		return rt.reviewerJob(job, a, name, turn, attempt, sandbox, filepath.Join(sandbox, fa.Watch), started)
	}
	// What it changed in its copy is thrown away with the sandbox, and
	// said.
	fa.Inspect = func(rec *engine.TurnRecord, changed []Change) error {
		if discarded = changed; len(discarded) > 0 {
			rec.Detail += fmt.Sprintf("; %d change(s) to its copy of the workspace discarded", len(discarded))
		}
		return nil
	}
	r, err := rt.runFile(ctx, fa)
	if err != nil {
		return r.Record, nil, nil, "", err
	}
	if r.Text != nil {
		v, _ := parseVerdict(r.Text) // it passed Check
		verdict = &v
	}
	rt.recorded("review", r.Record)
	return r.Record, verdict, discarded, r.Stop, nil
}

// reviewerJob fills a reviewer's sandbox (a copy of the frozen
// workspace in copyDir, the record as it stood after the implementer's
// turn, the approved phases) and makes the engine's job for the attempt:
// the sandbox is the working directory whatever the agent's dir: says (a
// reviewer must not start in the real workspace), and the session ends
// once a valid verdict has been on disk and quiet for the grace.
func (rt *Table) reviewerJob(job *reviewJob, a config.Agent, name string, turn, attempt int, sandbox, copyDir string, started time.Time) (engine.Job, error) {
	t := job.plan
	if err := tree.Copy(filepath.Join(rt.roundDir(t.Round), "snapshot"), job.manifest, copyDir); err != nil {
		return engine.Job{}, err
	}
	recordCopy := filepath.Join(sandbox, filepath.Base(rt.File))
	if err := os.WriteFile(recordCopy, job.record, 0o644); err != nil {
		return engine.Job{}, err
	}
	phases, err := copyPhases(job.phases, sandbox)
	if err != nil {
		return engine.Job{}, err
	}
	verdictPath := filepath.Join(sandbox, "verdict.json")
	prompt, err := rt.render("reviewer", config.ReviewerPromptData{Agent: name, Record: recordCopy, Workspace: copyDir, Verdict: verdictPath,
		Implementer: t.Meta.Implementer, Round: t.Round, MaxRounds: t.RoundCap, ImplementerTurn: job.freeze.Turn, Phases: phases, Spec: spec(phases),
		Changed: promptChanges(job.changed[:min(len(job.changed), maxChangedListed)]), ChangedMore: max(0, len(job.changed)-maxChangedListed)})
	if err != nil {
		return engine.Job{}, err
	}
	id := session.NewID()
	j := engine.Job{
		ID:         id,
		Agent:      a.ForRole(config.RoleReviewer),
		Vars:       config.Vars{Prompt: prompt, File: recordCopy, Agent: name, Dir: sandbox, Turn: turn, Round: t.Round},
		Dir:        sandbox,
		Env:        []string{"WALKIE_ROLE=reviewer", "WALKIE_VERDICT=" + verdictPath, "WALKIE_WORKSPACE=" + copyDir, "WALKIE_ROUND=" + strconv.Itoa(t.Round)},
		Transcript: engine.TranscriptBase(rt.Dir, turn, name, attempt),
		Result:     verdictPath,
		Done:       "the verdict is in",
		Role:       config.RoleReviewer,
		Reach:      engine.FolderReach(sandbox),
		Control:    filepath.Join(rt.Dir, walkie.LogFile),
		Halted:     rt.Halted,
		Started: func(s *session.Session) {
			rt.noteRunning(name, id, s.Pid(), sandbox)
			rt.Emit(engine.Event{Kind: engine.EventTurnStarted, Turn: turn, Round: t.Round, Agent: name, Attempt: attempt, Started: started})
			rt.Log.Info("review started", zap.Int("round", t.Round), zap.String("reviewer", name), zap.Int("attempt", attempt))
		},
		Output: func(line string) {
			rt.Emit(engine.Event{Kind: engine.EventOutput, Turn: turn, Round: t.Round, Agent: name, Attempt: attempt, Started: started, Line: line})
		},
	}
	return j, nil
}

// Running reviewers (and the grader) are remembered in
// .walkie/ID/roundtable/running/NAME.json: the process identity and the
// sandbox, so a controller that dies mid-review leaves enough for the next
// one to end their process groups and remove their sandboxes.

type runningSession struct {
	session.ProcIdentity
	Session string `json:"session,omitempty"` // its id, written before it starts
	Sandbox string `json:"sandbox,omitempty"`
}

// noteStarting records a session about to start, by its id: a controller
// that dies before it learns the pid leaves enough to end it.
func (rt *Table) noteStarting(name, id, sandbox string) error {
	if err := writeJSON(rt.runningPath(name), runningSession{Session: id, Sandbox: sandbox}); err != nil {
		return fmt.Errorf("record the %s session: %w", name, err)
	}
	return nil
}

// noteRunning adds the started process's identity.
func (rt *Table) noteRunning(name, id string, pid int, sandbox string) {
	pi, err := session.Identify(pid)
	if err != nil {
		rt.Log.Warn("cannot identify a round-table process", zap.String("name", name), zap.Int("pid", pid), zap.Error(err))
		return
	}
	if err := writeJSON(rt.runningPath(name), runningSession{pi, id, sandbox}); err != nil {
		rt.Log.Warn("cannot record a round-table process", zap.String("name", name), zap.Error(err))
	}
}

func (rt *Table) runningPath(name string) string {
	return filepath.Join(rt.Dir, "roundtable", "running", name+".json")
}

func (rt *Table) forgetRunning(name string) { _ = os.Remove(rt.runningPath(name)) }

// recoverReviewers ends the process groups of reviewers (and a grader) a
// dead controller left running, and removes their sandboxes. Their results
// were never saved, so they run again.
func (rt *Table) recoverReviewers() error {
	dir := filepath.Join(rt.Dir, "roundtable", "running")
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
		if rs.Pid > 0 {
			if err := session.KillStale(rs.ProcIdentity); err != nil {
				return fmt.Errorf("end the interrupted %s (pid %d): %w", strings.TrimSuffix(e.Name(), ".json"), rs.Pid, err)
			}
		}
		if rs.Session != "" {
			if err := session.Sweep(rs.Session); err != nil {
				return fmt.Errorf("end the interrupted %s (session %s): %w", strings.TrimSuffix(e.Name(), ".json"), rs.Session, err)
			}
		}
		if rs.Sandbox != "" && strings.HasPrefix(filepath.Base(rs.Sandbox), "walkie-") {
			_ = os.RemoveAll(rs.Sandbox)
		}
		rt.Log.Warn("ended a round-table process left running by an interrupted controller", zap.String("name", strings.TrimSuffix(e.Name(), ".json")), zap.Int("pid", rs.Pid))
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	return nil
}
