//go:build !temporal

package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// The two builds and the hand-off between them (handoff.go), black box:
// both binaries are built into one directory, as make install leaves
// them. This file runs in the default build's tests only: it builds both
// itself.

// buildPair builds the default walkie and walkie-temporal into dir.
func buildPair(t *testing.T, dir string) (walkie, temporal string) {
	t.Helper()
	walkie, temporal = filepath.Join(dir, "walkie"), filepath.Join(dir, temporalProgram)
	for _, args := range [][]string{{"build", "-o", walkie, "."}, {"build", "-tags", "temporal", "-o", temporal, "."}} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return walkie, temporal
}

// runBin runs a built walkie in dir with env added to a PATH that holds
// no walkie-temporal; it returns the exit code and stderr.
func runBin(t *testing.T, dir string, env []string, bin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(goBinary(t)))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", bin, err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func goBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort is a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

const workerConfig = "agents:\n  alice:\n    command: [sh, -c, 'true']\n"

func TestHandOff(t *testing.T) {
	if testing.Short() {
		t.Skip("builds walkie twice")
	}
	bins := t.TempDir()
	walkie, temporal := buildPair(t, bins)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "walkie.yaml"), []byte(workerConfig), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("worker runs in walkie-temporal", func(t *testing.T) {
		addr := closedPort(t)
		code, stderr := runBin(t, work, nil, walkie, "worker", "--agents", "alice", "--config", "walkie.yaml", "--temporal", addr)
		// Only the engine dials: this message is controller/temporal's.
		if code != exitError || !strings.Contains(stderr, "connect to Temporal at "+addr) {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("serve --engine temporal runs in walkie-temporal", func(t *testing.T) {
		code, stderr := runBin(t, work, nil, walkie, "serve", "--engine", "temporal", "--listen", "", "--queue", "=q")
		if code != exitBadInput || !strings.Contains(stderr, "write AGENT=QUEUE") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("same process", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("reads /proc")
		}
		// A port that takes the connection and never answers holds the
		// engine in its dial while the test looks at the process.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
		cmd := exec.Command(walkie, "worker", "--agents", "alice", "--config", "walkie.yaml", "--temporal", l.Addr().String())
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "PATH=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exe := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"
		sessiontest.WaitFor(t, 10*time.Second, "walkie's pid to dial Temporal", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(conns) > 0
		})
		got, err := os.Readlink(exe)
		if err != nil || got != temporal {
			t.Errorf("pid %d runs %q (%v), want %s", cmd.Process.Pid, got, err, temporal)
		}
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		if err := cmd.Wait(); cmd.ProcessState.ExitCode() != exitError {
			t.Errorf("exit %v, want %d", err, exitError)
		}
	})

	t.Run("walkie-temporal missing", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "walkie")
		if err := os.Link(walkie, alone); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"worker", "--agents", "alice"}, {"serve", "--engine", "temporal", "--listen", ""}} {
			code, stderr := runBin(t, work, nil, alone, args...)
			for _, want := range []string{"walkie " + args[0] + " needs the Temporal engine", temporalProgram + " is neither beside it (" + filepath.Join(filepath.Dir(alone), temporalProgram) + ") nor on PATH",
				"`make install`", "`go install -tags temporal github.com/walkie-sh/walkie/cmd/walkie@"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("walkie %s: stderr lacks %q:\n%s", args[0], want, stderr)
				}
			}
			if code != exitBadInput {
				t.Errorf("walkie %s: exit %d, want %d", args[0], code, exitBadInput)
			}
		}
	})

	t.Run("found on PATH", func(t *testing.T) {
		alone := filepath.Join(t.TempDir(), "walkie")
		if err := os.Link(walkie, alone); err != nil {
			t.Fatal(err)
		}
		code, stderr := runBin(t, work, []string{"PATH=" + bins}, alone, "serve", "--engine", "temporal", "--listen", "", "--queue", "=q")
		if code != exitBadInput || !strings.Contains(stderr, "write AGENT=QUEUE") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("found beside a symlink's target", func(t *testing.T) {
		// walkie linked into another directory still finds the
		// walkie-temporal installed beside the file it links to.
		linked := filepath.Join(t.TempDir(), "walkie")
		if err := os.Symlink(walkie, linked); err != nil {
			t.Fatal(err)
		}
		code, stderr := runBin(t, work, nil, linked, "serve", "--engine", "temporal", "--listen", "", "--queue", "=q")
		if code != exitBadInput || !strings.Contains(stderr, "write AGENT=QUEUE") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("another version refuses", func(t *testing.T) {
		code, stderr := runBin(t, work, []string{handoffEnv + "=v0.0.1-other"}, temporal, "worker", "--agents", "alice", "--config", "walkie.yaml", "--temporal", closedPort(t))
		if code != exitBadInput || !strings.Contains(stderr, "walkie v0.0.1-other handed a Temporal command to "+temporal+", which is walkie ") ||
			strings.Contains(stderr, "connect to Temporal") || !strings.Contains(stderr, "`make install`") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("its own version runs", func(t *testing.T) {
		out, err := exec.Command(walkie, "version").Output()
		if err != nil {
			t.Fatal(err)
		}
		own := strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "walkie ")
		cmd := exec.Command(temporal, "version")
		cmd.Env = append(os.Environ(), handoffEnv+"="+own)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("walkie-temporal refused its own version %q: %v\n%s", own, err, b)
		}
	})

	t.Run("a default build handed a command refuses", func(t *testing.T) {
		code, stderr := runBin(t, work, []string{handoffEnv + "=v1"}, walkie, "worker", "--agents", "alice")
		if code != exitBadInput || !strings.Contains(stderr, "built without the Temporal engine") {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("bad engine refused without a hand-off", func(t *testing.T) {
		// No walkie-temporal anywhere: the refusal is the default build's.
		alone := filepath.Join(t.TempDir(), "walkie")
		if err := os.Link(walkie, alone); err != nil {
			t.Fatal(err)
		}
		code, stderr := runBin(t, work, nil, alone, "serve", "--engine", "bogus", "--listen", "")
		if code != exitBadInput || !strings.Contains(stderr, `--engine "bogus": write local or temporal`) {
			t.Fatalf("exit %d, stderr:\n%s", code, stderr)
		}
	})

	t.Run("help is the same in both builds", func(t *testing.T) {
		for _, cmd := range []string{"worker", "serve"} {
			a, err := exec.Command(walkie, cmd, "--help").Output()
			if err != nil {
				t.Fatal(err)
			}
			b, err := exec.Command(temporal, cmd, "--help").Output()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a, b) {
				t.Errorf("walkie %s --help differs between the builds:\n%s\n---\n%s", cmd, a, b)
			}
		}
	})
}

// The hand-off's variable leaves the environment before anything runs,
// so no agent or later hand-off inherits it, even when it is refused.
func TestTakeHandoffUnsetsItsVariable(t *testing.T) {
	t.Setenv(handoffEnv, "v1")
	if err := takeHandoff(); exitCode(err) != exitBadInput {
		t.Errorf("a default build handed a command: %v, want exit %d", err, exitBadInput)
	}
	if v, ok := os.LookupEnv(handoffEnv); ok {
		t.Errorf("%s is still set (%q)", handoffEnv, v)
	}
	if err := takeHandoff(); err != nil {
		t.Errorf("no hand-off: %v", err)
	}
}

// The default build must not link the Temporal engine (its packages'
// initialisation is most of a `walkie post`): importing controller/temporal
// from untagged code fails here.
func TestDefaultBuildLinksNoTemporal(t *testing.T) {
	deps := func(tags string) []string {
		out, err := exec.Command("go", "list", "-tags="+tags, "-deps", ".").Output()
		if err != nil {
			t.Fatalf("go list -tags=%q -deps: %v", tags, err)
		}
		return strings.Fields(string(out))
	}
	for _, p := range deps("") {
		if strings.HasPrefix(p, "go.temporal.io/") || strings.HasPrefix(p, "google.golang.org/grpc") || p == "github.com/walkie-sh/walkie/controller/temporal" {
			t.Errorf("the default build links %s", p)
		}
	}
	// And the tag does link it, so the check above checks something.
	if !strings.Contains(strings.Join(deps("temporal"), "\n"), "go.temporal.io/sdk/client") {
		t.Error("-tags temporal does not link go.temporal.io/sdk/client")
	}
}

// make test runs vet and the tests a second time with -tags temporal over
// TEMPORAL_PKGS only (the whole tree twice would double CI): that list
// must name every package whose files the tag changes.
func TestTemporalPackagesListed(t *testing.T) {
	files := func(tags string) map[string]string {
		cmd := exec.Command("go", "list", "-tags="+tags, "-f", "{{.ImportPath}} {{.GoFiles}}{{.TestGoFiles}}{{.XTestGoFiles}}", "./...")
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags=%q: %v", tags, err)
		}
		m := map[string]string{}
		for line := range strings.Lines(string(out)) {
			pkg, fs, _ := strings.Cut(strings.TrimSpace(line), " ")
			m[pkg] = fs
		}
		return m
	}
	plain, tagged := files(""), files("temporal")
	var differ []string
	for pkg, fs := range tagged {
		if plain[pkg] != fs {
			differ = append(differ, "./"+strings.TrimPrefix(pkg, "github.com/walkie-sh/walkie/"))
		}
	}
	slices.Sort(differ)
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for line := range strings.Lines(string(makefile)) {
		if v, ok := strings.CutPrefix(line, "TEMPORAL_PKGS := "); ok {
			listed = strings.Fields(v)
		}
	}
	slices.Sort(listed)
	if !slices.Equal(differ, listed) {
		t.Errorf("the packages -tags temporal changes are %v; the Makefile's TEMPORAL_PKGS lists %v", differ, listed)
	}
}
