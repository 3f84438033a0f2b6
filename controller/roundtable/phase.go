package roundtable

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Phases run before the first round, in the front matter's order. Each is
// a fresh session of its agent with the phase's own pinned prompt, in a
// sandbox like a reviewer's:
//
//	SANDBOX/NAME.walkie.md     the record as it stands (header, approvals)
//	SANDBOX/<workspace>/       a copy of the workspace (thrown away)
//	SANDBOX/phases/KIND.md     earlier phases' approved outputs, and the
//	                           file this phase is to write
//
// The file it writes is kept as .walkie/ID/phases/KIND.md and waits for a
// person's approval (walkie phase approve, or --approve in CI), which
// appends a supervisor entry pinning its sha256 into the record: from then
// on every step checks the file against that pin. The implementer and the
// reviewers read the approved files (reviewers a copy in their sandbox);
// the last phase's output is "the spec".

// maxPhaseBytes bounds a phase's output: it is read whole, and every later
// session reads it.
const maxPhaseBytes = 256 << 10

// PhaseResult is .walkie/ID/phases/KIND.json: how a phase's sessions went.
type PhaseResult struct {
	Phase string `json:"phase"`
	Agent string `json:"agent"`
	// Outcome is accepted once the file is written, else the last
	// attempt's outcome.
	Outcome    walkie.Outcome  `json:"outcome"`
	Detail     string          `json:"detail,omitempty"`
	Attempts   []ReviewAttempt `json:"attempts"`
	Started    time.Time       `json:"started"`
	Ended      time.Time       `json:"ended"`
	DurationMS int64           `json:"duration_ms"` // the attempts' sessions, summed
	CostUSD    float64         `json:"cost_usd,omitempty"`
	Output     string          `json:"output,omitempty"` // relative to the state directory
	SHA256     string          `json:"sha256,omitempty"` // of the output as written
	Bytes      int             `json:"bytes,omitempty"`
	Approved   *Approval       `json:"approved,omitempty"`
}

// Approval is how a phase's output was approved.
type Approval struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"` // ApprovedByPerson or ApprovedByFlag
	SHA256 string    `json:"sha256"`
	Seq    int       `json:"seq"` // the record entry that pins it
}

// Who approved a phase.
const (
	ApprovedByPerson = "a person (walkie phase approve)"
	ApprovedByFlag   = "--approve"
)

// Errors of the phases a caller can tell apart.
var (
	// ErrPhaseNotWritten: the phase has no output to approve yet.
	ErrPhaseNotWritten = errors.New("the phase has not written its file yet")
	// ErrPhaseApproved: the phase's output is already pinned.
	ErrPhaseApproved = errors.New("the phase is already approved")
)

// PhaseFileName is the name of a phase's output, in the state directory's
// phases/ folder and in a sandbox's.
func PhaseFileName(kind string) string { return kind + ".md" }

func phaseDir(stateDir string) string { return filepath.Join(stateDir, "phases") }

// PhasePath is where a phase's output is kept.
func PhasePath(stateDir, kind string) string {
	return filepath.Join(phaseDir(stateDir), PhaseFileName(kind))
}

func phaseResultPath(stateDir, kind string) string {
	return filepath.Join(phaseDir(stateDir), kind+".json")
}

