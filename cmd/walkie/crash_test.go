package main

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// TestKillPostAtRandomPoints kills `walkie post` with SIGKILL at random
// points, hundreds of times. Half the kills land after a random delay
// anywhere in the process's life; the other half as soon as the file
// starts to grow, to catch the 1 MB write in the middle (no hook in walkie
// slows it down: the kill must win a real race). After every
// kill the record must either verify or report a torn tail, never
// anything else; a torn tail is repaired and the debate carries on.
func TestKillPostAtRandomPoints(t *testing.T) {
	iterations := 200
	if testing.Short() {
		iterations = 40
	}
	const bodySize = 1 << 20
	// Few long lines: the body costs the parser little, the write a lot.
	line := strings.Repeat("0123456789abcdef", 1024) + "\n"
	body := strings.Repeat(line, bodySize/len(line))
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	var file string
	newDebate := func() {
		file = filepath.Join(t.TempDir(), "k.walkie.md")
		if code, _, stderr := walkieCmd(t, "", "init", file, "--agents", "a,b", "--people", "a,b", "--max-rounds", "1000"); code != 0 {
			t.Fatalf("init: %s", stderr)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// Before the first entry the front matter may still change.
		b = []byte(strings.Replace(string(b), "max_rounds: 1000\n", "max_rounds: 1000\nmax_turn_bytes: 2000000\n", 1))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	next := func() string {
		d, err := walkie.Load(file)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		return d.Progress().NextAgent
	}
	// A post that is not killed: the debate must carry on.
	post := func(what string) {
		t.Helper()
		if code, _, stderr := walkieCmd(t, "short turn\n", "post", file, "--from", next(), "--body-file", "-"); code != 0 {
			t.Fatalf("%s: post after the kill: exit %d: %s", what, code, stderr)
		}
	}

	var lifetime time.Duration // how long an unkilled post takes here
	newDebate()
	for range 3 {
		start := time.Now()
		if code, _, stderr := walkieCmd(t, body, "post", file, "--from", next(), "--body-file", "-"); code != 0 {
			t.Fatalf("post: %s", stderr)
		}
		lifetime = max(lifetime, time.Since(start))
	}
	t.Logf("an unkilled 1 MB post takes up to %s", lifetime)

	var torn, whole, none int
	for i := range iterations {
		if i%3 == 0 {
			newDebate() // keep the file, and so each check, small
		}
		before, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(walkieBin, "post", file, "--from", next(), "--body-file", "-")
		cmd.Stdin = strings.NewReader(body)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(lifetime))))
		} else {
			// Kill the moment the write has begun, bounded by the
			// process's life. fstat on a descriptor held open is the
			// cheapest way to see the size move.
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(2 * lifetime); time.Now().Before(deadline); {
				if fi, err := f.Stat(); err == nil && fi.Size() != before.Size() {
					break
				}
			}
			f.Close()
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		d, err := walkie.Load(file)
		if err != nil {
			t.Fatalf("iteration %d: the record does not even parse after a kill: %v", i, err)
		}
		var tt *walkie.TornTailError
		switch err := d.Verify(); {
		case err == nil:
			if fi, _ := os.Stat(file); fi.Size() == before.Size() {
				none++
			} else {
				whole++
			}
			st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
			if err != nil {
				t.Fatal(err)
			}
			if err := d.CheckState(st); err != nil {
				t.Fatalf("iteration %d: %v", i, err)
			}
		case errors.As(err, &tt):
			torn++
			if code, _, stderr := walkieCmd(t, "", "verify", file); code != exitUnverified || !strings.Contains(stderr, "unstamped bytes") {
				t.Fatalf("iteration %d: walkie verify on a torn tail: exit %d: %s", i, code, stderr)
			}
			if code, stdout, stderr := walkieCmd(t, "", "repair", file); code != 0 || !strings.Contains(stdout, "torn tail moved to") {
				t.Fatalf("iteration %d: repair: exit %d: %s%s", i, code, stdout, stderr)
			}
			if code, _, stderr := walkieCmd(t, "", "verify", file); code != 0 {
				t.Fatalf("iteration %d: verify after repair: %s", i, stderr)
			}
			post("after repair")
		default:
			t.Fatalf("iteration %d: after a kill the record neither verifies nor reports a torn tail: %v", i, err)
		}
	}
	post("at the end")
	if code, _, stderr := walkieCmd(t, "", "verify", file); code != 0 {
		t.Fatalf("final verify: %s", stderr)
	}
	t.Logf("%d kills: %d cut the write short (torn, repaired), %d after a whole entry, %d before any byte", iterations, torn, whole, none)
	if torn == 0 && !testing.Short() {
		t.Log("no kill landed inside a write this run; TestTornPrefixes in walkie/ covers every cut point")
	}
}
