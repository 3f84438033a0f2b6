package controller

import (
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

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

// Review threads (docs/review-threads.md): the repository a record is
// bound to answers the judge about refs; every recorded entry becomes a
// commit of the record (git: commit); unattended sessions run in git
// worktrees of their own (workspace: worktree).

// resolver is the bound repository as the judge asks it; nil for a record
// bound to none.
func (c *controller) resolver(ctx context.Context, m *walkie.Meta) (walkie.RefResolver, error) {
	if !m.Bound() {
		return nil, nil
	}
	r, err := gitrepo.Open(ctx, m.RepoDir(c.file))
	if err != nil {
		return nil, badInput(fmt.Errorf("%s is bound to repo: %s, which walkie cannot read: %w", c.file, m.Repo, err))
	}
	return r.Resolver(ctx), nil
}

// review is what the judge expects of t's turn in a review thread (the
// repository to check its refs in), and the worktree its session runs in,
// set on t.
func (c *controller) review(ctx context.Context, t *plan) (walkie.Expect, error) {
	want, err := c.expect(ctx, t)
	if err != nil {
		return want, err
	}
	d, _, err := c.load()
	if err != nil {
		return want, err
	}
	t.ws, err = c.worktreeFor(ctx, t, d)
	return want, err
}

// expect is what the judge expects of t's turn: its number and author,
// and the repository its refs are checked in.
func (c *controller) expect(ctx context.Context, t *plan) (walkie.Expect, error) {
	want := walkie.Expect{Turn: t.Turn, Agent: t.Participant}
	var err error
	want.Refs, err = c.resolver(ctx, &t.meta)
	return want, err
}

// signStamped signs the verdict this controller just recorded with the
// host's key, when it has one: the merge gate counts a verdict only when
// an allowed signer stands behind it, and an agent can post anything. A
// failure is told; the verdict stays recorded, unsigned.
func (c *controller) signStamped(ctx context.Context, seq int) {
	if c.signer == nil {
		return
	}
	err := walkie.SignEntry(c.file, seq, func(msg []byte) (string, error) { return c.signer.Sign(context.WithoutCancel(ctx), msg) })
	if err != nil {
		c.log.Warn("the verdict was not signed: the merge gate will not count it", zap.Int("seq", seq), zap.Error(err))
		c.emit(Event{Kind: EventNote, Line: fmt.Sprintf("the verdict (seq %d) was not signed: %v", seq, err)})
	}
}

// commitRecord makes the entries recorded since the last commit commits
// of the record, when the debate asks for it. The entries are recorded
// whatever git says; a failure is told, and the next call catches up.
func (c *controller) commitRecord(ctx context.Context) {
	meta, err := walkie.ReadMeta(c.file)
	if err != nil || !meta.CommitsEntries() {
		return
	}
	if c.gitHeld != nil {
		c.log.Warn("git: commit: the record's new entries were not committed", zap.Error(c.gitHeld))
		return
	}
	done, err := gitrepo.CommitEntries(context.WithoutCancel(ctx), c.file)
	if err != nil {
		c.log.Warn("git: commit: the record's new entries were not committed; the next entry's commit catches up", zap.Error(err))
		c.emit(Event{Kind: EventNote, Line: "git: commit failed: " + err.Error()})
		return
	}
	if len(done.Commits) > 0 {
		c.log.Debug("entries committed", zap.Ints("seqs", done.Seqs))
	}
}

// worktree is the git worktree one attempt's session runs in: made on a
// branch of its own, named after the debate and the turn, at the commit
// the record last cites (else the debate's base, else HEAD); removed when
// the session is over, the branch kept only if the session committed.
type worktree struct {
	repo                *gitrepo.Repo
	path, branch, start string
	removed             bool
	// came is where the session's commits came back, once removed: nil
	// when it committed nothing.
	came *walkie.Ref
	// record is the repository the record's commits go to (git: commit)
	// when it is another than repo; the session may reach it too.
	record *gitrepo.Repo
	// guards are what the session must leave as it found, in repo and
	// record: taken before the worktree is made.
	guards []guarded
}

// guarded is one repository's guard.
type guarded struct {
	Root  string         `json:"root"`
	Guard *gitrepo.Guard `json:"guard"`
	repo  *gitrepo.Repo
}

// guardFile is where the guards of the worktree at path are kept while
// its session runs.
func guardFile(path string) string { return path + ".guard.json" }

// worktreeFor is where t's session runs when the debate (workspace:
// worktree) or the agent's config asks for a worktree; nil otherwise. A
// round table keeps its workspace: its reviewers judge a frozen copy of
// it.
func (c *controller) worktreeFor(ctx context.Context, t *plan, d *walkie.Doc) (*worktree, error) {
	m := &t.meta
	if m.IsRoundtable() || (!m.Worktrees() && t.Agent.Workspace != config.WorkspaceWorktree) {
		return nil, nil
	}
	repo, err := c.worktreeRepo(ctx, t)
	if err != nil {
		return nil, err
	}
	from, what := "HEAD", "HEAD"
	if r := d.LastCommitRef(); r != nil {
		from, what = r.SHA, "the last commit the record cites, "+r.String()
	} else if m.Base != "" {
		from, what = m.Base, "the debate's base, "+m.Base
	}
	start, err := repo.Commit(ctx, from)
	if err != nil {
		return nil, err
	}
	if start == "" {
		return nil, badInput(fmt.Errorf("turn %d's worktree would start at %s, which names no commit in %s", t.Turn, what, repo.Root))
	}
	w := &worktree{repo: repo, start: start, branch: turnBranch(m, t.Turn),
		path: filepath.Join(c.dir, "worktrees", fmt.Sprintf("%04d-%s-%d", t.Turn, t.Participant, t.attempt))}
	if m.CommitsEntries() {
		if rr, err := gitrepo.Open(ctx, filepath.Dir(c.file)); err == nil && rr.Root != repo.Root {
			w.record = rr
		}
	}
	return w, nil
}

// worktreeRepo is the repository t's worktree is made in: the one the
// record is bound to, else the one it lies in.
func (c *controller) worktreeRepo(ctx context.Context, t *plan) (*gitrepo.Repo, error) {
	dir := t.meta.RepoDir(c.file)
	if dir == "" {
		dir = filepath.Dir(c.file)
	}
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, badInput(fmt.Errorf("turn %d (%s) is to run in a git worktree, but %w: bind the record with repo: in its front matter", t.Turn, t.Participant, err))
	}
	return repo, nil
}

