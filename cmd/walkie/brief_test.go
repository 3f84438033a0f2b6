package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/walkie-sh/walkie/walkie"
)

// testBins builds walkie and the fake agent into a directory the test
// removes when it ends. The scripts run the real programs, as a user's
// shell would (the record scripts in main_test.go run the test binary
// instead); the build cache keeps a rebuild to a link.
func testBins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, pkg := range map[string]string{"walkie": ".", "fakeagent": "../fakeagent"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	return dir
}

// TestBriefScripts runs testdata/script/brief_*.txtar: one scenario of
// the brief commands and the briefing rules per file.
func TestBriefScripts(t *testing.T) {
	bins := testBins(t)
	testscript.Run(t, testscript.Params{
		Files: globScripts(t, "testdata/script/brief_*.txtar"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bins+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("EDITOR", "")
			// testscript's HOME is /no-home: the distillation keeps its
			// private folder in the user's cache.
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, "cache"))
			return nil
		},
	})
}

func globScripts(t *testing.T, pattern string) []string {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts match %s (%v)", pattern, err)
	}
	return files
}

// On a terminal, walkie brief approve asks; only "y" or "yes" approves.
func TestBriefApproveAsksOnATerminal(t *testing.T) {
	bins := testBins(t)
	for answer, approved := range map[string]bool{"y": true, "yes": true, "n": false, "": false} {
		dir := t.TempDir()
		file := filepath.Join(dir, "d.walkie.md")
		if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ann", "bob"}, Briefing: []byte("## Question\nCursor or offset?\n")}); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(bins, "walkie"), "brief", "approve", file)
		tty, err := pty.Start(cmd)
		if err != nil {
			t.Fatal(err)
		}
		// One reader for the whole session: the pty's reads block, so the
		// test waits on the channel, with a deadline, instead.
		chunks := make(chan string, 64)
		go func() {
			defer close(chunks)
			buf := make([]byte, 4096)
			for {
				n, err := tty.Read(buf)
				if n > 0 {
					chunks <- string(buf[:n])
				}
				if err != nil { // EIO once walkie has exited
					return
				}
			}
		}()
		seen := ""
		timeout := time.After(20 * time.Second)
		for !strings.Contains(seen, "[y/N]") {
			select {
			case c, ok := <-chunks:
				if !ok {
					t.Fatalf("walkie ended before asking:\n%s", seen)
				}
				seen += c
			case <-timeout:
				cmd.Process.Kill()
				t.Fatalf("no question within 20s:\n%s", seen)
			}
		}
		if !strings.Contains(seen, "Cursor or offset?") {
			t.Fatalf("the briefing was not shown before the question:\n%s", seen)
		}
		if _, err := tty.Write([]byte(answer + "\r")); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		for c := range chunks {
			seen += c
		}
		tty.Close()
		m, _ := walkie.ReadMeta(file)
		if (m.BriefingSHA256 != "") != approved || (err == nil) != approved {
			t.Errorf("answer %q: pinned=%q exit=%v\n%s", answer, m.BriefingSHA256, err, seen)
		}
	}
}
