package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/walkie"
)

var ctx = context.Background()

func TestResolve(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	first := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Git(t, dir, "branch", "side")
	second := gittest.Commit(t, dir, "docs/api.md", "api\n", "second")
	r, err := Open(ctx, filepath.Join(dir, "docs"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Root != dir {
		t.Fatalf("root %s, want %s", r.Root, dir)
	}
	for in, want := range map[string]string{first[:7]: first, second: second, "0000000": "", "deadbeef": ""} {
		if got, err := r.Commit(ctx, in); err != nil || got != want {
			t.Errorf("Commit(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	for b, want := range map[string]string{"main": second, "side": first, "gone": ""} {
		if got, err := r.Head(ctx, b); err != nil || got != want {
			t.Errorf("Head(%s) = %q, %v; want %q", b, got, err, want)
		}
	}
	for _, c := range []struct {
		branch, commit string
		want           bool
	}{{"main", first, true}, {"main", second, true}, {"side", second, false}, {"gone", first, false}} {
		if got, err := r.Contains(ctx, c.branch, c.commit); err != nil || got != c.want {
			t.Errorf("Contains(%s, %s) = %v, %v", c.branch, c.commit[:7], got, err)
		}
	}
	// A path in the work tree, or only in a commit.
	must(t, os.Remove(filepath.Join(dir, "docs", "api.md")))
	for _, c := range []struct {
		path    string
		commits []string
		want    bool
	}{{"README.md", nil, true}, {"docs/api.md", nil, false}, {"docs/api.md", []string{first}, false}, {"docs/api.md", []string{first, second}, true}} {
		if got, err := r.HasPath(ctx, c.path, c.commits); err != nil || got != c.want {
			t.Errorf("HasPath(%s, %d commits) = %v, %v", c.path, len(c.commits), got, err)
		}
	}
	// Commits that change only walkie records leave the code as it was.
	gittest.Commit(t, dir, "docs/api.md", "api v2\n", "code")
	code := gittest.Git(t, dir, "rev-parse", "HEAD")
	gittest.Commit(t, dir, "reviews/r.walkie.md", "record\n", "entry 1")
	rec := gittest.Commit(t, dir, "reviews/.walkie/r/state.json", "{}\n", "side file")
	for _, c := range []struct {
		from, to string
		want     bool
	}{{code, rec, true}, {code, code, true}, {second, rec, false}, {rec, code, false}, {first, second, false}} {
		if got, err := r.Unchanged(ctx, c.from, c.to); err != nil || got != c.want {
			t.Errorf("Unchanged(%s, %s) = %v, %v; want %v", c.from[:7], c.to[:7], got, err, c.want)
		}
	}
	if _, err := Open(ctx, t.TempDir()); !errors.Is(err, ErrNotRepo) {
		t.Fatalf("Open of a plain directory: %v", err)
	}
	// git's own location variables (a hook's) do not redirect it.
	t.Setenv("GIT_DIR", filepath.Join(t.TempDir(), "elsewhere"))
	if got, err := r.Head(ctx, "main"); err != nil || got != rec {
		t.Fatalf("with GIT_DIR set: %q, %v", got, err)
	}
}

func TestWorktree(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	start := gittest.Git(t, dir, "rev-parse", "HEAD")
	r, err := Open(ctx, dir)
	must(t, err)
	wt := filepath.Join(t.TempDir(), "wt")
	must(t, r.AddWorktree(ctx, wt, "walkie/d/turn-1", start))
	if b := gittest.Git(t, wt, "branch", "--show-current"); b != "walkie/d/turn-1" {
		t.Fatalf("worktree on %q", b)
	}
	made := gittest.Commit(t, wt, "fix.go", "package fix\n", "the fix")
	must(t, os.WriteFile(filepath.Join(wt, "scratch"), []byte("uncommitted"), 0o644))
	must(t, r.RemoveWorktree(ctx, wt))
	if _, err := os.Stat(wt); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if list, _ := r.Worktrees(ctx); len(list) != 1 {
		t.Fatalf("git still knows worktrees %v", list)
	}
	// What was committed there came back on the branch.
	if h, _ := r.Head(ctx, "walkie/d/turn-1"); h != made {
		t.Fatalf("branch at %s, want %s", h, made)
	}
	// Removing again (after a crash between the two) is no error; a retry
	// of the turn starts the branch afresh.
	must(t, r.RemoveWorktree(ctx, wt))
	must(t, r.AddWorktree(ctx, wt, "walkie/d/turn-1", start))
	if h, _ := r.Head(ctx, "walkie/d/turn-1"); h != start {
		t.Fatalf("a retried turn's branch at %s", h)
	}
	must(t, r.RemoveWorktree(ctx, wt))
	must(t, r.DeleteBranch(ctx, "walkie/d/turn-1"))
	if h, _ := r.Head(ctx, "walkie/d/turn-1"); h != "" {
		t.Fatal("the branch is still there")
	}
}

// newRecord makes a format-3 thread in the repository's reviews/.
func newRecord(t *testing.T, dir string) string {
	t.Helper()
	file := filepath.Join(dir, "reviews", "r.walkie.md")
	must(t, os.MkdirAll(filepath.Dir(file), 0o755))
	must(t, walkie.Init(file, walkie.InitOptions{Participants: []string{"builder", "reviewer"}, MaxRounds: 4, Briefing: []byte("Review it.\n"), Typed: true, Repo: "..", Git: walkie.GitCommit}))
	return file
}

func post(t *testing.T, file string, p walkie.Post) {
	t.Helper()
	if _, err := walkie.Append(file, p); err != nil {
		t.Fatal(err)
	}
}

// Every entry is one commit holding the record as it stood after it, with
// a message that names seq, author, type and refs; commits made late
// catch up in order; the caller's staged work is left alone.
func TestCommitEntries(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	head := gittest.Git(t, dir, "rev-parse", "--short=7", "HEAD")
	file := newRecord(t, dir)
	// Someone's staged change must stay staged and uncommitted.
	must(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("staged edit\n"), 0o644))
	gittest.Git(t, dir, "add", "README.md")

	refs, _ := walkie.ParseRefs("main@" + head)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review the README.\n"), Tags: walkie.Tags{Type: walkie.TypeReviewRequest, Refs: refs}})
	c, err := CommitEntries(ctx, file)
	must(t, err)
	if len(c.Commits) != 1 || c.Seqs[0] != 1 {
		t.Fatalf("committed %+v", c)
	}
	// Two entries, then one catch-up: two commits, in order, each the
	// record as it stood.
	post(t, file, walkie.Post{Supervisor: true, Body: []byte("Looking.\n")})
	post(t, file, walkie.Post{From: "reviewer", Body: []byte("Fine.\n"), Tags: walkie.Tags{Type: walkie.TypeVerdict, Verdict: walkie.VerdictApprove, Refs: refs}})
	c, err = CommitEntries(ctx, file)
	must(t, err)
	if len(c.Commits) != 2 || c.Seqs[0] != 2 || c.Seqs[1] != 3 {
		t.Fatalf("committed %+v", c)
	}
	if c, err = CommitEntries(ctx, file); err != nil || len(c.Commits) != 0 {
		t.Fatalf("nothing new, yet %+v, %v", c, err)
	}
	log := gittest.Git(t, dir, "log", "--format=%an|%s", "--", "reviews/r.walkie.md")
	want := "reviewer|r #3 · turn 2 · reviewer · verdict approve · main@" + head + "\n" +
		"supervisor|r #2 · supervisor\n" +
		"builder|r #1 · turn 1 · builder · review-request · main@" + head
	if log != want {
		t.Fatalf("git log:\n%s\nwant:\n%s", log, want)
	}
	if n := gittest.Git(t, dir, "rev-list", "--count", "HEAD"); n != "4" {
		t.Fatalf("%s commits, want the first and one per entry", n)
	}
	trailers := gittest.Git(t, dir, "log", "-1", "--format=%(trailers:key=Walkie-Seq,valueonly)%(trailers:key=Walkie-Type,valueonly)")
	if trailers != "3\nverdict approve" {
		t.Fatalf("trailers %q", trailers)
	}
	// Each commit holds the record as it stood after its entry.
	data, _ := os.ReadFile(file)
	for k, rev := range []string{"HEAD~2", "HEAD~1", "HEAD"} {
		got := gittest.Git(t, dir, "show", rev+":reviews/r.walkie.md")
		d, err := walkie.Parse(file, []byte(got+"\n"))
		must(t, err)
		if len(d.Entries) != k+1 || !strings.HasPrefix(string(data), got) {
			t.Fatalf("%s holds %d entries", rev, len(d.Entries))
		}
	}
	// The staged README is still staged, not committed; the record is
	// clean; .walkie/ is ignored.
	status := gittest.Git(t, dir, "status", "--porcelain")
	if status != "M  README.md" {
		t.Fatalf("git status:\n%s", status)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "reviews", ".walkie", ".gitignore")); string(b) != IgnoreRule {
		t.Fatalf(".gitignore %q", b)
	}
}

// A record that was edited after it was committed is not committed over.
func TestCommitEntriesRefusesAnEditedRecord(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	file := newRecord(t, dir)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review.\n")})
	_, err := CommitEntries(ctx, file)
	must(t, err)
	// The committed version is rewritten in git (a rebase, an amend).
	gittest.Git(t, dir, "rm", "--quiet", "--cached", "reviews/r.walkie.md")
	other := strings.Replace(string(mustRead(t, file)), "Please review.", "Please ignore.", 1)
	must(t, os.WriteFile(filepath.Join(dir, "tmp"), []byte(other), 0o644))
	blob := gittest.Git(t, dir, "hash-object", "-w", "tmp")
	gittest.Git(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+",reviews/r.walkie.md")
	gittest.Git(t, dir, "commit", "--quiet", "-m", "rewritten")
	before := gittest.Git(t, dir, "rev-parse", "HEAD")
	post(t, file, walkie.Post{From: "reviewer", Body: []byte("Ok.\n")})
	_, err = CommitEntries(ctx, file)
	if err == nil || !strings.Contains(err.Error(), "is not the start of") {
		t.Fatalf("got %v", err)
	}
	if after := gittest.Git(t, dir, "rev-parse", "HEAD"); after != before {
		t.Fatal("HEAD moved")
	}
}

// Without any identity configured, the record's commits are walkie's.
func TestCommitEntriesWithoutIdentity(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	for _, k := range []string{"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	// git guesses no identity from the machine either.
	global := filepath.Join(t.TempDir(), "gitconfig")
	must(t, os.WriteFile(global, []byte("[user]\n\tuseConfigOnly = true\n"), 0o644))
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	file := newRecord(t, dir)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review.\n")})
	if _, err := CommitEntries(ctx, file); err != nil {
		t.Fatal(err)
	}
	if who := gittest.Git(t, dir, "log", "-1", "--format=%an <%ae> / %cn <%ce>"); who != "builder <builder@walkie.invalid> / walkie <walkie@walkie.invalid>" {
		t.Fatalf("commit by %s", who)
	}
}

func mustRead(t *testing.T, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	must(t, err)
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// An abbreviated id two commits start with names neither: the answer
// says so and lists them; one more digit, or the full id, names one.
func TestCommitAmbiguous(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	a, b := gittest.Colliding(t, dir, 7)
	gittest.WriteCommit(t, dir, a)
	r, err := Open(ctx, dir)
	must(t, err)
	if got, err := r.Commit(ctx, a.ID[:7]); err != nil || got != a.ID {
		t.Fatalf("with one commit of the prefix: %q, %v", got, err)
	}
	gittest.WriteCommit(t, dir, b)
	got, err := r.Commit(ctx, a.ID[:7])
	if !errors.Is(err, walkie.ErrAmbiguous) || got != "" || !strings.Contains(err.Error(), a.ID[:12]) || !strings.Contains(err.Error(), b.ID[:12]) {
		t.Fatalf("Commit(%s) = %q, %v; want it ambiguous, naming both", a.ID[:7], got, err)
	}
	for _, c := range []gittest.Object{a, b} {
		if got, err := r.Commit(ctx, c.ID); err != nil || got != c.ID {
			t.Fatalf("Commit(full) = %q, %v", got, err)
		}
	}
	if a.ID[7] != b.ID[7] {
		if got, err := r.Commit(ctx, a.ID[:8]); err != nil || got != a.ID {
			t.Fatalf("Commit(8 digits) = %q, %v", got, err)
		}
	}
}

// The record's signatures travel with it: an entry's commit holds the
// signatures of the entries up to it; one made after its entry was
// committed gets a commit of its own, which changes no code.
func TestCommitEntriesWithSignatures(t *testing.T) {
	gittest.Isolate(t)
	dir := gittest.Init(t)
	file := newRecord(t, dir)
	post(t, file, walkie.Post{From: "builder", Body: []byte("Please review.\n")})
	d, err := walkie.Load(file)
	must(t, err)
	sig := walkie.Signature{Seq: 1, Hash: d.Entries[0].Marker.Hash, Signature: "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"}
	must(t, walkie.AppendSignature(file, sig))
	c, err := CommitEntries(ctx, file)
	must(t, err)
	if len(c.Commits) != 1 {
		t.Fatalf("committed %+v", c)
	}
	if got := gittest.Git(t, dir, "show", "HEAD:reviews/r.walkie.md.sig"); !strings.Contains(got, `"seq":1`) {
		t.Fatalf("the entry's commit holds signatures %q", got)
	}
	before := gittest.Git(t, dir, "rev-parse", "HEAD")
	must(t, walkie.AppendSignature(file, sig)) // a second signer
	c, err = CommitEntries(ctx, file)
	must(t, err)
	if len(c.Commits) != 1 || len(c.Seqs) != 0 {
		t.Fatalf("committed %+v, want one commit of signatures", c)
	}
	if n := strings.Count(gittest.Git(t, dir, "show", "HEAD:reviews/r.walkie.md.sig"), `"seq":1`); n != 2 {
		t.Fatalf("%d signatures committed", n)
	}
	r, err := Open(ctx, dir)
	must(t, err)
	if same, err := r.Unchanged(ctx, before, gittest.Git(t, dir, "rev-parse", "HEAD")); err != nil || !same {
		t.Fatalf("a commit of signatures changed code: %v, %v", same, err)
	}
	if c, err := CommitEntries(ctx, file); err != nil || len(c.Commits) != 0 {
		t.Fatalf("nothing new, yet %+v, %v", c, err)
	}
	if s := gittest.Git(t, dir, "status", "--porcelain"); s != "" {
		t.Fatalf("git status:\n%s", s)
	}
}