// turnBranch is the branch a worktree session of turn n runs on.
func turnBranch(m *walkie.Meta, n int) string {
	return fmt.Sprintf("walkie/%s/turn-%d", branchSafe(m.ID), n)
}

// branchSafe makes a debate id (letters, digits, . _ -) a part of a
// branch name git takes.
func branchSafe(id string) string {
	id = strings.ReplaceAll(id, "..", "-")
	if strings.HasSuffix(id, ".lock") || strings.HasSuffix(id, ".") {
		id += "-"
	}
	return id
}

// create makes the worktree, once the repositories it touches are
// guarded. What a crash left at its path goes first.
func (w *worktree) create(ctx context.Context) error {
	if err := w.repo.RemoveWorktree(ctx, w.path); err != nil {
		return err
	}
	w.guards = nil
	for _, r := range []*gitrepo.Repo{w.repo, w.record} {
		if r == nil {
			continue
		}
		g, err := r.Guard(ctx, w.ownRefs())
		if err != nil {
			return err
		}
		w.guards = append(w.guards, guarded{Root: r.Root, Guard: g, repo: r})
	}
	// On disk before the session: a controller killed while it runs
	// (by the session itself, say) leaves what the next one needs to put
	// the repository back.
	b, err := json.Marshal(w.guards)
	if err != nil {
		return err
	}
	if err := walkie.WriteFileAtomic(guardFile(w.path), b, 0o600); err != nil {
		return fmt.Errorf("note the repository's state before the session: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(w.path), 0o755); err != nil {
		return err
	}
	return w.repo.AddWorktree(ctx, w.path, w.branch, w.start)
}

// ownRefs is the prefix of the refs the worktree's session may write.
func (w *worktree) ownRefs() string { return SessionRefs(w.branch) }

// SessionRefs is the prefix of the refs a worktree session on branch (a
// turn's, walkie/ID/turn-N) may write: its debate's branches, walkie/ID/*.
// Any other ref it changes is put back, and its attempt is tampered.
func SessionRefs(branch string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(branch, "walkie/"), "/")
	return "refs/heads/walkie/" + id + "/"
}

// restore puts back what the session changed in the repositories it may
// not change, before anything else of walkie's runs git there, and says
// it as a turn's detail ("" when nothing changed); the error is for what
// could not be put back, or checked. Safe on a nil worktree and when
// called twice.
func (w *worktree) restore(ctx context.Context) (string, error) {
	if w == nil {
		return "", nil
	}
	if w.guards == nil {
		return "", nil
	}
	detail, err := restoreGuards(context.WithoutCancel(ctx), w.guards)
	w.guards = nil
	if err == nil {
		_ = os.Remove(guardFile(w.path))
	}
	return detail, err
}

