package temporal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	temporalsdk "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/tree"
	"github.com/walkie-sh/walkie/walkie"
)

// A worker refuses a home of another protocol or build, or one that keeps
// its blobs where the worker does not look, before anything runs: bad
// input naming both sides.
func TestWorkerRefusesAHomeItDoesNotMatch(t *testing.T) {
	w := newTestWorker(t, `[sh, -c, 'echo ran > "$0"', "`+filepath.Join(t.TempDir(), "ran")+`"]`, "")
	own := homeHello(w)
	for _, tc := range []struct {
		name  string
		home  Hello
		wants []string
	}{
		{"another build", Hello{Protocol: Protocol, Build: "v0.9.0", Store: own.Store}, []string{"walkie v0.9.0 (protocol 2)", "walkie " + testBuild + " (protocol 2)"}},
		{"another protocol", Hello{Protocol: 1, Build: testBuild, Store: own.Store}, []string{"(protocol 1)", "(protocol 2)"}},
		{"another store", Hello{Protocol: Protocol, Build: testBuild, Store: "0123abcd"}, []string{"blob store 0123abcd", "is store " + own.Store, "--blobs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := turnInput(t, w)
			in.Hello = tc.home
			_, err := runTurnActivity(t, w, in, nil)
			var app *temporalsdk.ApplicationError
			if !errors.As(err, &app) || app.Type() != ErrTypeBadInput || !app.NonRetryable() {
				t.Fatalf("error %v, want non-retryable bad input", err)
			}
			for _, want := range tc.wants {
				if !strings.Contains(app.Error(), want) {
					t.Errorf("the refusal %q does not say %q", app.Error(), want)
				}
			}
			if dirs, _ := os.ReadDir(w.o.Dir); len(dirs) != 0 {
				t.Fatalf("the refused turn made %v", dirs)
			}
		})
	}
	// And the home refuses a worker's result of another version, or one
	// from a walkie that says none.
	h := &Home{carry: w.carry}
	for _, r := range []Hello{{Protocol: Protocol, Build: "v0.9.0"}, {}} {
		if err := h.checkWorker("w-old", r); err == nil || !strings.Contains(err.Error(), "w-old") || !strings.Contains(err.Error(), testBuild) {
			t.Fatalf("result of %+v: %v", r, err)
		}
	}
	if err := h.checkWorker("w", own); err != nil {
		t.Fatal(err)
	}
}

// fileInput is a reviewer's attempt as a home sends it: its sandbox
// (the record, a workspace, where the verdict goes) packed, and the job
// naming the home's sandbox.
func fileInput(t *testing.T, w *Worker) FileInput {
	t.Helper()
	home := filepath.Join(t.TempDir(), "walkie-review-123456")
	box := packFiles(t, w, home, map[string]string{"r.walkie.md": "the record\n", "workspace/x.txt": "x\n", "workspace/y.txt": "y\n"})
	must(t, os.RemoveAll(home)) // the worker makes its own
	verdict := filepath.Join(home, "verdict.json")
	return FileInput{Hello: homeHello(w), Debate: "d", Role: "reviewer", Session: config.RoleReviewer, Reach: engine.FolderReach(home), Turn: 2, Round: 1, Attempt: 1, Agent: "alice", Sandbox: box, Home: home,
		Prompt: "Review " + filepath.Join(home, "r.walkie.md") + " and write " + verdict + ".", Dir: home, Result: verdict, Done: "the verdict is in",
		Vars:   config.Vars{File: filepath.Join(home, "r.walkie.md"), Dir: home, Agent: "alice", Turn: 2, Round: 1},
		Env:    []string{"WALKIE_VERDICT=" + verdict, "WALKIE_WORKSPACE=" + filepath.Join(home, "workspace")},
		Timing: Timing{Timeout: 20 * time.Second, Stall: 10 * time.Second, Grace: 100 * time.Millisecond, KillGrace: 500 * time.Millisecond},
		Kind:   "verdict", Limit: 64 << 10, Name: "verdict.json", Words: engine.FileWords{Stopped: "review", Written: "verdict recorded", Writer: "reviewer", File: "verdict", Missing: "no verdict file was written"},
		Watch: "workspace"}
}

// packFiles writes files (path: content) under dir and packs dir into
// w's blob store, as a home sends a sandbox or a workspace.
func packFiles(t *testing.T, w *Worker, dir string, files map[string]string) Blob {
	t.Helper()
	writeFiles(t, dir, files)
	list, err := packDir(dir)
	must(t, err)
	b, err := w.carry.putWith(t.Context(), func(wr io.Writer) error { return pack(wr, list) })
	must(t, err)
	return b
}

// writeFiles writes files (path: content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(c), 0o644))
	}
}

func runFileActivity(t *testing.T, w *Worker, in FileInput) (FileOutput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(sdkLogger{zap.NewNop().Sugar()})
	env := s.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(w.File, activity.RegisterOptions{Name: ActFile})
	v, err := env.ExecuteActivity(ActFile, in)
	if err != nil {
		return FileOutput{}, err
	}
	var out FileOutput
	must(t, v.Get(&out))
	return out, nil
}

