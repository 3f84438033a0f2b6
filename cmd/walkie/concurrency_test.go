package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// walkieCmd runs the built walkie binary and returns its exit code and
// output; it fails the test only if the process could not run at all.
func walkieCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(walkieBin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("walkie %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// concurrentBody is what agent posts as its nth turn: several lines, each
// naming both, so that any interleaving of two writes shows.
func concurrentBody(agent string, n int) string {
	var b strings.Builder
	for l := 0; l < 12; l++ {
		fmt.Fprintf(&b, "%s turn %d line %d: %s\n", agent, n, l, strings.Repeat(agent[:1], 60))
	}
	return b.String()
}

// TestConcurrentPosts runs 8 participants at once, each a loop of real
// `walkie post --wait` processes, 50 posts each: 400 posts that all race
// for the lock and wait on the doorbell for their turn. Every post must
// be accepted in its turn, and the record must come out gapless, in turn
// order, each entry whole, and verified.
func TestConcurrentPosts(t *testing.T) {
	const agents, each = 8, 50
	var names []string
	for i := range agents {
		names = append(names, "p"+strconv.Itoa(i+1))
	}
	file := filepath.Join(t.TempDir(), "c.walkie.md")
	if code, _, stderr := walkieCmd(t, "", "init", file, "--agents", strings.Join(names, ","), "--people", strings.Join(names, ","), "--max-rounds", strconv.Itoa(each)); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, agents*each)
	turnRe := regexp.MustCompile(`^recorded turn (\d+) by (\S+) \(seq (\d+)\)`)
	for a, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= each; n++ {
				code, stdout, stderr := walkieCmd(t, concurrentBody(name, n), "post", file, "--from", name, "--wait", "2m", "--body-file", "-")
				if code != 0 {
					errs <- fmt.Sprintf("%s post %d: exit %d: %s", name, n, code, stderr)
					return
				}
				m := turnRe.FindStringSubmatch(stdout)
				want := (n-1)*agents + a + 1
				if m == nil || m[1] != strconv.Itoa(want) || m[2] != name || m[3] != strconv.Itoa(want) {
					errs <- fmt.Sprintf("%s post %d: %q, want turn and seq %d", name, n, stdout, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d posts by %d concurrent posters in %s", agents*each, agents, time.Since(start).Round(time.Millisecond))

	if code, stdout, stderr := walkieCmd(t, "", "verify", file); code != 0 {
		t.Fatalf("verify: %d %s", code, stderr)
	} else if !strings.Contains(stdout, fmt.Sprintf("ok, %d entries", agents*each)) {
		t.Fatalf("verify: %s", stdout)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		t.Fatal(err)
	}
	if len(d.Entries) != agents*each || len(bytes.TrimSpace(d.Tail)) != 0 {
		t.Fatalf("%d entries and tail %q, want %d and none", len(d.Entries), d.Tail, agents*each)
	}
	for i, e := range d.Entries {
		seq, agent, n := i+1, names[i%agents], i/agents+1
		if e.Marker.Seq != seq || e.Turn != seq || e.Agent != agent {
			t.Fatalf("entry %d: seq %d turn %d by %s, want %d by %s", seq, e.Marker.Seq, e.Turn, e.Agent, seq, agent)
		}
		if got, want := string(e.Body), "\n"+concurrentBody(agent, n); got != want {
			t.Fatalf("entry %d (%s's post %d) is not whole:\n%s", seq, agent, n, got)
		}
	}
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CheckState(st); err != nil {
		t.Fatal(err)
	}
	if p := d.Progress(); walkie.DebateStatus(&d.Meta, p, st) != walkie.StatusMaxRounds {
		t.Errorf("after %d rounds of %d: status %s", each, each, walkie.DebateStatus(&d.Meta, p, st))
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatal(err)
	}
}
