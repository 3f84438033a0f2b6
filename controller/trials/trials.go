// Package trials runs repeated trials of a debate or round table: N
// independent copies of it (record, briefing, approved phases and
// workspace copied, new ids), each an ordinary debate that walkie show,
// report and verify work on, and the distribution of how they went,
// computed from the copies alone. Multi-agent behaviour is a
// distribution, not a number: the same task ran three rounds, then two,
// then one.
package trials

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure a set of trials.
type Options struct {
	File string // the source: a debate or round table that has not begun
	N    int    // copies to make and run
	// Parallel is how many copies run at once (default 1). The config's
	// limits (max_sessions, per-agent limits) apply across all of them.
	Parallel int
	// Dir holds the copies; default FILE's directory/ID.trials. Copies
	// already there are kept and counted: new ones are numbered after.
	Dir     string
	Config  *config.Config
	Cast    map[string]string
	Approve bool // approve the briefing, and phases not yet approved, in every copy
	Log     *zap.Logger
	// Acquire, when set, is every session's slot (the config's limits).
	Acquire controller.AcquireFunc
	// Done is told of each copy as its run ends (from several goroutines).
	Done func(Trial)
}

// ErrSource marks a source that cannot be copied as it is.
var ErrSource = errors.New("cannot make trials of it")

// Run makes o.N copies of o.File and runs them, o.Parallel at a time. It
// returns the summary of every copy in the directory. A copy whose run
// fails keeps its record: its trial is reported as it stands.
func Run(ctx context.Context, o Options) (*Summary, error) {
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.N < 1 {
		return nil, fmt.Errorf("trials: -n must be at least 1 (got %d)", o.N)
	}
	o.Parallel = max(1, o.Parallel)
	src, err := filepath.Abs(o.File)
	if err != nil {
		return nil, err
	}
	d, err := checkSource(src, o.Approve)
	if err != nil {
		return nil, err
	}
	if err := checkAgentPaths(src, d, o.Config, o.Cast); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		o.Dir = DefaultDir(src, d.Meta.ID)
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, err
	}
	files, err := makeCopies(ctx, src, d, o.Dir, o.N)
	if err != nil {
		return nil, err
	}
	runAll(ctx, o, files)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("trials interrupted (the copies stand; walkie auto continues one): %w", err)
	}
	return Summarize(o.Dir)
}

// DefaultDir is where the trials of the record file with id go.
func DefaultDir(file, id string) string { return filepath.Join(filepath.Dir(file), id+".trials") }

// checkSource loads and checks the source: it verifies, it has no turns
// (its workspace is then still at the start), its briefing is approved
// (or will be), and its phases are approved (copied into every trial) or
// will be run by each copy.
func checkSource(src string, approve bool) (*walkie.Doc, error) {
	d, err := walkie.Load(src)
	if err != nil {
		return nil, err
	}
	if err := d.Verify(); err != nil {
		return nil, err
	}
	if n := d.Progress().Turns; n > 0 {
		return nil, fmt.Errorf("%w: %s has %s, so its workspace is no longer where the task starts; make trials of a record that has not begun (a new one with the same front matter and briefing)", ErrSource, src, walkie.Count(n, "turn", "turns"))
	}
	if d.Meta.BriefingSHA256 == "" && !approve {
		return nil, fmt.Errorf("%w: the briefing of %s is not approved: run walkie brief approve %s first, or pass --approve", ErrSource, src, src)
	}
	pins := roundtable.PhasePins(d)
	for _, p := range d.Meta.Phases {
		if _, ok := pins[p.Kind]; !ok && !approve {
			return nil, fmt.Errorf("%w: the %s phase of %s is not approved: approve it first (every trial then starts from the same %s), or pass --approve (each trial then writes its own)", ErrSource, p.Kind, src, p.Kind)
		}
	}
	return d, nil
}

// copyDirRe names a copy's directory: its number.
var copyDirRe = regexp.MustCompile(`^[1-9][0-9]*$`)

