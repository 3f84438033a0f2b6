package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/gitrepo/sshsig/sshsigtest"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// Review threads end to end (docs/review-threads.md): a builder and a
// reviewer, scripted fake agents, in a real temporary git repository the
// thread is bound to, through walkie thread new, walkie auto, walkie post,
// walkie gate and walkie status.

// newThread makes a repository with one commit, a config whose agents
// are the fake agent with the given scripts (paths absolute: in a worktree
// the agent's working directory is not the repository's top), and the
// thread reviews/login.walkie.md, made with the extra thread flags.
func newThread(t *testing.T, scripts map[string]string, agentKeys string, flags ...string) *debate {
	t.Helper()
	blackbox.ReadSources(t)
	gittest.Isolate(t)
	dir := gittest.Init(t)
	d := &debate{name: "reviews/login.walkie.md", id: "login", marker: blackbox.NewMarker(t)}
	d.Runner = walkieIn(t, dir, d.marker)
	t.Cleanup(d.marker.Kill)
	must(t, os.MkdirAll(d.path("agents"), 0o755))
	cfg := blackbox.Config{Defaults: blackbox.FakeDefaults(d.path("agents"))}
	cfg.Defaults["env_allow"] = "[" + blackbox.MarkerVar + ", GIT_*]"
	for _, p := range []string{"builder", "reviewer"} {
		a := blackbox.ScriptedAgent(t, d.path("agents"), p, scripts[p], map[string]string{"usage": "none"})
		a.More = agentKeys
		cfg.Agents = append(cfg.Agents, a)
	}
	cfg.Write(t, d.path("walkie.yaml"))
	// The agents' own files stay out of the repository's status.
	d.write(".git/info/exclude", "agents/\nwalkie.yaml\n")
	d.MustRun(0, append([]string{"thread", "new", "reviews", "login", "--agents", "builder,reviewer", "--repo", "..", "--approve", "--max-rounds", "4"}, flags...)...)
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// git runs git in the repository.
func (d *debate) git(args ...string) string {
	d.T.Helper()
	return gittest.Git(d.T, d.Dir, args...)
}

// doc loads and verifies the record.
func (d *debate) doc() *walkie.Doc {
	d.T.Helper()
	doc, err := walkie.Load(d.path(d.name))
	must(d.T, err)
	must(d.T, doc.Verify())
	return doc
}

// The shell snippets the scripts use: the code commit last made (the
// record's own commits move main too, and change no code), and the one
// before it.
const (
	lastCode  = `$(git log -1 --format=%h -- :/login.go)`
	priorCode = `$(git log -1 --skip=1 --format=%h -- :/login.go)`
	toTop     = `cd "$(git rev-parse --show-toplevel)" && `
)

// The review cycle: request at abc, changes requested, a fix report that
// cites a commit that does not exist (refused, retried), fix at def, a
// verdict citing the stale abc after def is pushed (refused with main's
// head in the detail, retried), approve at def, close; a second open
// thread refused while it runs and made after it closed; with git:
// commit, one commit per entry; the gate open for def only once a person
// acknowledged the verdict.
func TestReviewCycle(t *testing.T) {
	d := newThread(t, map[string]string{
		"builder": `steps:
  - shell: '` + toTop + `echo "v1" > login.go && git add login.go && git commit -qm "login: v1"'
    body_cmd: 'printf "Please review the login fix.\n\nType: review-request\nRefs: main@%s\n" "` + lastCode + `"'
  - shell: '` + toTop + `echo "v2" > login.go && git commit -qam "login: revoke the old token"'
    body_cmd: 'printf "Fixed in a commit that is not there.\n\nType: fix-report\nRefs: main@deadbee\n"'
  - body_cmd: 'printf "Fixed: the old token is revoked.\n\nType: fix-report\nRefs: main@%s\n" "` + lastCode + `"'
  - body_cmd: 'printf "Merged; thanks.\n\nType: close\n"'`,
		"reviewer": `steps:
  - body_cmd: 'printf "Changes requested: the old token stays valid.\n\nType: verdict\nVerdict: changes-requested\nRefs: main@%s\n" "` + lastCode + `"'
  - body_cmd: 'printf "Approved.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n" "` + priorCode + `"'
  - body_cmd: 'printf "Approved: the tests pass at %s.\n\nType: verdict\nVerdict: approve\nRefs: main@%s\n" "` + lastCode + `" "` + lastCode + `"'`,
		// A live builder commits in the checkout itself, which holds the
		// record's .walkie: no sandbox can open that checkout and keep walkie's
		// state out of reach (a worktree does: TestReviewWorktrees).
	}, "    sandbox: off\n", "--git-commit")
	// Who may say approved, on the base: the controller's host key
	// signs the verdicts it stamps; alice acknowledges.
	keys := map[string]sshsigtest.Key{"host": sshsigtest.NewKey(t, "ci-host"), "alice": sshsigtest.NewKey(t, "alice@example.com")}
	base := gittest.Commit(t, d.Dir, ".walkie-signers", keys["host"].Line+keys["alice"].Line, "who may say approved")
	d.Env = append(d.Env, "WALKIE_SIGNING_KEY="+keys["host"].Path)

	// While the thread is open, no other starts in its channel.
	r := d.MustRun(3, "thread", "new", "reviews", "logout", "--agents", "builder,reviewer")
	if !strings.Contains(r.Stderr, "login.walkie.md is open (status open)") {
		t.Fatalf("refusal: %s", r.Stderr)
	}
	if _, err := os.Stat(d.path("reviews/logout.walkie.md")); err == nil {
		t.Fatal("the refused thread was made")
	}

	// The writer asks the repository too: a ref that names nothing there
	// is refused, and nothing is recorded.
	r = d.MustRun(3, "post", d.name, "--from", "builder", "--type", "review-request", "--refs", "main@0000000", "--body-file", d.write2("agents/req.md", "Please review.\n"))
	if !strings.Contains(r.Stderr, "ref main@0000000: 0000000 names no commit in the repository the record is bound to") {
		t.Fatalf("refusal: %s", r.Stderr)
	}
	if n := len(d.doc().Entries); n != 0 {
		t.Fatalf("%d entries after a refused post", n)
	}

	r = d.auto(0)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted", "malformed", "accepted", "malformed", "accepted", "accepted")
	if !strings.Contains(recs[2].Detail, "main@deadbee: deadbee names no commit") {
		t.Errorf("the unresolvable ref: %s", recs[2].Detail)
	}
	abc, _, _ := strings.Cut(d.git("log", "--format=%h", "--reverse", "--", "login.go"), "\n")
	def := d.git("log", "-1", "--format=%h", "--", "login.go")
	// main's head when the stale verdict came: the record's commit of
	// entry 3, on top of def.
	at := d.git("log", "--format=%H", "--grep=^login #3 ")[:12]
	if want := "the verdict's ref main@" + abc + " is stale: main is at " + at + " now, not " + abc + "; review " + at + " and cite main@" + at; !strings.Contains(recs[4].Detail, want) {
		t.Errorf("the stale verdict: %s\nwant: %s", recs[4].Detail, want)
	}
	d.noProcessesLeft()

	// The record names every commit by its full id, as the agents'
	// abbreviations stood for when they wrote them.
	abcFull, defFull := d.git("rev-parse", abc), d.git("rev-parse", def)
	doc := d.doc()
	want := []string{"review-request main@" + abcFull, "verdict changes-requested main@" + abcFull, "fix-report main@" + defFull, "verdict approve main@" + defFull, "close "}
	var got []string
	for _, e := range doc.Entries {
		got = append(got, e.Marker.Tags.Kind()+" "+strings.Join(e.Marker.Tags.RefStrings(), ","))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries %q, want %q", got, want)
	}
	if st := d.status(); st != walkie.StatusClosed {
		t.Fatalf("status %s", st)
	}
	if !strings.Contains(r.Stdout, "closed") {
		t.Errorf("auto says:\n%s", r.Stdout)
	}

	// The gate: shut without a person's ack, open for def once there is
	// one, never for abc.
	r = d.MustRun(3, "gate", d.name, "--ref", def, "--base", base)
	if !strings.Contains(r.Stderr, "signed by ci-host, but no person has acknowledged it") {
		t.Fatalf("gate: %s", r.Stderr)
	}
	d.MustRun(0, "post", d.name, "--supervisor", "--type", "ack", "--refs", def, "--signing-key", keys["alice"].Path, "--body-file", d.write2("agents/ack.md", "Read the verdict; merge.\n"))
	full := d.git("rev-parse", def)
	r = d.MustRun(0, "gate", d.name, "--ref", full, "--base", base)
	if !strings.Contains(r.Stdout, "gate open for "+full) {
		t.Fatalf("gate: %s", r.Stdout)
	}
	// The branch's head is the record's last commit: it changes no code.
	d.MustRun(0, "gate", d.name, "--ref", d.git("rev-parse", "HEAD"), "--base", base)
	r = d.MustRun(3, "gate", d.name, "--ref", abc, "--base", base)
	if !strings.Contains(r.Stderr, "approves main@"+defFull+", not "+abc) {
		t.Fatalf("gate for abc: %s", r.Stderr)
	}

	// git: commit: one commit per entry, naming seq, author, type, refs;
	// the record clean in git; the side files ignored.
	subjects := strings.Split(d.git("log", "--format=%s", "--reverse", "--", d.name), "\n")
	wantSubjects := []string{
		"login #1 · turn 1 · builder · review-request · main@" + abcFull[:12],
		"login #2 · turn 2 · reviewer · verdict changes-requested · main@" + abcFull[:12],
		"login #3 · turn 3 · builder · fix-report · main@" + defFull[:12],
		"login #4 · turn 4 · reviewer · verdict approve · main@" + defFull[:12],
		"login #5 · turn 5 · builder · close",
		"login #6 · supervisor · ack · " + defFull[:12],
	}
	if !slices.Equal(subjects, wantSubjects) {
		t.Fatalf("git log:\n%s\nwant:\n%s", strings.Join(subjects, "\n"), strings.Join(wantSubjects, "\n"))
	}
	if s := d.git("status", "--porcelain"); s != "" {
		t.Fatalf("git status:\n%s", s)
	}

	// The channel's doorbell let go of the closed thread; a new one starts.
	d.MustRun(0, "thread", "new", "reviews", "logout", "--agents", "builder,reviewer")
	r = d.MustRun(0, "status", "reviews")
	for _, w := range []string{"channel reviews (2 threads, open: logout.walkie.md)", "login.walkie.md   closed  by builder in turn 5: Merged; thanks.", "* logout.walkie.md  open    turn 1 · builder"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("status reviews lacks %q:\n%s", w, r.Stdout)
		}
	}
}