// A reviewer's session runs in a sandbox of the worker's own, unpacked
// from the home's: its prompt, working directory and environment name
// that sandbox, never the home's; the verdict comes back as read, with
// what it changed in its copy of the workspace, and nothing is left.
func TestFileSessionRunsInASandboxOfItsOwn(t *testing.T) {
	// The home's reach names a folder of its machine besides its sandbox:
	// on the worker that path is another machine's, and is not granted.
	outside := t.TempDir()
	w := newTestWorker(t, `[sh, -c, 'echo "prompt: $0"; echo "cwd: $(pwd)"; echo leak > `+outside+`/leak || echo "outside refused"; echo changed > "$WALKIE_WORKSPACE/x.txt"; rm "$WALKIE_WORKSPACE/y.txt"; printf "{\"verdict\": \"approve\", \"objections\": []}" > "$WALKIE_VERDICT"; sleep 5', "{prompt}"]`, "")
	in := fileInput(t, w)
	in.Reach.Write = append(in.Reach.Write, outside)
	out, err := runFileActivity(t, w, in)
	must(t, err)
	text := string(got(t, w, &out.Text))
	if _, err := os.Stat(filepath.Join(outside, "leak")); err == nil || !strings.Contains(text, "outside refused") {
		t.Fatalf("the session wrote beside the home's sandbox (%v):\n%s", err, text)
	}
	if strings.Contains(text, in.Home) || !strings.Contains(text, "prompt: Review /") {
		t.Fatalf("the session saw the home's sandbox:\n%s", text)
	}
	cwd := regexpFind(text, `cwd: (\S+)`)
	if !strings.Contains(text, "prompt: Review "+filepath.Join(cwd, "r.walkie.md")+" and write "+filepath.Join(cwd, "verdict.json")) {
		t.Fatalf("the prompt does not name the sandbox it runs in (%s):\n%s", cwd, text)
	}
	if v := got(t, w, out.File); !bytes.Contains(v, []byte(`"approve"`)) || !out.Wrote || out.Bad != "" || out.Session.Stop != "" {
		t.Fatalf("the verdict %q (wrote %v, bad %q)", v, out.Wrote, out.Bad)
	}
	if want := []tree.Change{{Path: "x.txt", Kind: tree.Modified}, {Path: "y.txt", Kind: tree.Removed}}; !slices.Equal(out.Changed, want) {
		t.Fatalf("changes %v, want %v", out.Changed, want)
	}
	if out.Worker != "test-worker" || out.Hello != w.carry.says() || out.Session.EndedBy == "" {
		t.Fatalf("result %+v", out)
	}
	if _, err := os.Stat(cwd); !os.IsNotExist(err) {
		t.Fatalf("the sandbox %s is left", cwd)
	}
	// A file of a kind this worker cannot check is refused, and so is a
	// file session in a role that is not one (a debater's reaches more).
	bad := in
	bad.Kind = "poem"
	if _, err := runFileActivity(t, w, bad); err == nil || !strings.Contains(err.Error(), `kind "poem"`) {
		t.Fatalf("a file of an unknown kind: %v", err)
	}
	for _, role := range []string{"", config.RoleDebater, config.RoleImplementer} {
		bad = in
		bad.Session = role
		if _, err := runFileActivity(t, w, bad); err == nil || !strings.Contains(err.Error(), "role") {
			t.Fatalf("a file session as %q: %v", role, err)
		}
	}
}