// ReadPhase reads a phase's result; nil when it never ran.
func ReadPhase(stateDir, kind string) (*PhaseResult, error) {
	var r PhaseResult
	ok, err := readJSON(phaseResultPath(stateDir, kind), &r)
	if err != nil || !ok {
		return nil, err
	}
	return &r, nil
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// The approval entry: a supervisor entry walkie writes, whose first line
// names the phase and whose sha256 line is the pin.
var (
	approvalHeadRe = regexp.MustCompile(`^walkie: the (` + strings.Join(walkie.PhaseKinds, "|") + `) phase is approved\.`)
	approvalPinRe  = regexp.MustCompile(`(?m)^- sha256: ([0-9a-f]{64})$`)
)

// Pin is a phase's approval as the record holds it.
type Pin struct {
	SHA256 string
	Seq    int
	Line   int
}

// PhasePins reads the approvals the record holds, by phase kind (the first
// of each: a later one changes nothing).
func PhasePins(d *walkie.Doc) map[string]Pin {
	pins := map[string]Pin{}
	for _, e := range d.Entries {
		if e.Kind != walkie.KindSupervisor {
			continue
		}
		body := bytes.TrimLeft(e.Body, "\n")
		h := approvalHeadRe.FindSubmatch(body)
		p := approvalPinRe.FindSubmatch(body)
		if h == nil || p == nil {
			continue
		}
		if _, seen := pins[string(h[1])]; !seen {
			pins[string(h[1])] = Pin{SHA256: string(p[1]), Seq: e.Marker.Seq, Line: e.Line}
		}
	}
	return pins
}

// approvalBody is the supervisor entry that pins a phase's output.
func approvalBody(m *walkie.Meta, r *PhaseResult, by string) string {
	what := map[string]string{walkie.PhaseResearch: "the research notes", walkie.PhasePlan: "the spec"}[r.Phase]
	var b strings.Builder
	fmt.Fprintf(&b, "walkie: the %s phase is approved. %s wrote %s in %s (%s, %s); approved by %s.\n\n",
		r.Phase, r.Agent, what, walkie.Count(len(r.Attempts), "attempt", "attempts"), time.Duration(r.DurationMS)*time.Millisecond, walkie.Money(r.CostUSD), by)
	fmt.Fprintf(&b, "- file: .walkie/%s/phases/%s\n- sha256: %s\n- size: %d bytes\n\n", m.ID, PhaseFileName(r.Phase), r.SHA256, r.Bytes)
	b.WriteString("Every later session reads it and walkie checks it against this sha256 before every step; a reviewer's objection may cite its sections as the rule.\n")
	return b.String()
}

// ApprovePhase pins a phase's written output into the record of file: a
// supervisor entry with its sha256, by who approved it. It returns the
// pinned hash.
func ApprovePhase(file, kind, by string) (string, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return "", err
	}
	m := d.Meta
	if !slices.ContainsFunc(m.Phases, func(p walkie.Phase) bool { return p.Kind == kind }) {
		return "", &walkie.InputError{File: file, Msg: fmt.Sprintf("%s declares no %s phase", filepath.Base(file), kind),
			Fix: "name one of the phases in its front matter (walkie phase show " + file + ")"}
	}
	if pin, ok := PhasePins(d)[kind]; ok {
		return pin.SHA256, fmt.Errorf("%s: %w (sha256 %s, entry %d)", kind, ErrPhaseApproved, pin.SHA256[:12], pin.Seq)
	}
	dir := walkie.StateDir(file, m.ID)
	r, err := ReadPhase(dir, kind)
	if err != nil {
		return "", err
	}
	if r == nil || r.Outcome != walkie.OutcomeAccepted {
		return "", fmt.Errorf("%s: %w: run walkie auto %s first", kind, ErrPhaseNotWritten, file)
	}
	// Pin what is there now: a person may have corrected the file before
	// approving it.
	text, err := walkie.ReadRegular(PhasePath(dir, kind))
	if err != nil {
		return "", err
	}
	if err := CheckPhase(text); err != nil {
		return "", &walkie.InputError{File: PhasePath(dir, kind), Msg: err.Error(), Fix: "write the file again, or have the phase run again: walkie phase redo " + file + " " + kind}
	}
	r.SHA256, r.Bytes = sha256Hex(text), len(text)
	rec, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte(approvalBody(&m, r, by))})
	if err != nil {
		return "", fmt.Errorf("pin the %s phase: %w", kind, err)
	}
	r.Approved = &Approval{At: rec.Entry.At, By: by, SHA256: r.SHA256, Seq: rec.Entry.Seq}
	if err := writeJSON(phaseResultPath(dir, kind), r); err != nil {
		return "", err
	}
	// A hint, not a guard: every step checks the hash.
	_ = os.Chmod(PhasePath(dir, kind), 0o444)
	return r.SHA256, nil
}