// restoreGuards puts each repository back as its guard has it, and says
// what that was as a turn's detail ("" when nothing changed).
func restoreGuards(ctx context.Context, guards []guarded) (string, error) {
	var found []string
	var errs []error
	own := ""
	for _, gd := range guards {
		own = strings.TrimPrefix(gd.Guard.Allowed(), "refs/heads/") + "*"
		repo := gd.repo
		if repo == nil {
			repo = &gitrepo.Repo{Root: gd.Root}
		}
		changed, err := repo.Restore(ctx, gd.Guard)
		if len(changed) > 0 {
			found = append(found, fmt.Sprintf("in %s: %s", gd.Root, strings.Join(changed, ", ")))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("in %s: %w", gd.Root, err))
		}
	}
	err := errors.Join(errs...)
	switch {
	case len(found) == 0 && err == nil:
		return "", nil
	case len(found) == 0:
		return "the repository could not be checked after the session", err
	case err != nil:
		return fmt.Sprintf("the session changed the repository outside its branches (%s): %s; walkie could not put all of it back", own, strings.Join(found, "; ")), err
	}
	return fmt.Sprintf("the session changed the repository outside its branches (%s): %s; walkie put it back", own, strings.Join(found, "; ")), nil
}

// env tells the session where it is.
func (w *worktree) env() []string { return WorktreeEnv(w.path, w.branch, w.start) }

// WorktreeEnv tells a session in a worktree where it is: the worktree,
// its branch and the full sha it started at.
func WorktreeEnv(path, branch, start string) []string {
	return []string{"WALKIE_WORKTREE=" + path, "WALKIE_BRANCH=" + branch, "WALKIE_BASE=" + start}
}

// finish removes the worktree and says where its commits came back: the
// branch at its head, or nil when the session committed nothing. It is
// safe on a nil worktree and when called twice.
func (w *worktree) finish(ctx context.Context) (*walkie.Ref, error) {
	if w == nil {
		return nil, nil
	}
	if w.removed {
		return w.came, nil
	}
	ctx = context.WithoutCancel(ctx) // an interrupted run still cleans up
	head, herr := w.repo.Head(ctx, w.branch)
	if err := w.repo.RemoveWorktree(ctx, w.path); err != nil {
		return nil, err
	}
	w.removed = true
	if herr != nil || head == "" || head == w.start {
		return nil, herr
	}
	w.came = branchRef(w.branch, head)
	return w.came, nil
}

// branchRef cites a branch at a commit, as a turn's refs do: by its full
// id, which no other commit can come to share.
func branchRef(branch, sha string) *walkie.Ref {
	return &walkie.Ref{Branch: branch, SHA: sha}
}

// prune deletes the branch of a session that committed nothing, once its
// turn is settled, unless the recorded turn cites it (a ref must keep
// resolving).
func (w *worktree) prune(ctx context.Context, recorded *walkie.EntryBrief) error {
	if w == nil || !w.removed || w.came != nil {
		return nil
	}
	if recorded != nil {
		for _, r := range recorded.Refs {
			if strings.HasPrefix(r, w.branch+"@") {
				return nil
			}
		}
	}
	return w.repo.DeleteBranch(context.WithoutCancel(ctx), w.branch)
}

func (w *worktree) pathOrEmpty() (path, repo string) {
	if w == nil {
		return "", ""
	}
	return w.path, w.repo.Root
}

// removeWorktree removes the worktree an interrupted attempt left, as the
// session's processes are ended: a session-scoped resource. First it puts
// back what the session changed in the repository, as the attempt's
// guard file has it, and returns that ("" when nothing).
func (c *controller) removeWorktree(ctx context.Context, a *walkie.Attempt) (string, error) {
	if a.Worktree == "" {
		return "", nil
	}
	found, err := c.restoreLeft(ctx, a)
	if err != nil {
		return found, err
	}
	repo, err := gitrepo.Open(ctx, a.WorktreeRepo)
	if err != nil {
		// The repository is gone: so is anything git kept of the
		// worktree, and its directory is ours to remove.
		return found, os.RemoveAll(a.Worktree)
	}
	if err := repo.RemoveWorktree(ctx, a.Worktree); err != nil {
		return found, fmt.Errorf("remove the interrupted attempt's worktree %s: %w", a.Worktree, err)
	}
	return found, nil
}

// restoreLeft puts the repositories back as the interrupted attempt's
// guard file has them. A file that is not there (the worktree was never
// made, or its session was over) is nothing to do.
func (c *controller) restoreLeft(ctx context.Context, a *walkie.Attempt) (string, error) {
	path := guardFile(a.Worktree)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var guards []guarded
	err = json.Unmarshal(b, &guards)
	if err == nil && slices.ContainsFunc(guards, func(g guarded) bool { return g.Guard == nil || g.Root == "" }) {
		err = errors.New("a guard names no repository")
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w (remove it once the repository is checked by hand)", path, err)
	}
	found, err := restoreGuards(ctx, guards)
	if err != nil {
		return found, fmt.Errorf("turn %d's interrupted session: %s: %w", a.Turn, cmp.Or(found, "the repository could not be checked"), err)
	}
	if found != "" {
		c.log.Warn("an interrupted worktree session changed the repository", zap.Int("turn", a.Turn), zap.String("agent", a.Agent), zap.String("detail", found))
	}
	return found, os.Remove(path)
}
