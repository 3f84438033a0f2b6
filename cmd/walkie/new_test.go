package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/walkie-sh/walkie/walkie"
)

// TestNewScripts runs testdata/script/new*.txtar, follow*.txtar and
// byhand*.txtar: walkie new from a question to a converged debate, walkie
// follow beside walkie auto, and a person's turn beside an agent's, with
// the real walkie and fake agent.
func TestNewScripts(t *testing.T) {
	bins := testBins(t)
	testscript.Run(t, testscript.Params{
		Files: slices.Concat(globScripts(t, "testdata/script/new*.txtar"), globScripts(t, "testdata/script/follow*.txtar"), globScripts(t, "testdata/script/byhand*.txtar")),
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bins+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("EDITOR", "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": cmdExits},
	})
}

// ptySession is a command on a terminal of its own, read by one goroutine.
type ptySession struct {
	t      *testing.T
	cmd    *exec.Cmd
	tty    *os.File
	chunks chan string
	seen   string
}

func startOnPty(t *testing.T, dir string, env []string, name string, args ...string) *ptySession {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	p := &ptySession{t: t, cmd: cmd, tty: tty, chunks: make(chan string, 256)}
	go func() {
		defer close(p.chunks)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			if n > 0 {
				p.chunks <- string(buf[:n])
			}
			if err != nil { // EIO once the command has exited
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tty.Close()
	})
	return p
}

// expect waits, up to 30 seconds, until the output so far holds s.
func (p *ptySession) expect(s string) {
	p.t.Helper()
	timeout := time.After(30 * time.Second)
	for !strings.Contains(p.seen, s) {
		select {
		case c, ok := <-p.chunks:
			if !ok {
				p.t.Fatalf("ended before %q:\n%s", s, p.seen)
			}
			p.seen += c
		case <-timeout:
			p.t.Fatalf("no %q within 30s:\n%s", s, p.seen)
		}
	}
}

func (p *ptySession) send(s string) {
	if _, err := p.tty.Write([]byte(s)); err != nil {
		p.t.Fatal(err)
	}
}

// wait reads to the end and returns the exit code.
func (p *ptySession) wait() int {
	for c := range p.chunks {
		p.seen += c
	}
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		p.t.Fatal(err)
	}
	return 0
}

// On a terminal, walkie new shows the draft and asks: edit opens $EDITOR
// and shows the result again; approve pins what was shown last and runs
// the debate; quit leaves the file unapproved.
func TestNewAsksOnATerminal(t *testing.T) {
	bins := testBins(t)
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("walkie.yaml", "agents:\n  ann: {command: [fakeagent, --file, \"{file}\", --agent, \"{agent}\", --sign], usage: none, grace: 300ms}\n"+
		"  bob: {command: [fakeagent, --file, \"{file}\", --agent, \"{agent}\", --sign], usage: none, grace: 300ms}\n")
	write("brief.md", "## Question\nCursor or offset?\n")
	write("editor.sh", "#!/bin/sh\nprintf '\\n## Constraints\\nOrders arrive during checkout.\\n' >> \"$1\"\n")
	env := []string{"PATH=" + bins + string(os.PathListSeparator) + os.Getenv("PATH"), "EDITOR=" + filepath.Join(dir, "editor.sh"), "NO_COLOR=1"}

	p := startOnPty(t, dir, env, filepath.Join(bins, "walkie"), "new", "Cursor or offset?", "--agents", "ann,bob", "--briefing", "brief.md", "--file", "d.walkie.md")
	p.expect("[a]pprove and run the debate, [e]dit in $EDITOR, [q]uit? ")
	p.send("e\r")
	p.expect("Orders arrive during checkout.")
	p.expect("[q]uit? ")
	p.send("a\r")
	p.expect("converged after 2 turns")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.seen)
	}
	d, err := walkie.Load(filepath.Join(dir, "d.walkie.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(d.Briefing), "Orders arrive during checkout.") || d.Meta.BriefingSHA256 != walkie.BriefingHash(d.Briefing) {
		t.Errorf("the edited briefing is not the one approved:\n%s", d.Briefing)
	}

	p = startOnPty(t, dir, env, filepath.Join(bins, "walkie"), "new", "Cursor or offset?", "--agents", "ann,bob", "--briefing", "brief.md", "--file", "q.walkie.md")
	p.expect("[q]uit? ")
	p.send("q\r")
	if code := p.wait(); code != 1 || !strings.Contains(p.seen, "not approved; q.walkie.md stays: walkie brief edit q.walkie.md") {
		t.Errorf("quit: exit %d:\n%s", code, p.seen)
	}
	if m, err := walkie.ReadMeta(filepath.Join(dir, "q.walkie.md")); err != nil || m.BriefingSHA256 != "" {
		t.Errorf("quit left %+v, %v", m, err)
	}
}