// RedoPhase throws away a phase's unapproved output, so the next run
// writes it again.
func RedoPhase(file, kind string) error {
	d, err := walkie.Load(file)
	if err != nil {
		return err
	}
	if pin, ok := PhasePins(d)[kind]; ok {
		return fmt.Errorf("%s: %w in entry %d: the record is append-only, so an approved phase stays", kind, ErrPhaseApproved, pin.Seq)
	}
	dir := walkie.StateDir(file, d.Meta.ID)
	for _, p := range []string{PhasePath(dir, kind), phaseResultPath(dir, kind)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// PhaseBrief is one phase: how its sessions went, what they cost and
// took, and whether its file is pinned in the record.
type PhaseBrief struct {
	Phase      string         `json:"phase"`
	Agent      string         `json:"agent"`
	State      string         `json:"state"`             // PhaseNotRun, PhaseFailed, PhaseWritten or PhaseApproved
	Outcome    walkie.Outcome `json:"outcome,omitempty"` // the last attempt's; "" when it never ran
	Detail     string         `json:"detail,omitempty"`
	Attempts   int            `json:"attempts"`
	DurationMS int64          `json:"duration_ms"`
	CostUSD    float64        `json:"cost_usd"`
	Output     string         `json:"output,omitempty"` // the file, once written
	SHA256     string         `json:"sha256,omitempty"` // the pin once approved, else of the file as written
	ApprovedBy string         `json:"approved_by,omitempty"`
}

// Phase states.
const (
	PhaseNotRun   = "not run"
	PhaseFailed   = "failed"
	PhaseWritten  = "awaiting approval"
	PhaseApproved = "approved"
)

// ListPhases reads the state of every phase of file, in order.
func ListPhases(file string) ([]PhaseBrief, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	return phaseBriefs(d, walkie.StateDir(file, d.Meta.ID))
}

func phaseBriefs(d *walkie.Doc, dir string) ([]PhaseBrief, error) {
	pins := PhasePins(d)
	var out []PhaseBrief
	for _, p := range d.Meta.Phases {
		pb := PhaseBrief{Phase: p.Kind, Agent: p.Agent, State: PhaseNotRun}
		pr, err := ReadPhase(dir, p.Kind)
		if err != nil {
			return nil, err
		}
		if pr != nil {
			pb.Outcome, pb.Detail, pb.Attempts, pb.DurationMS, pb.CostUSD, pb.SHA256 = pr.Outcome, pr.Detail, len(pr.Attempts), pr.DurationMS, pr.CostUSD, pr.SHA256
			pb.State = PhaseFailed
			if pr.Outcome == walkie.OutcomeAccepted {
				pb.State, pb.Output = PhaseWritten, PhasePath(dir, p.Kind)
			}
			if pr.Approved != nil {
				pb.ApprovedBy = pr.Approved.By
			}
		}
		if pin, ok := pins[p.Kind]; ok {
			pb.State, pb.SHA256, pb.Output = PhaseApproved, pin.SHA256, PhasePath(dir, p.Kind)
			pb.ApprovedBy = cmp.Or(pb.ApprovedBy, "a supervisor entry")
		}
		out = append(out, pb)
	}
	return out, nil
}

// CheckPhase refuses a phase output nobody can use: empty, over 256 KiB,
// or not UTF-8.
func CheckPhase(b []byte) error {
	switch {
	case len(bytes.TrimSpace(b)) == 0:
		return errors.New("the file is empty")
	case len(b) > maxPhaseBytes:
		return fmt.Errorf("the file is %d bytes, over the limit of %d", len(b), maxPhaseBytes)
	case !utf8.Valid(b):
		return errors.New("the file is not UTF-8")
	}
	return nil
}

// approvedPhases is the approved output of each of phases, checked
// against its pin in the record. A phase without a pin, or a file that no
// longer matches its pin, is bad input: no retry fixes it.
func (rt *Table) approvedPhases(phases []walkie.Phase, pins map[string]Pin) ([]config.PhaseFile, error) {
	var out []config.PhaseFile
	for _, p := range phases {
		pin, ok := pins[p.Kind]
		if !ok {
			return nil, engine.BadInput(&walkie.InputError{File: rt.File, Msg: fmt.Sprintf("the %s phase was never approved, yet the round table has begun", p.Kind),
				Fix: "approve it before the first round (walkie phase approve); a record that began without it cannot get it now"})
		}
		path := PhasePath(rt.Dir, p.Kind)
		b, err := walkie.ReadRegular(path)
		if err != nil {
			return nil, engine.BadInput(&walkie.InputError{File: path, Msg: fmt.Sprintf("the approved %s phase's file cannot be read: %v", p.Kind, err),
				Fix: fmt.Sprintf("restore it: the record pins its sha256 %s (line %d)", pin.SHA256, pin.Line)})
		}
		if got := sha256Hex(b); got != pin.SHA256 {
			return nil, engine.BadInput(&walkie.InputError{File: path, Msg: fmt.Sprintf("the approved %s phase's file changed after approval: its sha256 is %s, the record pins %s", p.Kind, got[:12], pin.SHA256[:12]),
				Fix: fmt.Sprintf("restore the approved text (the pin is at line %d of %s); the record is append-only, so it cannot be approved again", pin.Line, filepath.Base(rt.File))})
		}
		out = append(out, config.PhaseFile{Phase: p.Kind, Agent: p.Agent, Path: path, SHA256: pin.SHA256})
	}
	return out, nil
}

// spec is the last approved phase output: the one the work must follow.
func spec(phases []config.PhaseFile) *config.PhaseFile {
	if len(phases) == 0 {
		return nil
	}
	return &phases[len(phases)-1]
}

// copyPhases copies approved phase outputs into dir/phases/ and returns
// them with their paths there.
func copyPhases(phases []config.PhaseFile, dir string) ([]config.PhaseFile, error) {
	if len(phases) == 0 {
		return nil, nil
	}
	to := filepath.Join(dir, "phases")
	if err := os.MkdirAll(to, 0o755); err != nil {
		return nil, err
	}
	out := make([]config.PhaseFile, len(phases))
	for i, p := range phases {
		b, err := walkie.ReadRegular(p.Path)
		if err != nil {
			return nil, err
		}
		p.Path = filepath.Join(to, PhaseFileName(p.Phase))
		if err := os.WriteFile(p.Path, b, 0o444); err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// Phases runs what is left of the phases before the first round: each
// phase not yet approved runs (when it has no output yet) and is approved
// (with approve, else the run stops with a bad-input error that says how
// to approve it). ready is true when every phase is approved and the
// implementer may start; false means the loop must look again (halted,
// interrupted, or failed: the status says which).
func (rt *Table) Phases(ctx context.Context, t Turn, approve bool) (recs []engine.TurnRecord, ready bool, err error) {
	m := &t.Meta
	for i, p := range m.Phases {
		d, err := walkie.Load(rt.File)
		if err != nil {
			return recs, false, engine.BadInput(err)
		}
		pins := PhasePins(d)
		if _, ok := pins[p.Kind]; ok {
			continue
		}
		r, err := ReadPhase(rt.Dir, p.Kind)
		if err != nil {
			return recs, false, err
		}
		if r == nil || r.Outcome != walkie.OutcomeAccepted {
			earlier, err := rt.approvedPhases(m.Phases[:i], pins)
			if err != nil {
				return recs, false, err
			}
			var rs []engine.TurnRecord
			r, rs, err = rt.runPhase(ctx, m, p, earlier)
			recs = append(recs, rs...)
			if err != nil || r == nil {
				return recs, false, err // halted or interrupted when r is nil
			}
			if r.Outcome != walkie.OutcomeAccepted {
				reason := fmt.Sprintf("the %s phase: %s: %s after %s (%s)", p.Kind, p.Agent, r.Outcome, walkie.Count(len(r.Attempts), "attempt", "attempts"), r.Detail)
				if !r.Outcome.Retryable() {
					reason = fmt.Sprintf("the %s phase: %s", p.Kind, walkie.Unretried(r.Outcome, p.Agent, r.Detail))
				}
				rt.Log.Warn("phase failed; the supervisor must look", zap.String("phase", p.Kind), zap.String("reason", reason))
				return recs, false, rt.SetStatus(walkie.StatusFailed, reason)
			}
		}
		if !approve {
			return recs, false, engine.BadInput(&walkie.InputError{File: rt.File,
				Msg: fmt.Sprintf("the %s phase's file by %s awaits approval (%s, sha256 %s)", p.Kind, p.Agent, r.Output, r.SHA256[:12]),
				Fix: fmt.Sprintf("read it, then run `walkie phase approve %s %s` (or `walkie auto --approve` in CI)", rt.File, p.Kind)})
		}
		hash, err := ApprovePhase(rt.File, p.Kind, ApprovedByFlag)
		if err != nil {
			return recs, false, err
		}
		rt.Log.Warn("phase approved non-interactively (--approve)", zap.String("phase", p.Kind), zap.String("sha256", hash))
		rt.Emit(engine.Event{Kind: engine.EventNote, Line: fmt.Sprintf("the %s phase approved non-interactively (--approve), sha256 %s", p.Kind, hash[:12])})
	}
	return recs, true, nil
}

// runPhase runs one phase's attempts: up to 1 + its agent's retries, until
// it writes a usable file. A nil result means it was halted or
// interrupted.
func (rt *Table) runPhase(ctx context.Context, m *walkie.Meta, p walkie.Phase, earlier []config.PhaseFile) (*PhaseResult, []engine.TurnRecord, error) {
	agent, err := rt.Agent(p.Agent)
	if err != nil {
		return nil, nil, err
	}
	logged, err := engine.ReadTurnLog(rt.Dir)
	if err != nil {
		return nil, nil, err
	}
	before := 0 // attempts of earlier runs: numbering goes on, retries start afresh
	for _, r := range logged {
		if r.Role == p.Kind {
			before = max(before, r.Attempt)
		}
	}
	res := &PhaseResult{Phase: p.Kind, Agent: p.Agent}
	var recs []engine.TurnRecord
	for try := 1; ; try++ {
		rec, text, stop, err := rt.phaseAttempt(ctx, m, p, agent, before+try, earlier)
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
		res.Ended, res.DurationMS = rec.Ended, res.DurationMS+rec.DurationMS
		usd, _ := rec.Usage.Cost()
		res.CostUSD += usd
		res.Attempts = append(res.Attempts, ReviewAttempt{Attempt: rec.Attempt, Outcome: rec.Outcome, Detail: rec.Detail, Started: rec.Started, Ended: rec.Ended})
		res.Outcome, res.Detail = rec.Outcome, rec.Detail
		if text != nil {
			if err := walkie.WriteFileAtomic(PhasePath(rt.Dir, p.Kind), text, 0o644); err != nil {
				return nil, recs, err
			}
			res.Output, res.SHA256, res.Bytes = engine.Rel(rt.Dir, PhasePath(rt.Dir, p.Kind)), sha256Hex(text), len(text)
			break
		}
		if !rec.Outcome.Retryable() || try > agent.Retries {
			break
		}
		rt.Log.Info("phase gave no usable file; retrying", zap.String("phase", p.Kind), zap.String("agent", p.Agent),
			zap.String("outcome", string(rec.Outcome)), zap.String("detail", rec.Detail))
	}
	return res, recs, writeJSON(phaseResultPath(rt.Dir, p.Kind), res)
}

// phaseAttempt runs one session of a phase in a fresh sandbox and records
// it; text is the file it wrote when usable. stop is "" for a normal end,
// or halted / interrupted.
func (rt *Table) phaseAttempt(ctx context.Context, m *walkie.Meta, p walkie.Phase, a config.Agent, attempt int, earlier []config.PhaseFile) (rec engine.TurnRecord, text []byte, stop walkie.Outcome, err error) {
	fa := rt.fileAttempt("phase-"+p.Kind, engine.TurnRecord{Agent: p.Agent, Role: p.Kind, Attempt: attempt})
	fa.Sandbox, fa.Words, fa.Kind = "walkie-phase-", phaseWords, KindPhase
	fa.Limit, fa.Name, fa.Check = maxPhaseBytes, "the file", CheckPhase
	fa.Keep = filepath.Join(phaseDir(rt.Dir), fmt.Sprintf("%s-%d.md", p.Kind, attempt))
	fa.Prepare = func(sandbox string, started time.Time) (engine.Job, error) {
		return rt.phaseJob(ctx, m, p, a, attempt, earlier, sandbox, started)
	}
	r, err := rt.runFile(ctx, fa)
	if err != nil {
		return r.Record, nil, "", err
	}
	rt.recorded("phase", r.Record)
	return r.Record, r.Text, r.Stop, nil
}

// phaseJob fills a phase's sandbox (the record as it stands, a copy of
// the workspace, the earlier phases' approved files) and makes the job of
// its session, which is to write phases/KIND.md there.
func (rt *Table) phaseJob(ctx context.Context, m *walkie.Meta, p walkie.Phase, a config.Agent, attempt int, earlier []config.PhaseFile, sandbox string, started time.Time) (engine.Job, error) {
	record, err := walkie.ReadRegular(rt.File)
	if err != nil {
		return engine.Job{}, err
	}
	recordCopy := filepath.Join(sandbox, filepath.Base(rt.File))
	if err := os.WriteFile(recordCopy, record, 0o644); err != nil {
		return engine.Job{}, err
	}
	ws := rt.workspaceOf(m)
	copyDir := filepath.Join(sandbox, sandboxWorkspace(m.Workspace, filepath.Base(rt.File)))
	paths, _, err := ws.list(ctx)
	if err != nil {
		return engine.Job{}, fmt.Errorf("list the workspace: %w", err)
	}
	if err := os.MkdirAll(copyDir, 0o755); err != nil {
		return engine.Job{}, err
	}
	if _, err := tree.Scan(ws.root, paths, copyDir); err != nil {
		return engine.Job{}, fmt.Errorf("copy the workspace: %w", err)
	}
	if earlier, err = copyPhases(earlier, sandbox); err != nil {
		return engine.Job{}, err
	}
	output := filepath.Join(sandbox, "phases", PhaseFileName(p.Kind))
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return engine.Job{}, err
	}
	prompt, err := rt.render(p.Kind, config.PhasePromptData{Agent: p.Agent, Phase: p.Kind, Record: recordCopy, Workspace: copyDir, Output: output,
		Implementer: m.Implementer, Reviewers: m.Reviewers, Earlier: earlier})
	if err != nil {
		return engine.Job{}, engine.BadInput(err)
	}
	running, id := "phase-"+p.Kind, session.NewID()
	return engine.Job{
		ID:         id,
		Agent:      a.ForRole(config.RolePhase),
		Vars:       config.Vars{Prompt: prompt, File: output, Agent: p.Agent, Dir: sandbox},
		Dir:        sandbox,
		Env:        []string{"WALKIE_ROLE=" + p.Kind, "WALKIE_PHASE=" + p.Kind, "WALKIE_OUTPUT=" + output, "WALKIE_WORKSPACE=" + copyDir},
		Transcript: filepath.Join(phaseDir(rt.Dir), fmt.Sprintf("%s-%s-%d", p.Kind, p.Agent, attempt)),
		Result:     output,
		Done:       "the " + p.Kind + " phase's file is written",
		Role:       config.RolePhase,
		Reach:      engine.FolderReach(sandbox),
		Control:    filepath.Join(rt.Dir, walkie.LogFile),
		Halted:     rt.Halted,
		Started: func(s *session.Session) {
			rt.noteRunning(running, id, s.Pid(), sandbox)
			rt.Emit(engine.Event{Kind: engine.EventTurnStarted, Agent: p.Agent, Attempt: attempt, Started: started, Line: p.Kind + " phase"})
			rt.Log.Info("phase started", zap.String("phase", p.Kind), zap.String("agent", p.Agent), zap.Int("attempt", attempt))
		},
		Output: func(line string) {
			rt.Emit(engine.Event{Kind: engine.EventOutput, Agent: p.Agent, Attempt: attempt, Started: started, Line: line})
		},
	}, nil
}

// CopyApprovedPhases gives the new record dst (a copy of src, made by
// walkie trials) src's approved phase files: each copied, checked against
// src's pin, and pinned into dst's record by an approval entry that says
// where it came from. Phases src has not approved are left to dst's run.
func CopyApprovedPhases(src, dst string) error {
	sd, err := walkie.Load(src)
	if err != nil {
		return err
	}
	dd, err := walkie.Load(dst)
	if err != nil {
		return err
	}
	srcDir, dstDir := walkie.StateDir(src, sd.Meta.ID), walkie.StateDir(dst, dd.Meta.ID)
	pins := PhasePins(sd)
	for _, p := range sd.Meta.Phases {
		pin, ok := pins[p.Kind]
		if !ok {
			continue
		}
		text, err := walkie.ReadRegular(PhasePath(srcDir, p.Kind))
		if err != nil {
			return err
		}
		if sha256Hex(text) != pin.SHA256 {
			return &walkie.InputError{File: PhasePath(srcDir, p.Kind), Msg: fmt.Sprintf("the approved %s phase's file no longer matches its pin", p.Kind),
				Fix: fmt.Sprintf("restore it (the pin is at line %d of %s)", pin.Line, src)}
		}
		if err := walkie.WriteFileAtomic(PhasePath(dstDir, p.Kind), text, 0o444); err != nil {
			return err
		}
		r := &PhaseResult{Phase: p.Kind, Agent: p.Agent, Outcome: walkie.OutcomeAccepted, Detail: "copied from " + sd.Meta.ID,
			Output: engine.Rel(dstDir, PhasePath(dstDir, p.Kind)), SHA256: pin.SHA256, Bytes: len(text)}
		var b strings.Builder
		fmt.Fprintf(&b, "walkie: the %s phase is approved. This is %s's approved %s file (entry %d there), copied for this trial; %s wrote it there.\n\n",
			p.Kind, sd.Meta.ID, p.Kind, pin.Seq, p.Agent)
		fmt.Fprintf(&b, "- file: .walkie/%s/phases/%s\n- sha256: %s\n- size: %d bytes\n", dd.Meta.ID, PhaseFileName(p.Kind), pin.SHA256, len(text))
		rec, err := walkie.Append(dst, walkie.Post{Supervisor: true, Body: []byte(b.String())})
		if err != nil {
			return err
		}
		r.Approved = &Approval{At: rec.Entry.At, By: "a copy of " + sd.Meta.ID + "'s approval", SHA256: pin.SHA256, Seq: rec.Entry.Seq}
		if err := writeJSON(phaseResultPath(dstDir, p.Kind), r); err != nil {
			return err
		}
	}
	return nil
}
