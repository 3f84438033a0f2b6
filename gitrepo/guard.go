package gitrepo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A session in a worktree shares the repository's .git with the person
// who owns it: it can move their branches, forge tags, stage files in
// their index and leave hooks or config for the next git to run. A Guard
// is what the session must leave as it found: taken before the session,
// checked after it, and whatever changed is put back and reported
// (docs/review-threads.md, "Worktrees").

// Guard is a repository's state a session may not change: every ref
// outside the refs it may write, the work tree's HEAD and the tree its
// index holds, the shared config and hooks.
type Guard struct {
	allowed string
	refs    map[string]refValue
	head    refValue
	index   string // the index's tree; "" when it has none (unmerged)
	common  string // the common git directory
	config  []byte
	hooks   map[string]hookFile
}

type refValue struct {
	SHA    string `json:"sha,omitempty"`
	Symref string `json:"symref,omitempty"`
}

func (v refValue) String() string {
	if v.Symref != "" {
		return "-> " + v.Symref
	}
	return short(v.SHA)
}

// hookFile is one entry under the hooks directory.
type hookFile struct {
	Mode fs.FileMode `json:"mode"`
	Data []byte      `json:"data,omitempty"` // content, or a link's target
}

// guardJSON is a Guard on disk: a controller killed while the session
// runs leaves it for the next one, which puts back what the session
// changed before it runs git there again.
type guardJSON struct {
	Allowed string              `json:"allowed"`
	Refs    map[string]refValue `json:"refs"`
	Head    refValue            `json:"head"`
	Index   string              `json:"index,omitempty"`
	Common  string              `json:"common"`
	Config  []byte              `json:"config"`
	Hooks   map[string]hookFile `json:"hooks,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (g *Guard) MarshalJSON() ([]byte, error) {
	return json.Marshal(guardJSON{Allowed: g.allowed, Refs: g.refs, Head: g.head, Index: g.index, Common: g.common, Config: g.config, Hooks: g.hooks})
}

// UnmarshalJSON implements json.Unmarshaler.
func (g *Guard) UnmarshalJSON(b []byte) error {
	var j guardJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Common == "" || j.Config == nil {
		return errors.New("a guard without the repository's git directory or config")
	}
	*g = Guard{allowed: j.Allowed, refs: j.Refs, head: j.Head, index: j.Index, common: j.Common, config: j.Config, hooks: j.Hooks}
	if g.refs == nil {
		g.refs = map[string]refValue{}
	}
	if g.hooks == nil {
		g.hooks = map[string]hookFile{}
	}
	return nil
}

// maxHooksBytes bounds what a guard keeps of the hooks directory; a
// larger one is refused rather than left unguarded.
const maxHooksBytes = 8 << 20

// Guard takes the repository's state before a session. Refs under
// allowed (a prefix such as "refs/heads/walkie/ID/") are the session's
// to write.
func (r *Repo) Guard(ctx context.Context, allowed string) (*Guard, error) {
	g := &Guard{allowed: allowed}
	var err error
	if g.refs, err = r.refValues(ctx, allowed); err != nil {
		return nil, fmt.Errorf("guard the repository's refs: %w", err)
	}
	if g.head, err = r.headValue(ctx); err != nil {
		return nil, fmt.Errorf("guard the repository's HEAD: %w", err)
	}
	g.index = r.indexTree(ctx)
	if g.common, err = r.commonDir(ctx); err != nil {
		return nil, err
	}
	if g.config, err = os.ReadFile(filepath.Join(g.common, "config")); err != nil {
		return nil, fmt.Errorf("guard the repository's config: %w", err)
	}
	if g.hooks, err = readHooks(filepath.Join(g.common, "hooks")); err != nil {
		return nil, fmt.Errorf("guard the repository's hooks: %w", err)
	}
	return g, nil
}

// Allowed is the prefix of the refs the guard leaves to the session.
func (g *Guard) Allowed() string { return g.allowed }

// Restore compares the repository with the guard, puts back what
// changed, and says what that was: nil when nothing did. A branch moved
// forward by commits of walkie records only is no change. The error is
// for a change it could not undo (the list names what it found).
func (r *Repo) Restore(ctx context.Context, g *Guard) ([]string, error) {
	var changed []string
	var errs []error
	note := func(what string, err error) {
		changed = append(changed, what)
		if err != nil {
			errs = append(errs, fmt.Errorf("put back %s: %w", what, err))
		}
	}
	// Config and hooks first: the git below must not run what they hold
	// (the policy disables most of it; a filter driver it cannot).
	if now, err := os.ReadFile(filepath.Join(g.common, "config")); err != nil || !bytes.Equal(now, g.config) {
		note("changed .git/config", writeLocked(filepath.Join(g.common, "config"), g.config))
	}
	restoreHooks(filepath.Join(g.common, "hooks"), g.hooks, note)
	if err := r.restoreRefs(ctx, g, note); err != nil {
		errs = append(errs, err)
	}
	if g.index != "" {
		if now := r.indexTree(ctx); now != g.index {
			code, records, err := r.treeChanges(ctx, g.index, now)
			if err != nil || len(code) > 0 {
				note("changed the index of "+r.Root, errors.Join(err, r.putIndex(ctx, g.index, now, records)))
			}
		}
	}
	return changed, errors.Join(errs...)
}

// restoreRefs puts the refs and HEAD back as the guard has them, calling
// note for each change; the error is for refs it could not read.
func (r *Repo) restoreRefs(ctx context.Context, g *Guard, note func(string, error)) error {
	refs, err := r.refValues(ctx, g.allowed)
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(g.refs, refs) {
		was, had := g.refs[name]
		now, has := refs[name]
		switch {
		case had && has && was == now:
		case had && has && r.recordsOnly(ctx, name, was, now):
		case !had:
			note(fmt.Sprintf("made %s (at %s)", name, now), r.putRef(ctx, name, refValue{}, now))
		case !has:
			note(fmt.Sprintf("deleted %s (it was at %s)", name, was), r.putRef(ctx, name, was, refValue{}))
		default:
			note(fmt.Sprintf("moved %s from %s to %s", name, was, now), r.putRef(ctx, name, was, now))
		}
	}
	head, err := r.headValue(ctx)
	if err != nil {
		return err
	}
	if head != g.head {
		note(fmt.Sprintf("moved HEAD from %s to %s", g.head, head), r.putRef(ctx, "HEAD", g.head, head))
	}
	return nil
}

// recordsOnly reports whether a branch moved forward through record
// commits alone (each names its entry's hash, as CommitMessage writes it)
// that change nothing but walkie records: another thread's git: commit,
// which changes no code, is no session's tampering.
func (r *Repo) recordsOnly(ctx context.Context, name string, was, now refValue) bool {
	if !strings.HasPrefix(name, "refs/heads/") || was.SHA == "" || now.SHA == "" || was.Symref != "" || now.Symref != "" {
		return false
	}
	if same, err := r.Unchanged(ctx, was.SHA, now.SHA); err != nil || !same {
		return false
	}
	out, err := r.output(ctx, nil, "log", "--format=%x00%(trailers:key=Walkie-Hash,valueonly,separator=%x20)", was.SHA+".."+now.SHA)
	if err != nil {
		return false
	}
	for _, c := range strings.Split(out, "\x00")[1:] {
		if strings.TrimSpace(c) == "" {
			return false
		}
	}
	return true
}

// refValues is every ref but those under allowed, with what it holds.
func (r *Repo) refValues(ctx context.Context, allowed string) (map[string]refValue, error) {
	out, err := r.output(ctx, nil, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)")
	if err != nil {
		return nil, err
	}
	refs := map[string]refValue{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\x00")
		if len(f) != 3 || (allowed != "" && strings.HasPrefix(f[0], allowed)) {
			continue
		}
		refs[f[0]] = refValue{SHA: f[1], Symref: f[2]}
	}
	return refs, nil
}

// headValue is what the work tree's HEAD holds: the branch it is on, or
// the commit it is detached at.
func (r *Repo) headValue(ctx context.Context) (refValue, error) {
	out, err := r.output(ctx, nil, "symbolic-ref", "--quiet", "HEAD")
	if err == nil {
		return refValue{Symref: strings.TrimSpace(out)}, nil
	}
	if ExitCode(err) != 1 {
		return refValue{}, err
	}
	sha, err := r.revParse(ctx, "HEAD")
	return refValue{SHA: sha}, err
}

// indexTree is the tree the work tree's index holds, "" when it cannot
// be written as one.
func (r *Repo) indexTree(ctx context.Context) string {
	out, err := r.output(ctx, nil, "write-tree")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// treeChanges lists the paths that differ between two trees: those of
// code, and those of walkie records (which another thread's record
// commits change in the index, as they commit).
func (r *Repo) treeChanges(ctx context.Context, a, b string) (code, records []string, err error) {
	out, err := r.output(ctx, nil, "diff-tree", "-r", "-z", "--name-only", "--no-renames", a, b)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range strings.Split(out, "\x00") {
		switch {
		case p == "":
		case recordPath(p):
			records = append(records, p)
		default:
			code = append(code, p)
		}
	}
	return code, records, nil
}

// putIndex makes the index hold tree again, but for the record paths,
// which keep what they hold in now.
func (r *Repo) putIndex(ctx context.Context, tree, now string, records []string) error {
	if _, err := r.run(ctx, nil, nil, "read-tree", tree); err != nil {
		return err
	}
	if len(records) > 0 {
		args := []string{"reset", "--quiet", now, "--"}
		for _, p := range records {
			args = append(args, ":(literal)"+p)
		}
		if _, err := r.run(ctx, nil, nil, args...); err != nil {
			return err
		}
	}
	// The stat information read-tree dropped, so status is quick again.
	_, _ = r.run(ctx, nil, nil, "update-index", "-q", "--refresh")
	return nil
}

func (r *Repo) commonDir(ctx context.Context) (string, error) {
	out, err := r.output(ctx, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("find the repository's git directory: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// putRef sets ref back to was from now, only if it still holds now: a
// ref someone moved again meanwhile is reported, not overwritten.
func (r *Repo) putRef(ctx context.Context, ref string, was, now refValue) error {
	if was.Symref != "" {
		_, err := r.run(ctx, nil, nil, "symbolic-ref", ref, was.Symref)
		return err
	}
	if ref == "HEAD" {
		// Detached again: HEAD itself is never deleted on the way.
		_, err := r.run(ctx, nil, nil, "update-ref", "--no-deref", "-m", "walkie: put back what a session changed", "HEAD", was.SHA)
		return err
	}
	if now.Symref != "" {
		// A symbolic ref in place of a plain one: drop the link itself.
		if _, err := r.run(ctx, nil, nil, "update-ref", "--no-deref", "-d", ref); err != nil {
			return err
		}
		now = refValue{}
	}
	// The zero id (as long as the repository's ids) is "must not exist".
	old := cmp.Or(now.SHA, strings.Repeat("0", len(was.SHA)))
	if was.SHA == "" {
		_, err := r.run(ctx, nil, nil, "update-ref", "--no-deref", "-d", ref, old)
		return err
	}
	_, err := r.run(ctx, nil, nil, "update-ref", "--no-deref", "-m", "walkie: put back what a session changed", ref, was.SHA, old)
	return err
}

// readHooks reads every file and link under dir (absent: none).
func readHooks(dir string) (map[string]hookFile, error) {
	hooks := map[string]hookFile{}
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		var h hookFile
		h.Mode = fi.Mode()
		switch {
		case p == dir:
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Data = []byte(target)
		case d.Type().IsRegular():
			if h.Data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		if total += len(h.Data); total > maxHooksBytes {
			return fmt.Errorf("%s holds more than %d bytes", dir, maxHooksBytes)
		}
		hooks[rel] = h
		return nil
	})
	return hooks, err
}

// restoreHooks puts the hooks directory back as it was: what is new goes,
// what changed or went is written again. It calls note for each.
func restoreHooks(dir string, was map[string]hookFile, note func(string, error)) {
	now, err := readHooks(dir)
	if err != nil {
		note("changed .git/hooks (unreadable now)", err)
		return
	}
	for _, rel := range sortedKeys(now, nil) {
		if _, ok := was[rel]; !ok {
			note("added .git/hooks/"+filepath.ToSlash(rel), os.RemoveAll(filepath.Join(dir, rel)))
		}
	}
	for _, rel := range sortedKeys(was, nil) {
		h := was[rel]
		if n, ok := now[rel]; ok && n.Mode == h.Mode && bytes.Equal(n.Data, h.Data) {
			continue
		}
		note("changed .git/hooks/"+filepath.ToSlash(rel), putHook(filepath.Join(dir, rel), h))
	}
}

func putHook(path string, h hookFile) error {
	if h.Mode.IsDir() {
		if err := os.MkdirAll(path, h.Mode.Perm()); err != nil {
			return err
		}
		return os.Chmod(path, h.Mode.Perm())
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if h.Mode&fs.ModeSymlink != 0 {
		return os.Symlink(string(h.Data), path)
	}
	if err := os.WriteFile(path, h.Data, h.Mode.Perm()); err != nil {
		return err
	}
	return os.Chmod(path, h.Mode.Perm())
}

// writeLocked replaces path with data as git does, through path.lock:
// a git holding the lock makes it fail rather than race.
func writeLocked(path string, data []byte) error {
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
	}
	return err
}

// sortedKeys is the keys of a and b, once each, sorted.
func sortedKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
