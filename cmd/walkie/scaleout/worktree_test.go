package scaleout

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/walkie"
)

// A debate whose builder runs in git worktrees (workspace: worktree),
// on a worker whose clone of the home's repository is behind: the worker
// fetches the commit the turn starts at, the builder commits in its
// worktree there, and the commit comes home as the turn's branch
// walkie/ID/turn-N, which the turn record names; nothing of the worktree
// stays on the worker, and the record verifies.
func TestWorktreeTurnOnARemoteWorker(t *testing.T) {
	gittest.Isolate(t) // the home, the worker and the agents commit as the test's identity
	scripts := agentScripts{
		"alice": `shell: 'echo "fixed in turn {turn}" > fix.go && git add fix.go && git commit -qm "alice: the fix of turn {turn}"'` +
			"\nbody: \"Fixed it on my branch.\"\nsign_from: 2",
		"bob": converging["bob"],
	}
	c := newCluster(t, "worktree", 3, scripts)
	gittest.Git(t, c.dir, "init", "--quiet", "--initial-branch=main")
	gittest.Commit(t, c.dir, "README.md", "the project\n", "first")
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, c.dir, "clone", "--quiet", c.dir, clone)
	// The home moves on after the worker cloned it.
	start := gittest.Commit(t, c.dir, "main.go", "package main\n", "second")
	worktree := map[string]map[string]string{"alice": {"workspace": "worktree"}}
	c.writeConfig(c.path("walkie.yaml"), c.dir, scripts, worktree)

	_, aliceDir := c.startWorker("w-alice", agentScripts{"alice": scripts["alice"]}, map[string]map[string]string{"alice": {"env_allow": `["GIT_*"]`}}, "--repo", clone)
	c.startWorker("w-bob", agentScripts{"bob": scripts["bob"]}, nil)
	c.startHome()
	c.waitStatus(walkie.StatusConverged, 90*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	for _, r := range recs {
		if r.Agent == "bob" {
			if r.Branch != "" {
				t.Errorf("bob's turn %d, not in a worktree, names branch %s", r.Turn, r.Branch)
			}
			continue
		}
		branch := "walkie/" + c.id + "/turn-" + strconv.Itoa(r.Turn)
		head := gittest.Git(t, c.dir, "rev-parse", "--verify", "--quiet", branch)
		if want := branch + "@" + head[:min(len(head), 12)]; head == "" || r.Branch != want {
			t.Fatalf("turn %d names branch %q, want %q in the home's repository", r.Turn, r.Branch, want)
		}
		if got := gittest.Git(t, c.dir, "show", head+":fix.go"); got != "fixed in turn "+strconv.Itoa(r.Turn) {
			t.Errorf("fix.go on %s: %q", branch, got)
		}
		if parent := gittest.Git(t, c.dir, "rev-parse", head+"^"); parent != start {
			t.Errorf("%s's commit sits on %s, want the home's HEAD %s", branch, parent, start)
		}
	}
	if gittest.Git(t, c.dir, "rev-parse", "main") != start {
		t.Error("the home's main moved")
	}
	// Nothing of the worktrees stays on the worker: not in git, not on
	// disk, not as branches of its clone.
	if list := gittest.Git(t, clone, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left in the worker's clone:\n%s", list)
	}
	if b := gittest.Git(t, clone, "branch", "--list", "walkie/*"); b != "" {
		t.Errorf("turn branches left in the worker's clone: %s", b)
	}
	for _, pattern := range []string{"tree", "worktree.json"} {
		if left, _ := filepath.Glob(filepath.Join(aliceDir, "attempts", "*", "*", pattern)); len(left) != 0 {
			t.Errorf("left on the worker: %v", left)
		}
	}
	if _, err := os.Stat(filepath.Join(c.stateDir(), "worktrees")); err == nil {
		t.Error("the home made worktrees of its own")
	}
}
