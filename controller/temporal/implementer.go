package temporal

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/session"
)

// A round table's implementer changes its workspace. On a worker it
// changes a copy, laid out around the copy of the record as the home lays
// the workspace out around the record (so paths the briefing and the
// turns mention read the same), with the approved phase files where the
// home keeps them; what it changed in the copy goes back and is put into
// the workspace at home before the turn is judged, as though it had run
// there. Only the workspace comes back: what the agent leaves elsewhere in
// its copy goes with it.

// Names in an implementer's packed files (ImplementerTurn.Files).
const (
	packedWorkspace = "workspace"
	packedPhases    = "phases"
)

// outsideWorkspace is where the copy of a workspace that lies outside the
// record's directory goes, in the worker's copy of that directory.
const outsideWorkspace = ".walkie-workspace"

// copiedWorkspace is a worker's copy of a round table's workspace.
type copiedWorkspace struct {
	root   string
	phases string   // the approved phase files' directory
	skip   []string // never part of it: the record and its state, when the copy holds them
	before tree.Manifest
}

// reach is what the implementer's session reaches in the copy, as
// roundtable.ImplementerReach says at home: the workspace to change, the
// approved phase files to read. The hidden tests lie outside the workspace
// (roundtable.HiddenTests), so they never travel.
func (ws *copiedWorkspace) reach() session.Reach {
	return session.Reach{Write: []string{ws.root}, Read: []string{ws.phases}}
}

// copyWorkspace unpacks the implementer's files around the record's copy
// in work, and notes the copy's state.
func (w *Worker) copyWorkspace(ctx context.Context, in TurnInput, work string) (*copiedWorkspace, error) {
	it := in.Implementer
	rel := it.Workspace
	if rel == "" {
		rel = outsideWorkspace
	}
	if !fs.ValidPath(rel) {
		return nil, w.badInput(fmt.Errorf("the implementer's workspace is at %q, not a path inside the record's directory", it.Workspace))
	}
	ws := &copiedWorkspace{root: filepath.Join(work, filepath.FromSlash(rel)), phases: filepath.Join(work, ".walkie", in.Debate, "phases")}
	if rel == "." {
		ws.skip = []string{filepath.Join(work, in.FileName), filepath.Join(work, ".walkie")}
	}
	rc, err := w.carry.open(ctx, it.Files)
	if err != nil {
		return nil, fmt.Errorf("the implementer's workspace: %w", err)
	}
	defer rc.Close()
	// An empty workspace packs to nothing, and is a workspace still.
	for _, d := range []string{ws.phases, ws.root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	err = unpack(rc, work, func(name string) (string, bool) {
		if p, ok := strings.CutPrefix(name, packedWorkspace+"/"); ok {
			return filepath.ToSlash(filepath.Join(rel, p)), true
		}
		if p, ok := strings.CutPrefix(name, packedPhases+"/"); ok && !strings.Contains(p, "/") {
			return filepath.ToSlash(filepath.Join(".walkie", in.Debate, "phases", p)), true
		}
		return "", false
	})
	if err != nil {
		return nil, fmt.Errorf("the implementer's workspace: %w", err)
	}
	if ws.before, err = ws.scan(); err != nil {
		return nil, err
	}
	return ws, nil
}

// scan is the copy's state now.
func (ws *copiedWorkspace) scan() (tree.Manifest, error) {
	paths, err := tree.Walk(ws.root, func(p string, d fs.DirEntry) bool {
		for _, s := range ws.skip {
			if p == s {
				return true
			}
		}
		return false
	})
	if err != nil {
		return nil, fmt.Errorf("look at the workspace's copy: %w", err)
	}
	return tree.Scan(ws.root, paths, "")
}

// implementerPrompt renders the home's implementer template with the
// worker's copies in place of the home's paths.
func (w *Worker) implementerPrompt(it *ImplementerTurn, file string, ws *copiedWorkspace) (string, error) {
	data := it.Data
	data.File, data.Workspace = file, ws.root
	data.Phases = append([]config.PhaseFile(nil), data.Phases...)
	for i := range data.Phases {
		data.Phases[i].Path = filepath.Join(ws.phases, roundtable.PhaseFileName(data.Phases[i].Phase))
	}
	if data.Spec != nil {
		spec := *data.Spec
		spec.Path = filepath.Join(ws.phases, roundtable.PhaseFileName(spec.Phase))
		data.Spec = &spec
	}
	cfg := &config.Config{Roundtable: config.RoundtablePrompts{Implementer: it.Template}}
	prompt, err := cfg.RenderRoundtable("implementer", data)
	if err != nil {
		return "", w.badInput(fmt.Errorf("the implementer's prompt: %w", err))
	}
	return prompt, nil
}

// workspaceChanges is what the session changed in the copy: the added and
// modified files packed, and the list.
func (w *Worker) workspaceChanges(ctx context.Context, ws *copiedWorkspace) (*WorkspaceChanges, error) {
	now, err := ws.scan()
	if err != nil {
		return nil, err
	}
	out := &WorkspaceChanges{Changed: tree.Diff(ws.before, now)}
	var files []packed
	for _, c := range out.Changed {
		if c.Kind != tree.Removed {
			files = append(files, packed{name: c.Path, src: filepath.Join(ws.root, filepath.FromSlash(c.Path))})
		}
	}
	out.Files, err = w.carry.putWith(ctx, func(wr io.Writer) error { return pack(wr, files) })
	if err != nil {
		return nil, fmt.Errorf("what the implementer changed: %w", err)
	}
	return out, nil
}
