package scaleout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// What travels between the home and its workers, and who may speak.

// fiveMiB is the size of the large things here: past Temporal's 2 MiB
// payload limit, so they can only travel by reference.
const fiveMiB = 5 << 20

// bigText is n bytes of record-safe text.
func bigText(n int) string {
	line := "a long research note, one line of many, read by every later turn\n"
	return strings.Repeat(line, n/len(line)+1)[:n-1] + "\n"
}

// A record of 5 MiB runs a turn on a worker that shares no filesystem
// with the home: the record goes to it, and the agent's version comes
// back, through the home's blob store served over HTTP with a token.
func TestFiveMiBRecordRunsATurnOnARemoteWorker(t *testing.T) {
	c := newClusterWith(t, "bigrec", 3, converging, "max_turn_bytes: 6000000\n")
	c.write("big.md", bigText(fiveMiB))
	c.MustRun(0, "post", c.name, "--supervisor", "--body-file", "big.md")
	home := c.startHome("--blob-listen", anyPort, "--blob-token", "s3cret")
	addr := c.saidAddr(home, "serving the blob store", "listen")
	c.blobFlags = []string{"--blobs", "http://" + addr, "--blob-token", "s3cret"}
	c.startWorker("w", converging, nil)
	// Each turn hashes, sends and judges 5 MiB: about 35 s for the three
	// under the race detector on a quiet 2-core machine, over 90 s on a
	// loaded one. A limit, not a figure (BenchmarkScaleOut has those).
	c.waitStatus(walkie.StatusConverged, 4*time.Minute)
	d := c.verify(3)
	if fi, err := os.Stat(c.path(c.name)); err != nil || fi.Size() < fiveMiB {
		t.Fatalf("the record is %v bytes (%v), want over 5 MiB", fi.Size(), err)
	}
	recs := c.turns()
	c.onceEach(recs, 3)
	for _, r := range recs {
		if r.Worker != "w" {
			t.Errorf("turn %d ran on %q", r.Turn, r.Worker)
		}
	}
	if last := d.Entries[len(d.Entries)-1]; last.Kind != walkie.KindTurn || last.Agent != "alice" {
		t.Fatalf("the last entry is of kind %d by %s, want alice's turn", last.Kind, last.Agent)
	}
	// Without the token, the home's store answers nothing.
	c.blobFlags = []string{"--blobs", "http://" + addr}
	r := c.Run(append([]string{"worker", "--temporal", server, "--agents", "alice", "--config", c.path("walkie.yaml"), "--dir", t.TempDir()}, c.blobFlags...)...)
	if r.Code == 0 || !strings.Contains(r.Stderr, "--blob-token") {
		t.Fatalf("a worker without the token: exit %d\n%s", r.Code, r.Stderr)
	}
}

// A round table whose workspace holds a 5 MiB file, and whose plan phase
// writes a 5 MiB file: the workspace reaches the research phase's sandbox
// on the worker whole (it writes the file's hash), and the plan's file is
// judged on the worker by the round table's own bound, as locally: too
// big, its first 256 KiB kept at home, the phase failed after its retry.
func TestFiveMiBPhaseFileAndWorkspaceOnARemoteWorker(t *testing.T) {
	agents := agentScripts{
		"calc":  tableAgents["calc"],
		"brook": tableAgents["brook"],
		"gem":   `behavior: none` + "\n" + `shell: "sha256sum \"$WALKIE_WORKSPACE/big.bin\" | cut -c1-64 > \"$WALKIE_OUTPUT\""`,
		"cla":   `behavior: none` + "\n" + fmt.Sprintf(`shell: "head -c %d /dev/zero | tr '\\0' x > \"$WALKIE_OUTPUT\""`, fiveMiB),
	}
	c := newTable(t, "bigphase", agents, "--implementer", "calc", "--reviewers", "brook", "--phases", "research=gem,plan=cla",
		"--grader", "test -s calc", "--max-rounds", "2")
	big := make([]byte, fiveMiB)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	c.write(filepath.Join(c.sub, "work", "big.bin"), string(big))
	sum := sha256.Sum256(big)
	c.startWorker("w", agents, nil)
	c.startHome()
	research := filepath.Join(c.stateDir(), "phases", "research.md")
	sessiontest.WaitFor(t, 60*time.Second, "the research phase written", func() bool {
		b, _ := os.ReadFile(research)
		return len(b) > 0
	})
	if b, _ := os.ReadFile(research); strings.TrimSpace(string(b)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("the research phase saw the workspace's big.bin as %q, want sha256 %x", b, sum)
	}
	c.approveWhenAsked("research")
	c.waitStatus(walkie.StatusFailed, 90*time.Second)
	var plans []blackbox.Turn
	for _, r := range c.turns() {
		if r.Role == "plan" {
			plans = append(plans, r)
		}
	}
	want := fmt.Sprintf("the file is %d bytes or more, over the limit of %d", fiveMiB, 256<<10)
	if len(plans) != 2 || plans[0].Outcome != string(walkie.OutcomeMalformed) || !strings.Contains(plans[0].Detail, want) || plans[0].Worker != "w" {
		t.Fatalf("the plan's attempts, want two malformed on w saying %q:\n%s", want, blackbox.Dump(plans))
	}
	kept, err := os.ReadFile(filepath.Join(c.stateDir(), plans[0].Kept))
	if err != nil || !strings.HasPrefix(string(kept), strings.Repeat("x", 256<<10)+"\n\n[walkie: the agent's file was") {
		t.Fatalf("the kept plan: %d bytes (%v), want its first 256 KiB and the note", len(kept), err)
	}
}

