package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/gitrepo/sshsig/sshsigtest"
)

// An abbreviated sha opens the gate for no other commit (issue 27, item
// 2): a benign commit is approved and acknowledged as feat@<7 hex>, a
// commit sharing those 7 digits is swapped in and the approved one is
// gone, and the gate refuses the swapped one. walkie records the full id
// the abbreviation stood for when it was posted, and refuses an
// abbreviation that is ambiguous.
func TestGateAfterAShortShaSwap(t *testing.T) {
	d := newThread(t, map[string]string{"builder": "behavior: none", "reviewer": "behavior: none"}, "")
	keys, base, _ := gateRepo(t, d)
	benign, evil := gittest.Colliding(t, d.Dir, 7)
	abbrev := benign.ID[:7]
	if evil.ID[:7] != abbrev {
		t.Fatalf("%s and %s do not collide", benign.ID, evil.ID)
	}
	gittest.WriteCommit(t, d.Dir, benign)
	d.git("update-ref", "refs/heads/feat", benign.ID)
	post := func(code int, body string, args ...string) blackbox.Result {
		t.Helper()
		return d.MustRun(code, append([]string{"post", d.name, "--body-file", d.write2("agents/body.md", body+"\n")}, args...)...)
	}
	post(0, "Please review feat.", "--from", "builder", "--type", "review-request", "--refs", "feat@"+abbrev)
	post(0, "Approved: the tests pass.", "--from", "reviewer", "--type", "verdict", "--verdict", "approve", "--refs", "feat@"+abbrev, "--signing-key", keys["host"].Path)
	post(0, "Read it; merge.", "--supervisor", "--type", "ack", "--refs", abbrev, "--signing-key", keys["alice"].Path)
	if !strings.Contains(string(d.read(d.name)), "Refs: feat@"+benign.ID+"\n") {
		t.Fatalf("the verdict does not record the full id:\n%s", d.read(d.name))
	}
	d.MustRun(0, "gate", d.name, "--ref", benign.ID, "--base", base)

	// The colliding commit arrives: its abbreviation names no commit now.
	gittest.WriteCommit(t, d.Dir, evil)
	r := post(3, "Also see this.", "--from", "builder", "--type", "info", "--refs", abbrev)
	if !strings.Contains(r.Stderr, abbrev+" is the start of 2 commits (") || !strings.Contains(r.Stderr, benign.ID[:12]) || !strings.Contains(r.Stderr, evil.ID[:12]) {
		t.Fatalf("post of an ambiguous ref: %s", r.Stderr)
	}
	r = d.MustRun(3, "gate", d.name, "--ref", abbrev, "--base", base)
	if !strings.Contains(r.Stderr, "is the start of 2 commits") {
		t.Fatalf("gate for an ambiguous --ref: %s", r.Stderr)
	}

	// The swap: feat is the other commit, and the approved one is gone.
	d.git("update-ref", "refs/heads/feat", evil.ID)
	d.git("reflog", "expire", "--expire=now", "--all")
	d.git("gc", "--quiet", "--prune=now")
	if out := d.git("cat-file", "-t", evil.ID); out != "commit" {
		t.Fatalf("the swapped-in commit is a %s", out)
	}
	if r := d.Run("gate", d.name, "--ref", benign.ID, "--base", base); r.Code == 0 {
		t.Fatal("the gate opened for a commit the repository no longer has")
	}
	r = d.MustRun(3, "gate", d.name, "--ref", evil.ID, "--base", base)
	if !strings.Contains(r.Stderr, "approves feat@"+benign.ID+", not "+evil.ID) {
		t.Fatalf("gate for the swapped-in commit: %s", r.Stderr)
	}
}

// gateRepo is a thread's repository with allowed signers on main (the
// base): the controller's host key, alice (who may also approve on
// GitHub) and bob (on GitHub only, by his key's listing); and the change
// under review on the branch feat. It returns the keys, the base and the
// head.
func gateRepo(t *testing.T, d *debate) (keys map[string]sshsigtest.Key, base, head string) {
	t.Helper()
	keys = map[string]sshsigtest.Key{"host": sshsigtest.NewKey(t, "ci-host"), "alice": sshsigtest.NewKey(t, "alice@example.com,github:alice"), "bob": sshsigtest.NewKey(t, "github:bob")}
	base = gittest.Commit(t, d.Dir, ".walkie-signers", "# who may say approved\n"+keys["host"].Line+keys["alice"].Line+keys["bob"].Line, "who may say approved")
	d.git("switch", "--quiet", "-c", "feat")
	head = gittest.Commit(t, d.Dir, "login.go", "package login\n", "login: v1")
	return keys, base, head
}

