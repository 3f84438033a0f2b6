package roundtable

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Grader statuses. Only pass lets a round converge; a timeout or a grader
// that could not start is told apart from a failing test run.
const (
	GraderPass    = "pass"
	GraderFail    = "fail"
	GraderTimeout = "timeout"
	GraderError   = "error"
)

// graderTail bounds the part of the grader's output kept in grader.json
// and shown to the implementer.
const graderTail = 4 << 10

// graderKillGrace is how long the grader's process group has between
// SIGTERM and SIGKILL.
const graderKillGrace = 2 * time.Second

// GraderResult is round-N/grader.json.
type GraderResult struct {
	Round      int       `json:"round"`
	Command    string    `json:"command"`
	Workspace  string    `json:"workspace_sha256"` // the frozen state it ran on
	Status     string    `json:"status"`
	ExitCode   *int      `json:"exit_code,omitempty"`
	Signal     string    `json:"signal,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	Started    time.Time `json:"started"`
	Ended      time.Time `json:"ended"`
	DurationMS int64     `json:"duration_ms"`
	Output     string    `json:"output_tail"` // the last 4 KiB of its output
	Log        string    `json:"log"`         // the whole output as plain text, relative to the state dir
	// Sandbox is how its boundary was applied and what its output
	// reported refused (nil without one).
	Sandbox *session.SandboxReport `json:"sandbox,omitempty"`
}

// Passed reports whether the grader passed.
func (g *GraderResult) Passed() bool { return g != nil && g.Status == GraderPass }

// graderCommand expands the placeholders {dir}, {workspace} and {round} in
// the front matter's command and returns the argv to run.
func graderCommand(cmd walkie.Command, dir, copyDir string, round int) []string {
	r := strings.NewReplacer("{dir}", dir, "{workspace}", copyDir, "{round}", strconv.Itoa(round))
	if cmd.Shell != "" {
		return []string{"/bin/sh", "-c", r.Replace(cmd.Shell)}
	}
	argv := make([]string, len(cmd.Argv))
	for i, a := range cmd.Argv {
		argv[i] = r.Replace(a)
	}
	return argv
}

// runGrader runs the grader in copyDir (a copy of the frozen workspace)
// through the engine, like any session: its own pty and process group,
// with the controller's whole environment plus WALKIE_DIR,
// WALKIE_WORKSPACE and WALKIE_ROUND, ended with its whole group at the
// timeout. Its output goes to transcript+".log" (raw) and ".txt". A
// cancelled ctx gives an error: the result of an interrupted grader is not
// a result.
func (rt *Table) runGrader(ctx context.Context, argv []string, copyDir, fileDir string, round int, timeout time.Duration, transcript, id string, started func(*session.Session)) (GraderResult, error) {
	res := GraderResult{Round: round, Command: strings.Join(argv, " ")}
	j := engine.Job{
		ID: id,
		// The grader is the user's own test command, not an agent: it
		// gets the environment and HOME of the person who runs walkie.
		Agent: config.Agent{Name: "grader", Timing: config.Timing{Timeout: timeout, KillGrace: graderKillGrace},
			Home: config.HomeInherit, EnvAllow: []string{"*"}},
		Argv:       argv,
		Dir:        copyDir,
		Env:        []string{"WALKIE_DIR=" + fileDir, "WALKIE_WORKSPACE=" + copyDir, "WALKIE_ROUND=" + strconv.Itoa(round)},
		Transcript: transcript,
		Started:    started,
		Role:       config.RoleGrader,
		Reach:      graderReach(fileDir, rt.File, copyDir),
	}
	res.Started = time.Now().UTC().Truncate(time.Millisecond)
	r, err := rt.Engine.Run(ctx, j)
	if err != nil {
		res.Ended = res.Started
		res.Status, res.Detail = GraderError, fmt.Sprintf("could not start: %v", err)
		return res, nil
	}
	res.Ended = r.Ended.UTC().Truncate(time.Millisecond)
	res.DurationMS = r.Duration.Milliseconds()
	res.Sandbox = r.Sandbox
	if r.Stop != "" {
		return res, fmt.Errorf("grader: %w", context.Cause(ctx))
	}
	res.Signal = r.Signal
	if r.Signal == "" && r.ExitCode >= 0 {
		code := r.ExitCode
		res.ExitCode = &code
	}
	switch {
	case r.Ending == session.EndTimeout:
		res.Status, res.Detail = GraderTimeout, fmt.Sprintf("still running after %s; its process group was ended", timeout)
	case r.Ending != session.EndExited:
		res.Status, res.Detail = GraderError, r.Detail
	case r.Signal != "":
		res.Status, res.Detail = GraderFail, "killed by "+r.Signal
	case r.ExitCode == 0:
		res.Status = GraderPass
	default:
		res.Status, res.Detail = GraderFail, "exited with code "+strconv.Itoa(r.ExitCode)
	}
	res.Output = tail(r.TextPath, graderTail)
	return res, nil
}

// tail returns the last n bytes of a file as text.
func tail(path string, n int64) string {
	f, err := walkie.OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(0, fi.Size()-n)
	b, _ := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	// It reaches the implementer inside one argv element: no NUL, and no
	// terminal escapes either.
	s := strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, strings.ToValidUTF8(string(b), ""))
	if off > 0 {
		s = "…" + s
	}
	return s
}

// graderTranscript is where a round's grader output is kept, without
// extension: grader.log (raw) and grader.txt (plain text).
func graderTranscript(roundDir string) string { return filepath.Join(roundDir, "grader") }

// grade runs the grader on a copy of the frozen workspace, once per round.
func (rt *Table) grade(ctx context.Context, round int, fr *Freeze, mf manifest, m *walkie.Meta) (*GraderResult, error) {
	rd := rt.roundDir(round)
	var g GraderResult
	if ok, err := readJSON(filepath.Join(rd, "grader.json"), &g); err != nil || (ok && g.Workspace == fr.Workspace) {
		return &g, err
	}
	tmp, err := os.MkdirTemp("", "walkie-grader-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	copyDir := filepath.Join(tmp, "workspace")
	if err := tree.Copy(filepath.Join(rd, "snapshot"), mf, copyDir); err != nil {
		return nil, err
	}
	dir := filepath.Dir(rt.File)
	id := session.NewID()
	if err := rt.noteStarting("grader", id, tmp); err != nil {
		return nil, err
	}
	g, err = rt.runGrader(ctx, graderCommand(m.Grader, dir, copyDir, round), copyDir, dir, round, m.GraderLimit(), graderTranscript(rd), id,
		func(s *session.Session) { rt.noteRunning("grader", id, s.Pid(), tmp) })
	rt.forgetRunning("grader")
	if err != nil {
		return nil, err
	}
	g.Workspace, g.Log = fr.Workspace, engine.Rel(rt.Dir, graderTranscript(rd)+".txt")
	if err := writeJSON(filepath.Join(rd, "grader.json"), g); err != nil {
		return nil, err
	}
	rt.Log.Info("grader ran", zap.Int("round", round), zap.String("status", g.Status), zap.String("detail", g.Detail), zap.Int64("duration_ms", g.DurationMS))
	rt.Emit(engine.Event{Kind: engine.EventNote, Round: round, Line: fmt.Sprintf("round %d: the grader says %s (%s)", round, g.Status, time.Duration(g.DurationMS)*time.Millisecond)})
	return &g, nil
}