// write2 writes a file and returns its path.
func (d *debate) write2(name, content string) string {
	d.write(name, content)
	return d.path(name)
}

// With workspace: worktree each session runs in a worktree of its own,
// made before it and removed after: the builder's commit comes back as
// walkie/login/turn-1, the turn's refs point to it (the builder did not
// cite it), and the reviewer's worktree starts there.
func TestReviewWorktrees(t *testing.T) {
	seen := t.TempDir()
	d := newThread(t, map[string]string{
		"builder": `steps:
  - shell: 'pwd > ` + seen + `/builder-dir && git branch --show-current > ` + seen + `/builder-branch && echo "$WALKIE_BRANCH" > ` + seen + `/builder-env && echo v1 > login.go && git add login.go && git commit -qm "login: v1"'
    body: "Please review the login fix; it is on my branch.\n\nType: review-request"
  - body: "Merged.\n\nType: close"`,
		"reviewer": `steps:
  - shell: 'pwd > ` + seen + `/reviewer-dir && git rev-parse HEAD > ` + seen + `/reviewer-head && cat login.go > ` + seen + `/reviewer-saw'
    body_cmd: 'printf "Approved: v1 is in.\n\nType: verdict\nVerdict: approve\nRefs: walkie/login/turn-1@%s\n" "$(git log -1 --format=%h -- :/login.go)"'`,
	}, fmt.Sprintf("    sandbox_write: [%q]\n", seen), "--worktree", "--base", "main")

	d.auto(0)
	recs := d.turns()
	d.wantOutcomes(recs, "accepted", "accepted", "accepted")
	builderCommit := d.git("rev-parse", "walkie/login/turn-1")
	if b := recs[0].Branch; b != "walkie/login/turn-1@"+builderCommit {
		t.Fatalf("turn 1 came back on %q", b)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(seen, name))
		must(t, err)
		return strings.TrimSpace(string(b))
	}
	wtDir := filepath.Join(d.Dir, "reviews", ".walkie", "login", "worktrees")
	if dir := read("builder-dir"); dir != filepath.Join(wtDir, "0001-builder-1") || read("builder-branch") != "walkie/login/turn-1" || read("builder-env") != "walkie/login/turn-1" {
		t.Fatalf("the builder ran in %s on %s", dir, read("builder-branch"))
	}
	if dir := read("reviewer-dir"); dir != filepath.Join(wtDir, "0002-reviewer-1") || read("reviewer-head") != builderCommit || read("reviewer-saw") != "v1" {
		t.Fatalf("the reviewer ran in %s at %s", dir, read("reviewer-head"))
	}
	// The builder's turn cites its branch though it did not write it.
	doc := d.doc()
	if refs := doc.Entries[0].Marker.Tags.RefStrings(); !slices.Equal(refs, []string{"walkie/login/turn-1@" + builderCommit}) {
		t.Fatalf("turn 1 refs %v", refs)
	}
	if !strings.Contains(string(doc.Entries[0].Body), "Type: review-request\nRefs: walkie/login/turn-1@") {
		t.Fatalf("turn 1 text:\n%s", doc.Entries[0].Body)
	}
	// Every worktree is gone, from disk and from git; main never moved;
	// the reviewer and the closing builder committed nothing, so their
	// branches went with their worktrees.
	if list := d.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%s", list)
	}
	if ents, _ := os.ReadDir(wtDir); len(ents) != 0 {
		t.Fatalf("left in %s: %v", wtDir, ents)
	}
	if branches := d.git("branch", "--format=%(refname:short)"); branches != "main\nwalkie/login/turn-1" {
		t.Fatalf("branches:\n%s", branches)
	}
	if d.git("log", "-1", "--format=%s", "main") != "first" {
		t.Fatal("main moved")
	}
	d.noProcessesLeft()
}