var oldBuild struct {
	once sync.Once
	path string
	err  error
}

// oldWorker builds walkie-temporal as an older release would call itself
// (the release build sets the version with the linker, as here).
func oldWorker(t *testing.T, version string) string {
	t.Helper()
	oldBuild.once.Do(func() {
		oldBuild.path = filepath.Join(bin, "old", "walkie-temporal")
		out, err := exec.Command("go", "build", "-tags", "temporal", "-ldflags", "-X main.linkedVersion="+version, "-o", oldBuild.path,
			"github.com/walkie-sh/walkie/cmd/walkie").CombinedOutput()
		if err != nil {
			oldBuild.err = fmt.Errorf("build the old worker: %v\n%s", err, out)
		}
	})
	if oldBuild.err != nil {
		t.Fatal(oldBuild.err)
	}
	return oldBuild.path
}

// A worker of another walkie is refused at the start of the turn's
// activity, as bad input naming both versions, never run: nothing is
// recorded, the debate says why, and once a worker of the home's version
// polls (and the debate is looked at again), it runs.
func TestWorkerOfAnotherVersionIsRefused(t *testing.T) {
	c := newCluster(t, "version", 3, converging)
	old := c.Runner
	old.Bin = oldWorker(t, "v0.9.0")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "walkie.yaml")
	c.writeConfig(cfg, dir, converging, nil)
	w := old.Start(append([]string{"worker", "--temporal", server, "--agents", "alice,bob", "--config", cfg, "--dir", filepath.Join(dir, "attempts"),
		"--identity", "w-old", "--log-format", "json", "--blobs", c.blobs}, c.queues...)...)
	c.waitPolling(w, 2)
	c.startHome()
	own := strings.TrimPrefix(strings.SplitN(c.MustRun(0, "--version").Stdout, "\n", 2)[0], "walkie ")
	var msg string
	sessiontest.WaitFor(t, 30*time.Second, "the home showing the refusal", func() bool {
		msg, _ = c.fleet()["error"].(string)
		return msg != ""
	})
	for _, want := range []string{"worker w-old", "walkie " + own + " (protocol 2)", "walkie v0.9.0 (protocol 2)", "run the same walkie"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal %q does not say %q", msg, want)
		}
	}
	if st := c.state(); st.Running != nil || len(c.turns()) != 0 || blackbox.Invocations(filepath.Join(blackbox.FakeDir(dir), "alice.state")) != 0 {
		t.Fatalf("a refused turn ran: running %+v, %d attempts logged", st.Running, len(c.turns()))
	}
	w.Kill()
	c.startWorker("w", converging, nil)
	c.write("poke.md", "A worker of this version is polling now.\n")
	c.MustRun(0, "post", c.name, "--supervisor", "--body-file", "poke.md")
	c.waitStatus(walkie.StatusConverged, 60*time.Second)
	c.onceEach(c.turns(), 3)
}