// A round table's implementer changes a copy of the workspace laid out
// around the copy of the record as at home, with the approved phases
// where the home keeps them; its prompt names the copies; what it
// changed comes back.
func TestImplementerTurnChangesACopyOfTheWorkspace(t *testing.T) {
	w := newTestWorker(t, `[sh, -c, 'echo "prompt: $0"; cat .walkie/d/phases/plan.md; echo changed >> .walkie/d/phases/plan.md || echo "phases refused"; echo integers > work/calc; rm work/old; printf "\n## Turn 1 · alice\nDone.\n" >> "$1"', "{prompt}", "{file}"]`, "")
	in := turnInput(t, w)
	packedFiles := packFiles(t, w, t.TempDir(), map[string]string{"workspace/calc": "floats\n", "workspace/old": "old\n", "workspace/keep": "keep\n", "phases/plan.md": "# the spec\n"})
	in.Implementer = &ImplementerTurn{Template: "Work on {{.Workspace}} as in {{.File}}; the spec is {{.Spec.Path}}.", Files: packedFiles, Workspace: "work",
		Data: config.ImplementerPromptData{Agent: "alice", File: "/home/d.walkie.md", Workspace: "/home/work",
			Phases: []config.PhaseFile{{Phase: "plan", Agent: "bob", Path: "/home/.walkie/d/phases/plan.md"}}, Spec: &config.PhaseFile{Phase: "plan", Agent: "bob", Path: "/home/.walkie/d/phases/plan.md"}}}
	r, err := runTurnActivity(t, w, in, nil)
	must(t, err)
	text := string(got(t, w, &r.Text))
	work := filepath.Join(r.Kept, "work")
	want := "prompt: Work on " + filepath.Join(work, "work") + " as in " + filepath.Join(work, "d.walkie.md") + "; the spec is " + filepath.Join(work, ".walkie", "d", "phases", "plan.md") + "."
	if !strings.Contains(text, want) || !strings.Contains(text, "# the spec") || !strings.Contains(text, "phases refused") || strings.Contains(text, "/home/") {
		t.Fatalf("the session saw:\n%s\nwant %q", text, want)
	}
	ws := r.Workspace
	if ws == nil || !slices.Equal(ws.Changed, []tree.Change{{Path: "calc", Kind: tree.Modified}, {Path: "old", Kind: tree.Removed}}) {
		t.Fatalf("changes %+v", ws)
	}
	back := t.TempDir()
	rc, err := w.carry.open(t.Context(), ws.Files)
	must(t, err)
	defer rc.Close()
	must(t, unpack(rc, back, nil))
	if b, _ := os.ReadFile(filepath.Join(back, "calc")); string(b) != "integers\n" {
		t.Fatalf("calc came back as %q", b)
	}
	if ents, _ := os.ReadDir(back); len(ents) != 1 {
		t.Fatalf("more than the change came back: %v", ents)
	}
	// An empty workspace (an empty directory at home packs to nothing) is
	// a workspace the agent can write in.
	var none bytes.Buffer
	must(t, pack(&none, nil))
	in.Implementer.Files = Blob{Data: none.Bytes()}
	r, err = runTurnActivity(t, w, in, nil)
	must(t, err)
	if r.Workspace == nil || !slices.Equal(r.Workspace.Changed, []tree.Change{{Path: "calc", Kind: tree.Added}}) {
		t.Fatalf("in an empty workspace: %+v (%s)", r.Workspace, got(t, w, &r.Text))
	}
}

// At home, what a remote implementer changed goes into the workspace, and
// never into the record or its state directory, whatever the worker said.
func TestLandPutsTheChangesIntoTheWorkspaceOnly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rt.walkie.md")
	must(t, walkie.Init(file, walkie.InitOptions{MaxRounds: 2, Briefing: []byte("Build it.\n"), Mode: walkie.ModeRoundtable,
		Implementer: "impl", Reviewers: []string{"rev"}, Grader: walkie.Command{Shell: "true"}, Workspace: "."}))
	record, _ := os.ReadFile(file)
	must(t, os.WriteFile(filepath.Join(dir, "gone"), []byte("x"), 0o644))
	w := newTestWorker(t, `[true]`, "")
	b := packFiles(t, w, t.TempDir(), map[string]string{"calc": "integers\n", "rt.walkie.md": "forged\n", ".walkie/rt/state.json": "{}"})
	h := &Home{carry: w.carry}
	hm, err := controller.OpenHome(controller.Options{File: file, Config: config.Default()})
	must(t, err)
	defer hm.Close()
	changes := &WorkspaceChanges{Files: b, Changed: []tree.Change{{Path: "calc", Kind: tree.Added}, {Path: "gone", Kind: tree.Removed},
		{Path: "rt.walkie.md", Kind: tree.Removed}, {Path: ".walkie", Kind: tree.Removed}}}
	must(t, h.land(t.Context(), hm, changes))
	if got, _ := os.ReadFile(filepath.Join(dir, "calc")); string(got) != "integers\n" {
		t.Fatalf("calc at home: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Fatal("a removed file stays")
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, record) {
		t.Fatalf("the record was changed:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, ".walkie", "rt")); err != nil {
		t.Fatalf("the state directory went: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, ".walkie", "rt", "state.json")); err == nil && string(got) == "{}" {
		t.Fatal("the worker's state.json was written")
	}
}

func regexpFind(s, re string) string {
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

// A session's workflow id is the same for the same attempt of the same
// homing of a debate (a restarted home finds the session it started), and
// another for a debate homed anew under the same id (made again, or taken
// back and homed again), which must never find the sessions of the one
// before and record their results.
func TestSessionIDsAreTheHomings(t *testing.T) {
	dir := t.TempDir()
	in := FileInput{Debate: "rt", Role: "reviewer", Turn: 2, Agent: "cy", Attempt: 1}
	mark := func(since time.Time) string {
		t.Helper()
		must(t, controller.MarkHome(dir, controller.HomeMark{Engine: EngineName, Queue: "q", Since: since}))
		id, err := sessionID(dir, in)
		must(t, err)
		return id
	}
	first := mark(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	if again := mark(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)); again != first {
		t.Fatalf("the same homing: %q, then %q", first, again)
	}
	if anew := mark(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)); anew == first || !strings.HasPrefix(anew, "rt/") {
		t.Fatalf("homed anew: %q, first %q", anew, first)
	}
	in.Attempt = 2
	if next, _ := sessionID(dir, in); next == first {
		t.Fatal("the next attempt has the same id")
	}
}