// A controller killed while a session runs in its worktree leaves it; the
// next controller removes it with the session's processes, and runs the
// turn again in a fresh one.
func TestWorktreeRemovedAfterACrash(t *testing.T) {
	d := newThread(t, map[string]string{
		"builder": `steps:
  - behavior: hang
  - body: "Please review.\n\nType: review-request\nRefs: main@` + "{head}" + `"`,
		"reviewer": `behavior: none`,
	}, "", "--worktree")
	head := d.git("rev-parse", "--short", "HEAD")
	d.write("agents/builder.yaml", strings.ReplaceAll(string(d.read("agents/builder.yaml")), "{head}", head))
	p := d.Start("turn", d.name, "--approve")
	d.waitRunning(p, 1)
	d.waitInvoked("agents/builder", 1) // so that the rerun is the builder's second step
	wt := filepath.Join(d.Dir, "reviews", ".walkie", "login", "worktrees", "0001-builder-1")
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("no worktree while the session runs: %v", err)
	}
	st := d.state()
	if st.Running.Worktree != wt {
		t.Fatalf("the running attempt records worktree %q", st.Running.Worktree)
	}
	p.Signal(syscall.SIGKILL)
	p.Wait(10 * time.Second)
	d.MustRun(0, "turn", d.name, "--approve")
	if _, err := os.Stat(wt); err == nil {
		t.Fatal("the interrupted attempt's worktree is still there")
	}
	if list := d.git("worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("git still knows worktrees:\n%s", list)
	}
	recs := d.turns()
	d.wantOutcomes(recs, "interrupted", "accepted")
	if recs[1].Attempt != 2 {
		t.Fatalf("%s", blackbox.Dump(recs))
	}
	sessiontest.WaitFor(t, 5*time.Second, "no process left", func() bool { return len(d.marker.Pids()) == 0 })
}