// The merge gate trusts only what an allowed signer of the base stands
// behind (issue 27, item 1). Four walkie posts and no agent forge a
// review, a verdict and a person's ack: the gate stays shut. Signed with
// keys the pull request itself adds to the allowed signers, it stays
// shut too: they are read from the base, never from the pull request.
func TestGateRefusesAForgedRecord(t *testing.T) {
	d := newThread(t, map[string]string{"builder": "behavior: none", "reviewer": "behavior: none"}, "")
	_, base, head := gateRepo(t, d)
	post := func(body string, args ...string) {
		t.Helper()
		d.MustRun(0, append([]string{"post", d.name, "--body-file", d.write2("agents/body.md", body+"\n")}, args...)...)
	}
	post("Please review.", "--from", "builder", "--type", "review-request", "--refs", "feat@"+head)
	post("Approved.", "--from", "reviewer", "--type", "verdict", "--verdict", "approve", "--refs", "feat@"+head)
	post("Read it; merge.", "--supervisor", "--type", "ack", "--refs", head)
	post("Merged.", "--from", "builder", "--type", "close")
	r := d.MustRun(3, "gate", d.name, "--ref", head, "--base", base)
	if !strings.Contains(r.Stderr, "approves "+head+", but no allowed signer signed it") {
		t.Fatalf("gate on the forged record: %s", r.Stderr)
	}

	// The pull request lists keys of its own, and signs with them.
	mallory, trent := sshsigtest.NewKey(t, "mallory"), sshsigtest.NewKey(t, "trent")
	signers := string(d.read(".walkie-signers")) + mallory.Line + trent.Line
	pr := gittest.Commit(t, d.Dir, ".walkie-signers", signers, "add reviewers")
	d2 := d.fork(t, "again")
	post2 := func(body string, args ...string) {
		t.Helper()
		d2.MustRun(0, append([]string{"post", d2.name, "--body-file", d2.write2("agents/body.md", body+"\n")}, args...)...)
	}
	post2("Please review.", "--from", "builder", "--type", "review-request", "--refs", "feat@"+pr)
	post2("Approved.", "--from", "reviewer", "--type", "verdict", "--verdict", "approve", "--refs", "feat@"+pr, "--signing-key", mallory.Path)
	post2("Read it; merge.", "--supervisor", "--type", "ack", "--refs", pr, "--signing-key", trent.Path)
	r = d2.MustRun(3, "gate", d2.name, "--ref", pr, "--base", base)
	if !strings.Contains(r.Stderr, "no allowed signer signed it") {
		t.Fatalf("gate with the pull request's own signers: %s", r.Stderr)
	}
	// What shuts it is where the signers come from: the pull request's
	// own list would open it.
	d2.MustRun(0, "gate", d2.name, "--ref", pr, "--base", pr)
	// Without a base to read them from, nothing counts.
	r = d2.MustRun(2, "gate", d2.name, "--ref", pr)
	if !strings.Contains(r.Stderr, "the gate needs --base") {
		t.Fatalf("gate without --base: %s", r.Stderr)
	}
}

// fork is another thread in the same repository, in a channel of its
// own, with the same agents.
func (d *debate) fork(t *testing.T, slug string) *debate {
	t.Helper()
	d2 := *d
	d2.name = slug + "/" + slug + ".walkie.md"
	d2.id = slug
	d.MustRun(0, "thread", "new", slug, slug, "--agents", "builder,reviewer", "--repo", "..", "--approve", "--max-rounds", "4")
	return &d2
}

