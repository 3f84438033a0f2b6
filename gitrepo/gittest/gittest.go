// Package gittest makes real git repositories for tests: a temporary work
// tree with an identity of its own and none of the machine's git
// configuration, and helpers to commit in it and read it.
package gittest

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Isolate makes every git the test runs (and every process it starts
// that runs git) read no configuration of the machine's, and commit as a
// fixed identity. It calls t.Setenv, so the test cannot be parallel.
func Isolate(t testing.TB) {
	t.Helper()
	sessiontest.Tool(t, "git")
	for k, v := range Env() {
		t.Setenv(k, v)
	}
}

// Env is the environment Isolate sets, for a test that passes an
// environment to a process of its own.
func Env() map[string]string {
	return map[string]string{
		"GIT_CONFIG_GLOBAL": os.DevNull, "GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME": "Tess Ter", "GIT_AUTHOR_EMAIL": "tess@example.com",
		"GIT_COMMITTER_NAME": "Tess Ter", "GIT_COMMITTER_EMAIL": "tess@example.com",
	}
}

// Init makes a repository in a new temporary directory with one commit
// on main holding README.md, and returns its directory.
func Init(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// The directory's links resolved: git reports the top that way.
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "--quiet", "--initial-branch=main")
	Commit(t, dir, "README.md", "hello\n", "first")
	return dir
}

// Git runs git in dir and returns its output, trimmed; a failure fails
// the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Commit writes file (relative to dir) and commits it with msg; it
// returns the new commit's full sha.
func Commit(t testing.TB, dir, file, content, msg string) string {
	t.Helper()
	path := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", "--", file)
	Git(t, dir, "commit", "--quiet", "-m", msg)
	return Git(t, dir, "rev-parse", "HEAD")
}

// Object is a git object as git stores it: its id and its content.
type Object struct {
	ID   string
	Data []byte
}

// Colliding makes two commits on top of dir's HEAD, each adding a file of
// its own (a.txt, b.txt), whose ids share their first n hex digits: an
// abbreviated id that names either. Their trees are written into dir;
// the commits are not (WriteCommit writes one). A birthday search over
// commit messages: for n = 7 it takes some 16,000 tries a side.
func Colliding(t testing.TB, dir string, n int) (a, b Object) {
	t.Helper()
	parent := Git(t, dir, "rev-parse", "HEAD")
	treeWith := func(name string) string {
		blob := gitIn(t, dir, name+"\n", "hash-object", "-w", "--stdin")
		base := Git(t, dir, "ls-tree", "HEAD")
		return gitIn(t, dir, base+"\n100644 blob "+blob+"\t"+name+"\n", "mktree")
	}
	trees := [2]string{treeWith("a.txt"), treeWith("b.txt")}
	seen := [2]map[string]Object{{}, {}}
	for i := range 1 << 22 {
		side := i % 2
		body := fmt.Sprintf("tree %s\nparent %s\nauthor Tess Ter <tess@example.com> 1700000000 +0000\ncommitter Tess Ter <tess@example.com> 1700000000 +0000\n\nchange %d\n", trees[side], parent, i)
		sum := sha1.Sum(fmt.Appendf(nil, "commit %d\x00%s", len(body), body))
		o := Object{ID: hex.EncodeToString(sum[:]), Data: []byte(body)}
		if other, ok := seen[1-side][o.ID[:n]]; ok {
			if side == 0 {
				return o, other
			}
			return other, o
		}
		seen[side][o.ID[:n]] = o
	}
	t.Fatalf("no two commits sharing %d hex digits in %d tries", n, 1<<22)
	return
}

// WriteCommit writes the commit o into dir's repository.
func WriteCommit(t testing.TB, dir string, o Object) {
	t.Helper()
	if id := gitIn(t, dir, string(o.Data), "hash-object", "-w", "-t", "commit", "--stdin"); id != o.ID {
		t.Fatalf("git stored the commit as %s, not %s", id, o.ID)
	}
}

// gitIn runs git in dir with input, returning its output trimmed.
func gitIn(t testing.TB, dir, input string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}
