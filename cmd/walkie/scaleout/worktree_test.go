package scaleout

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/session/sessiontest"
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
	gittest.Git(t, c.Dir, "init", "--quiet", "--initial-branch=main")
	gittest.Commit(t, c.Dir, "README.md", "the project\n", "first")
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, c.Dir, "clone", "--quiet", c.Dir, clone)
	// The home moves on after the worker cloned it.
	start := gittest.Commit(t, c.Dir, "main.go", "package main\n", "second")
	worktree := map[string]map[string]string{"alice": {"workspace": "worktree"}}
	c.writeConfig(c.path("walkie.yaml"), c.Dir, scripts, worktree)

	_, aliceDir := c.startWorker("w-alice", agentScripts{"alice": scripts["alice"]}, map[string]map[string]string{"alice": {"env_allow": `["GIT_*"]`}}, "--repo", clone)
	c.startWorker("w-bob", agentScripts{"bob": scripts["bob"]}, nil)
	c.startHome()
	c.waitStatus(walkie.StatusConverged, 90*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	from := start // where the next of alice's turns starts
	for _, r := range recs {
		if r.Agent == "bob" {
			if r.Branch != "" {
				t.Errorf("bob's turn %d, not in a worktree, names branch %s", r.Turn, r.Branch)
			}
			continue
		}
		branch := "walkie/" + c.id + "/turn-" + strconv.Itoa(r.Turn)
		head := gittest.Git(t, c.Dir, "rev-parse", "--verify", "--quiet", branch)
		if want := branch + "@" + head; head == "" || r.Branch != want { // a full id, as the record keeps it
			t.Fatalf("turn %d names branch %q, want %q in the home's repository", r.Turn, r.Branch, want)
		}
		if got := gittest.Git(t, c.Dir, "show", head+":fix.go"); got != "fixed in turn "+strconv.Itoa(r.Turn) {
			t.Errorf("fix.go on %s: %q", branch, got)
		}
		// The record cites each turn's branch, so a turn starts where the
		// last cited commit is: the first at the home's HEAD, the next on
		// the first's commit (docs/review-threads.md, "Worktrees").
		if parent := gittest.Git(t, c.Dir, "rev-parse", head+"^"); parent != from {
			t.Errorf("%s's commit sits on %s, want %s", branch, parent, from)
		}
		from = head
	}
	if gittest.Git(t, c.Dir, "rev-parse", "main") != start {
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

// A worker SIGKILLed while its agent works in a worktree leaves the
// worktree (and the agent) behind; its next start, on the same --dir,
// ends the agent and removes the worktree and its branch before it takes
// a turn, then runs the turn again in a fresh worktree, recorded once.
func TestKilledWorkersWorktreeIsRemovedOnItsNextStart(t *testing.T) {
	gittest.Isolate(t)
	commit := `shell: 'echo "fixed in turn {turn}" > fix.go && git add fix.go && git commit -qm "alice: the fix of turn {turn}"'`
	scripts := agentScripts{"alice": commit + "\nbody: \"Fixed it on my branch.\"\nsign_from: 2", "bob": converging["bob"]}
	c := newCluster(t, "killtree", 3, scripts)
	gittest.Git(t, c.Dir, "init", "--quiet", "--initial-branch=main")
	start := gittest.Commit(t, c.Dir, "README.md", "the project\n", "first")
	clone := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, c.Dir, "clone", "--quiet", c.Dir, clone)
	c.writeConfig(c.path("walkie.yaml"), c.Dir, scripts, map[string]map[string]string{"alice": {"workspace": "worktree"}})
	gitEnv := map[string]map[string]string{"alice": {"env_allow": `["GIT_*"]`}}

	first, firstDir := c.startWorker("w-first", agentScripts{"alice": commit + "\nbehavior: hang"}, gitEnv, "--repo", clone)
	c.startWorker("w-bob", agentScripts{"bob": scripts["bob"]}, nil)
	c.startHome()
	branch := "walkie/" + c.id + "/turn-1"
	sessiontest.WaitFor(t, 30*time.Second, "alice's commit in her worktree on the first worker", func() bool {
		out, err := exec.Command("git", "-C", clone, "rev-parse", "--verify", "--quiet", branch).Output()
		return err == nil && strings.TrimSpace(string(out)) != start
	})
	attempts := filepath.Join(firstDir, "attempts")
	left, _ := filepath.Glob(filepath.Join(attempts, "*", "*", "tree"))
	if len(left) != 1 {
		t.Fatalf("worktrees of the running turn on the worker: %v", left)
	}
	first.Kill()
	if _, err := os.Stat(left[0]); err != nil {
		t.Fatalf("the killed worker's worktree is gone already (%v): the test checks nothing", err)
	}

	// Started again on the same directory, with an agent that finishes.
	again := t.TempDir()
	cfg := filepath.Join(again, "walkie.yaml")
	c.writeConfig(cfg, again, agentScripts{"alice": scripts["alice"]}, gitEnv)
	p := c.Start(append([]string{"worker", "--temporal", server, "--agents", "alice", "--config", cfg, "--dir", attempts,
		"--identity", "w-again", "--grace", "2s", "--log-format", "json", "--repo", clone, "--blobs", c.blobs}, c.queues...)...)
	c.waitPolling(p, 1)
	// Polling begins only after the clean-up.
	if _, err := os.Stat(left[0]); err == nil {
		t.Fatalf("the killed worker's worktree %s is still there after its next start", left[0])
	}
	if !strings.Contains(p.Output(), "removed a worktree left by an earlier worker") {
		t.Errorf("the restarted worker did not say it removed the worktree:\n%s", p.Output())
	}
	c.waitStatus(walkie.StatusConverged, 90*time.Second)
	c.verify(3)
	recs := c.turns()
	c.onceEach(recs, 3)
	if recs[0].Worker != "w-again" || !strings.HasPrefix(recs[0].Branch, branch+"@") {
		t.Fatalf("turn 1 should be one attempt by w-again on %s:\n%s", branch, blackbox.Dump(recs))
	}
	if list := gittest.Git(t, clone, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("worktrees left in the worker's clone:\n%s", list)
	}
	if b := gittest.Git(t, clone, "branch", "--list", "walkie/*"); b != "" {
		t.Errorf("turn branches left in the worker's clone: %s", b)
	}
	if left, _ := filepath.Glob(filepath.Join(attempts, "*", "*", "tree")); len(left) != 0 {
		t.Errorf("left on the worker: %v", left)
	}
}