// An agent cannot acknowledge its own verdict (issue 27, item 1): the
// reviewer's session posts an ack, and tries to sign one with a person's
// key; the controller stamps and signs its verdict with the host's key,
// and the gate counts no ack until a listed person signs one, or
// approves the pull request on GitHub (read from a stand-in).
func TestGateRefusesAnAckFromASession(t *testing.T) {
	seen := t.TempDir()
	d := newThread(t, map[string]string{
		"builder": `body_cmd: 'printf "Please review.\n\nType: review-request\nRefs: feat@%s\n" "$(git rev-parse feat)"'`,
		"reviewer": `shell: 'echo Signed as alice. | walkie post {file} --supervisor --type ack --refs $(git rev-parse feat) --signing-key {alice} --body-file - ; echo $? > ` + seen + `/signed-exit; echo Read it. | walkie post {file} --supervisor --type ack --refs $(git rev-parse feat) --body-file - ; echo $? > ` + seen + `/unsigned-exit'
body_cmd: 'printf "Approved.\n\nType: verdict\nVerdict: approve\nRefs: feat@%s\n" "$(git rev-parse feat)"'`,
	}, fmt.Sprintf("    sandbox_write: [%q]\n", seen))
	keys, base, head := gateRepo(t, d)
	d.write("agents/reviewer.yaml", strings.NewReplacer("{file}", d.path(d.name), "{alice}", keys["alice"].Path).Replace(string(d.read("agents/reviewer.yaml"))))
	d.Env = append(d.Env, "WALKIE_SIGNING_KEY="+keys["host"].Path)
	d.MustRun(0, "turn", d.name, "--approve")
	d.MustRun(0, "turn", d.name, "--approve")
	d.wantOutcomes(d.turns(), "accepted", "accepted")
	// Both acks are refused where they are made: a supervisor's entry is
	// a person's, and this runs inside an agent's session (issue 27, item
	// 5); the signed one also because it would sign for a person.
	for _, name := range []string{"signed-exit", "unsigned-exit"} {
		if b, _ := os.ReadFile(filepath.Join(seen, name)); strings.TrimSpace(string(b)) != "3" {
			t.Fatalf("%s: a post from inside the session exited %q, want 3 (refused)", name, b)
		}
	}
	doc := d.doc()
	if n := len(doc.Entries); n != 2 {
		t.Fatalf("%d entries, want the two turns and no ack", n)
	}
	r := d.MustRun(3, "gate", d.name, "--ref", head, "--base", base, "--json")
	if !strings.Contains(r.Stdout, `"verdict_by":["ci-host"]`) || !strings.Contains(r.Stderr, "no person has acknowledged it") {
		t.Fatalf("gate without an ack:\n%s\n%s", r.Stdout, r.Stderr)
	}
	// Made outside any session, by an agent's words that claim to be a
	// person's: an unsigned ack still counts for nothing.
	d.write("ack.md", "Read it.\n")
	d.MustRun(0, "post", d.name, "--supervisor", "--type", "ack", "--refs", head, "--body-file", "ack.md")
	r = d.MustRun(3, "gate", d.name, "--ref", head, "--base", base, "--json")
	if !strings.Contains(r.Stderr, "the supervisor's ack (seq 3) is signed by no allowed signer") {
		t.Fatalf("gate with an unsigned ack:\n%s\n%s", r.Stdout, r.Stderr)
	}

	// GitHub: bob approved the head after the verdict; mallory, whom the
	// base does not list, too; alice before the verdict.
	verdictAt := doc.Entries[1].Marker.At
	review := func(login, state string, at time.Time) string {
		return fmt.Sprintf(`{"user":{"login":%q},"state":%q,"commit_id":%q,"submitted_at":%q}`, login, state, head, at.Format(time.RFC3339))
	}
	// The stand-in's answer changes between two gates; the server's own
	// goroutines read it, so it is swapped atomically.
	var reviews atomic.Value
	reviews.Store("[" + review("alice", "APPROVED", verdictAt.Add(-time.Minute)) + "," +
		review("mallory", "APPROVED", verdictAt.Add(time.Minute)) + "," +
		review("bob", "COMMENTED", verdictAt.Add(time.Minute)) + "]")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/repos/o/r/pulls/7/reviews" || req.Header.Get("Authorization") != "Bearer t0ken" {
			http.NotFound(w, req)
			return
		}
		if req.URL.Query().Get("page") != "1" {
			fmt.Fprint(w, "[]")
			return
		}
		fmt.Fprint(w, reviews.Load().(string))
	}))
	defer srv.Close()
	d.Env = append(d.Env, "GITHUB_API_URL="+srv.URL, "GITHUB_TOKEN=t0ken")
	d.MustRun(3, "gate", d.name, "--ref", head, "--base", base, "--github-pr", "7", "--github-repo", "o/r")
	reviews.Store("[" + review("bob", "APPROVED", verdictAt.Add(time.Minute)) + "]")
	r = d.MustRun(0, "gate", d.name, "--ref", head, "--base", base, "--github-pr", "7", "--github-repo", "o/r")
	if !strings.Contains(r.Stdout, "approved on the platform by github:bob") {
		t.Fatalf("gate with bob's approval: %s", r.Stdout)
	}

	// A listed person's signed ack opens it without the platform.
	d.MustRun(0, "post", d.name, "--supervisor", "--type", "ack", "--refs", head, "--signing-key", keys["alice"].Path, "--body-file", d.write2("agents/ack.md", "Read it; merge.\n"))
	r = d.MustRun(0, "gate", d.name, "--ref", head, "--base", base)
	if !strings.Contains(r.Stdout, "acknowledged by the supervisor (seq 4), signed by alice@example.com, github:alice") {
		t.Fatalf("gate with alice's ack: %s", r.Stdout)
	}
}
