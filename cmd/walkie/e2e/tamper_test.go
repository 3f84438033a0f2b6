package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A hostile builder in a worktree session reaches into the repository it
// shares with the user (issue 27, item 4). Whatever it changes outside its
// debate's branches is put back, the attempt is tampered (and retried),
// nothing it planted runs as walkie, and the record's commits go on the
// branch as it was before the session.
func TestWorktreeSessionTampering(t *testing.T) {
	// common is the repository's shared git directory, from the session's
	// worktree.
	const common = `common=$(git rev-parse --path-format=absolute --git-common-dir) && `
	for _, c := range []struct {
		name, attack string
		found        []string // in the tampered attempt's detail
	}{
		{"hooks", common + `for h in post-checkout reference-transaction pre-commit post-commit; do printf '#!/bin/sh\n[ -n "$WALKIE_SESSION" ] || echo "$0 $WALKIE_TEST_SECRET" >> {marker}\n' > "$common/hooks/$h" && chmod +x "$common/hooks/$h"; done`,
			[]string{"added .git/hooks/post-checkout", "added .git/hooks/reference-transaction"}},
		{"config", `git config core.fsmonitor "{out}/fsmonitor" && printf '#!/bin/sh\n[ -n "$WALKIE_SESSION" ] || echo fsmonitor >> {marker}\n' > "{out}/fsmonitor" && chmod +x "{out}/fsmonitor"`,
			[]string{"changed .git/config"}},
		{"move main", `echo evil > evil.go && git add evil.go && git commit -qm evil && git update-ref refs/heads/main HEAD`,
			[]string{"moved refs/heads/main from "}},
		{"forge a tag", `git tag v9 HEAD`, []string{"made refs/tags/v9"}},
		{"forge another debate's branch", `git branch walkie/other/turn-1 HEAD`, []string{"made refs/heads/walkie/other/turn-1"}},
		{"stage in the user's checkout", `cd {dir} && git update-index --add --cacheinfo "100644,$(echo planted | git hash-object -w --stdin),planted.go"`,
			[]string{"changed the index of {dir}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			outside := t.TempDir()
			marker := filepath.Join(outside, "ran-as-walkie")
			d := newThread(t, map[string]string{
				"builder": `steps:
  - shell: '` + strings.NewReplacer("{marker}", marker, "{out}", outside, "'", "''").Replace(c.attack) + `'
    body: "Please review.\n\nType: review-request"
  - shell: 'echo v1 > login.go && git add login.go && git commit -qm "login: v1"'
    body: "Please review the login fix.\n\nType: review-request"`,
				"reviewer": `behavior: none`,
			}, "", "--worktree", "--git-commit")
			d.write("agents/builder.yaml", strings.ReplaceAll(string(d.read("agents/builder.yaml")), "{dir}", d.Dir))
			d.Env = append(d.Env, "WALKIE_TEST_SECRET=s3cret")
			before := d.refsOutside("refs/heads/walkie/login/")
			main := d.git("rev-parse", "main")
			config, err := os.ReadFile(filepath.Join(d.Dir, ".git", "config"))
			must(t, err)

			d.MustRun(0, "turn", d.name, "--approve")
			recs := d.turns()
			d.wantOutcomes(recs, "tampered", "accepted")
			for _, f := range c.found {
				if f = strings.ReplaceAll(f, "{dir}", d.Dir); !strings.Contains(recs[0].Detail, f) {
					t.Errorf("the tampered attempt's detail lacks %q:\n%s", f, recs[0].Detail)
				}
			}
			if b, err := os.ReadFile(marker); err == nil {
				t.Errorf("what the session planted ran as walkie:\n%s", b)
			}
			// Everything outside the debate's branches is as it was, but
			// for the record's one commit on main, right on top of it.
			if got := d.git("rev-parse", "main^"); got != main {
				t.Errorf("the record's commit is on %s, not on main as it was (%s)", got, main)
			}
			if s := d.git("log", "-1", "--format=%s", "main"); !strings.HasPrefix(s, "login #1 · turn 1 · builder · review-request") {
				t.Errorf("main's head is %q", s)
			}
			after := d.refsOutside("refs/heads/walkie/login/")
			if want := strings.Replace(before, "refs/heads/main "+main, "refs/heads/main "+d.git("rev-parse", "main"), 1); after != want {
				t.Errorf("refs after:\n%s\nwant:\n%s", after, want)
			}
			if now, _ := os.ReadFile(filepath.Join(d.Dir, ".git", "config")); string(now) != string(config) {
				t.Errorf("the config is now:\n%s", now)
			}
			for _, h := range []string{"post-checkout", "reference-transaction"} {
				if _, err := os.Stat(filepath.Join(d.Dir, ".git", "hooks", h)); err == nil {
					t.Errorf("the planted %s hook is still there", h)
				}
			}
			if s := d.git("status", "--porcelain"); s != "" {
				t.Errorf("git status:\n%s", s)
			}
		})
	}
}

// refsOutside lists the repository's refs not under prefix, with their
// commits.
func (d *debate) refsOutside(prefix string) string {
	d.T.Helper()
	var keep []string
	for _, l := range strings.Split(d.git("for-each-ref", "--format=%(refname) %(objectname)"), "\n") {
		if !strings.HasPrefix(l, prefix) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// A session that tampers and then kills the controller (kill -9, so it
// cannot look) gains nothing: the next controller puts the repository
// back, from what the killed one noted before the session, before it runs
// git there, and says so in the interrupted attempt's detail.
func TestWorktreeSessionKillsTheController(t *testing.T) {
	d := newThread(t, map[string]string{
		"builder": `steps:
  - shell: 'git commit -q --allow-empty -m evil && git update-ref refs/heads/main HEAD && git tag v9 HEAD && kill -9 $(ps -o ppid= -p $PPID)'
    behavior: hang
  - body: "Please review.\n\nType: review-request"`,
		"reviewer": `behavior: none`,
		// Without the sandbox: inside it the session can signal nothing
		// outside its domain (Landlock's scope), so it could not kill its
		// controller. What is under test is the guard's repair after a
		// controller died mid-session, however it died.
	}, "    sandbox: off\n", "--worktree", "--git-commit")
	main := d.git("rev-parse", "main")
	p := d.Start("turn", d.name, "--approve")
	if r := p.Wait(20 * time.Second); r.Code != -1 && r.Code != 137 {
		t.Logf("the killed controller exited %d", r.Code)
	}
	if got := d.git("rev-parse", "main"); got == main {
		t.Fatal("the session did not move main: the attack did not run")
	}
	d.marker.Kill()
	d.MustRun(0, "turn", d.name, "--approve")
	recs := d.turns()
	d.wantOutcomes(recs, "interrupted", "accepted")
	if !strings.Contains(recs[0].Detail, "moved refs/heads/main from "+main[:12]) || !strings.Contains(recs[0].Detail, "made refs/tags/v9") {
		t.Errorf("the interrupted attempt's detail: %s", recs[0].Detail)
	}
	if got := d.git("rev-parse", "main^"); got != main {
		t.Errorf("the record's commit is on %s, not on main as it was (%s)", got, main)
	}
	if tags := d.git("tag", "--list"); tags != "" {
		t.Errorf("tags: %s", tags)
	}
}