// The channel's open thread is the only one the cron tick acts on.
func TestWatchActsOnTheOpenThread(t *testing.T) {
	d := newThread(t, map[string]string{
		"builder":  `body: "Please review.\n\nType: info"`,
		"reviewer": `behavior: none`,
	}, "    debounce: 0s\n")
	// A thread put in the channel by hand, not through thread new.
	d.MustRun(0, "init", "reviews/stray.walkie.md", "--agents", "builder,reviewer", "--typed", "--briefing", d.write2("agents/stray.md", "Review the stray.\n"))
	d.MustRun(0, "brief", "approve", "reviews/stray.walkie.md", "--yes")
	r := d.MustRun(0, "watch", "--once", "reviews", "--json")
	actions := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	for dec.More() {
		var x struct{ File, Action, Detail string }
		if err := dec.Decode(&x); err != nil {
			t.Fatalf("%v\n%s", err, r.Stdout)
		}
		actions[filepath.Base(x.File)] = x.Action + ": " + x.Detail
	}
	if !strings.HasPrefix(actions["login.walkie.md"], "invoked") || !strings.HasPrefix(actions["stray.walkie.md"], "skipped: not the open thread of its channel") {
		t.Fatalf("actions %v", actions)
	}
	if n, _ := strconv.Atoi(strings.TrimSpace(string(d.read("agents/fake/builder.state")))); n != 1 {
		t.Fatalf("the builder ran %d times", n)
	}
}