// makeCopies makes n new copies under dir, numbered after those there.
func makeCopies(ctx context.Context, src string, d *walkie.Doc, dir string, n int) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	have, err := copies(dir)
	if err != nil {
		return nil, err
	}
	next := 1
	for _, c := range have {
		next = max(next, c.n+1)
	}
	var files []string
	for k := next; k < next+n; k++ {
		f, err := makeCopy(ctx, src, d, dir, k)
		if err != nil {
			return files, fmt.Errorf("trial %d: %w", k, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// CopyOf reports whether file is a trial's copy as walkie trials lays
// them out (DIR/K/ID-K.walkie.md), and if so the trials directory DIR and
// the copy's number K. It looks at the path alone.
func CopyOf(file string) (dir string, n int, ok bool) {
	k := filepath.Base(filepath.Dir(file))
	if !copyDirRe.MatchString(k) || !strings.HasSuffix(filepath.Base(file), "-"+k+walkie.FileSuffix) {
		return "", 0, false
	}
	n, err := strconv.Atoi(k)
	if err != nil {
		return "", 0, false
	}
	return filepath.Dir(filepath.Dir(file)), n, true
}

// aCopy is one copy found in a trials directory.
type aCopy struct {
	n    int
	file string
}

// copies lists the copies in dir, by number: each is dir/K/ID.walkie.md.
func copies(dir string) ([]aCopy, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []aCopy
	for _, e := range ents {
		if !e.IsDir() || !copyDirRe.MatchString(e.Name()) {
			continue
		}
		n, _ := strconv.Atoi(e.Name())
		m, err := filepath.Glob(filepath.Join(dir, e.Name(), "*.walkie.md"))
		if err != nil {
			return nil, err
		}
		if len(m) != 1 {
			return nil, fmt.Errorf("%s: want one walkie file in a trial's directory, found %d", filepath.Join(dir, e.Name()), len(m))
		}
		out = append(out, aCopy{n, m[0]})
	}
	slices.SortFunc(out, func(a, b aCopy) int { return a.n - b.n })
	return out, nil
}

// runAll runs the copies, o.Parallel at a time.
func runAll(ctx context.Context, o Options, files []string) {
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for _, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			log := o.Log.With(zap.String("trial", filepath.Base(filepath.Dir(f))))
			_, err := controller.Run(ctx, controller.Options{File: f, Config: o.Config, Cast: o.Cast, Approve: o.Approve, Log: log, Acquire: o.Acquire})
			if err != nil {
				log.Warn("the trial's run stopped on an error; its record stands", zap.Error(err))
				// The record cannot say why it stopped: the copy's
				// report reads it from here.
				if werr := walkie.WriteFileAtomic(stoppedPath(f), []byte(err.Error()+"\n"), 0o644); werr != nil {
					log.Warn("why the trial stopped was not kept", zap.Error(werr))
				}
			}
			if o.Done != nil {
				t, terr := loadTrial(f)
				if terr != nil {
					t = Trial{File: f, Status: "unreadable", Reason: terr.Error()}
				}
				if err != nil && t.Reason == "" {
					t.Reason = err.Error()
				}
				o.Done(t)
			}
		}()
	}
	wg.Wait()
}

// makeCopy writes trial k of the source: dir/K/ID-K.walkie.md with the
// source's front matter (a new id; its workspace at the same relative
// path, else "workspace"; {dir} in the grader made the source's directory,
// where hidden tests live), its briefing, its approved phases, and a copy
// of its workspace.
func makeCopy(ctx context.Context, src string, d *walkie.Doc, dir string, k int) (string, error) {
	m := d.Meta
	m.ID = fmt.Sprintf("%s-%d", m.ID, k)
	home := filepath.Join(dir, strconv.Itoa(k))
	if err := os.Mkdir(home, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(home, m.ID+".walkie.md")
	if m.IsRoundtable() {
		srcWS := m.Workspace
		if !filepath.IsAbs(srcWS) {
			srcWS = filepath.Join(filepath.Dir(src), srcWS)
		}
		rel := filepath.Clean(m.Workspace)
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || strings.HasPrefix(rel, ".walkie") {
			rel = "workspace"
		}
		m.Workspace = rel
		if err := roundtable.CopyWorkspace(ctx, srcWS, filepath.Join(home, rel), []string{src, filepath.Join(filepath.Dir(src), ".walkie"), dir}); err != nil {
			return "", fmt.Errorf("copy the workspace: %w", err)
		}
		m.Grader = withDir(m.Grader, filepath.Dir(src))
	}
	if err := walkie.InitCopy(file, m, d.Briefing); err != nil {
		return "", err
	}
	if err := roundtable.CopyApprovedPhases(src, file); err != nil {
		return "", fmt.Errorf("copy the approved phases: %w", err)
	}
	return file, nil
}

// withDir replaces {dir} in a grader command with dir.
func withDir(c walkie.Command, dir string) walkie.Command {
	r := strings.NewReplacer("{dir}", dir)
	if c.Shell != "" {
		return walkie.Command{Shell: r.Replace(c.Shell)}
	}
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = r.Replace(a)
	}
	return walkie.Command{Argv: argv}
}

// StoppedFile, beside a copy's record, says why its run stopped on an
// error (an agent that cannot start, a record that does not verify): the
// record itself is still open and cannot say.
const StoppedFile = "stopped.txt"

func stoppedPath(file string) string { return filepath.Join(filepath.Dir(file), StoppedFile) }

// checkAgentPaths refuses, before any copy is made, an agent whose
// command or environment names a file beside the source through {dir}.
// In a trial {dir} is the copy's own directory (DIR/K), which holds its
// record and a round table's workspace copy only: every copy would fail
// to find the file.
func checkAgentPaths(src string, d *walkie.Doc, cfg *config.Config, cast map[string]string) error {
	srcDir := filepath.Dir(src)
	for _, p := range d.Meta.Participants {
		a, err := cfg.Agent(cmp.Or(cast[p], p))
		if err != nil {
			continue // a person, or a name the run refuses with its own words
		}
		args := slices.Clone(a.Command)
		for _, k := range slices.Sorted(maps.Keys(a.Env)) {
			args = append(args, a.Env[k])
		}
		for _, arg := range args {
			rel, ok := dirPath(arg)
			if !ok || d.Meta.IsRoundtable() && inside(rel, d.Meta.Workspace) {
				continue
			}
			if _, err := os.Stat(filepath.Join(srcDir, rel)); err != nil {
				continue
			}
			return &walkie.InputError{File: cmp.Or(cfg.Path, config.FileName),
				Msg: fmt.Sprintf("agents.%s names {dir}/%s, and in a trial {dir} is the copy's own directory (DIR/K/), which holds the record and a round table's workspace only, not %s", a.Name, filepath.ToSlash(rel), filepath.ToSlash(rel)),
				Fix: fmt.Sprintf("name the file by its absolute path (%s), or move it into the workspace", filepath.Join(srcDir, rel))}
		}
	}
	return nil
}

// dirPath is the path an argument names under {dir} ("--script={dir}/a.yaml"
// → "a.yaml").
func dirPath(arg string) (string, bool) {
	_, tail, ok := strings.Cut(arg, "{dir}/")
	if !ok {
		return "", false
	}
	if i := strings.IndexAny(tail, " \t'\";,"); i >= 0 {
		tail = tail[:i]
	}
	rel := filepath.Clean(filepath.FromSlash(tail))
	return rel, tail != "" && filepath.IsLocal(rel)
}

// inside reports whether rel is dir or below it (both relative).
func inside(rel, dir string) bool {
	r, err := filepath.Rel(filepath.Clean(dir), rel)
	return err == nil && filepath.IsLocal(r)
}
