package roundtable

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// What the round table's sessions reach in their sandboxes, besides what
// every session gets (docs/sessions.md, "Sandbox"): the implementer
// changes its workspace and reads the approved phase files, and never the
// hidden tests; a reviewer and a phase reach only their own copy; the
// grader alone reads the hidden tests.

// ImplementerReach is what the implementer's turn reaches besides a
// debater's (its working directory, the record): its workspace, to
// change; the approved phases' files, to read; and not the hidden tests,
// though they may sit in its working directory.
func (rt *Table) ImplementerReach(t Turn) (session.Reach, error) {
	ws := rt.workspaceOf(&t.Meta).root
	r := session.Reach{Write: []string{ws}, Hide: HiddenTests(&t.Meta, filepath.Dir(rt.File), ws)}
	for _, p := range t.Meta.Phases {
		r.Read = append(r.Read, PhasePath(rt.Dir, p.Kind))
	}
	return r, nil
}

// graderReach is what the grader reaches: the record's folder, hidden
// tests included but not the state of its debates nor other debates'
// records, and the copy it runs in, to write.
func graderReach(fileDir, record, copyDir string) session.Reach {
	return session.Reach{Read: []string{fileDir}, Write: []string{copyDir}, Hide: engine.DebateHides(fileDir, record)}
}

// HiddenTests are the paths the grader's command names that no agent may
// read: each existing absolute path it names outside the workspace, and,
// for one in the record's folder, the whole entry of that folder it lies
// in ({dir}/hidden/test_x.py hides {dir}/hidden). A path the command
// builds at run time is not seen: name the tests' folder in the command.
func HiddenTests(m *walkie.Meta, fileDir, workspace string) []string {
	var words []string
	if m.Grader.Shell != "" {
		words = strings.Fields(m.Grader.Shell)
	} else {
		words = m.Grader.Argv
	}
	r := strings.NewReplacer("{dir}", fileDir, "{workspace}", workspace, "{round}", "1")
	var out []string
	for _, w := range words {
		w = strings.Trim(r.Replace(w), `"'`+"`")
		if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(v, "/") {
			w = v // --tests=/path
		}
		if !filepath.IsAbs(w) {
			continue
		}
		p := filepath.Clean(w)
		// Not the workspace, nor a folder that holds it (make -C {dir}).
		if _, err := os.Stat(p); err != nil || within(p, workspace) || within(workspace, p) || within(fileDir, p) {
			continue
		}
		out = append(out, p)
		if rel, err := filepath.Rel(fileDir, p); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
			out = append(out, filepath.Join(fileDir, strings.Split(rel, string(filepath.Separator))[0]))
		}
	}
	return out
}

// within reports whether p is dir or beneath it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
