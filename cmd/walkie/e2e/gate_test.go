package e2e

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
)

// An abbreviated sha opens the gate for no other commit (issue 27, item
// 2): a benign commit is approved and acknowledged as feat@<7 hex>, a
// commit sharing those 7 digits is swapped in and the approved one is
// gone, and the gate refuses the swapped one. walkie records the full id
// the abbreviation stood for when it was posted, and refuses an
// abbreviation that is ambiguous.
func TestGateAfterAShortShaSwap(t *testing.T) {
	d := newThread(t, map[string]string{"builder": "behavior: none", "reviewer": "behavior: none"}, "")
	benign, evil := gittest.Colliding(t, d.dir, 7)
	abbrev := benign.ID[:7]
	if evil.ID[:7] != abbrev {
		t.Fatalf("%s and %s do not collide", benign.ID, evil.ID)
	}
	gittest.WriteCommit(t, d.dir, benign)
	d.git("update-ref", "refs/heads/feat", benign.ID)
	post := func(code int, body string, args ...string) result {
		t.Helper()
		return d.mustRun(code, append([]string{"post", d.name, "--body-file", d.write2("agents/body.md", body+"\n")}, args...)...)
	}
	post(0, "Please review feat.", "--from", "builder", "--type", "review-request", "--refs", "feat@"+abbrev)
	post(0, "Approved: the tests pass.", "--from", "reviewer", "--type", "verdict", "--verdict", "approve", "--refs", "feat@"+abbrev)
	post(0, "Read it; merge.", "--supervisor", "--type", "ack", "--refs", abbrev)
	if !strings.Contains(string(d.read(d.name)), "Refs: feat@"+benign.ID+"\n") {
		t.Fatalf("the verdict does not record the full id:\n%s", d.read(d.name))
	}
	d.mustRun(0, "gate", d.name, "--ref", benign.ID)

	// The colliding commit arrives: its abbreviation names no commit now.
	gittest.WriteCommit(t, d.dir, evil)
	r := post(3, "Also see this.", "--from", "builder", "--type", "info", "--refs", abbrev)
	if !strings.Contains(r.stderr, abbrev+" is the start of 2 commits ("+benign.ID[:12]) {
		t.Fatalf("post of an ambiguous ref: %s", r.stderr)
	}
	r = d.mustRun(3, "gate", d.name, "--ref", abbrev)
	if !strings.Contains(r.stderr, "is the start of 2 commits") {
		t.Fatalf("gate for an ambiguous --ref: %s", r.stderr)
	}

	// The swap: feat is the other commit, and the approved one is gone.
	d.git("update-ref", "refs/heads/feat", evil.ID)
	d.git("reflog", "expire", "--expire=now", "--all")
	d.git("gc", "--quiet", "--prune=now")
	if out := d.git("cat-file", "-t", evil.ID); out != "commit" {
		t.Fatalf("the swapped-in commit is a %s", out)
	}
	if r := d.run("gate", d.name, "--ref", benign.ID); r.code == 0 {
		t.Fatal("the gate opened for a commit the repository no longer has")
	}
	r = d.mustRun(3, "gate", d.name, "--ref", evil.ID)
	if !strings.Contains(r.stderr, "approves feat@"+benign.ID+", not "+evil.ID) {
		t.Fatalf("gate for the swapped-in commit: %s", r.stderr)
	}
}
