package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests here run walkie in a real terminal, tmux's, and read the
// screen a person would see (capture-pane): the live line, the reviewers'
// lines side by side, walkie follow in a second window. tmux comes from
// Debian (scripts/install-tools.sh, run by make test); without it they
// skip, and fail when CI is set.

// screen is a tmux server of the test's own, on a private socket.
type screen struct {
	t    *testing.T
	tmux string
	sock string
	dir  string
	env  []string
}

func newScreen(t *testing.T, dir string, env []string) *screen {
	t.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed: scripts/install-tools.sh installs it (make test runs it)")
		}
		t.Skip("tmux is not installed (apt-get install tmux, or scripts/install-tools.sh)")
	}
	s := &screen{t: t, tmux: path, sock: filepath.Join(t.TempDir(), "tmux.sock"), dir: dir, env: env}
	// Every tmux command runs with the test's environment: a new pane
	// takes it from the client that asks for it.
	s.run("-f", "/dev/null", "new-session", "-d", "-s", "w", "-n", "main", "-x", "100", "-y", "50", "-c", dir, "/bin/sh")
	t.Cleanup(func() {
		kill := exec.Command(path, "-S", s.sock, "kill-server")
		kill.Env = env
		_ = kill.Run()
	})
	s.run("set-option", "-g", "history-limit", "5000")
	return s
}

func (s *screen) run(args ...string) string {
	s.t.Helper()
	cmd := exec.Command(s.tmux, append([]string{"-S", s.sock}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// window opens another window running a shell in the test's directory.
func (s *screen) window(name string) {
	s.run("new-window", "-d", "-n", name, "-c", s.dir, "/bin/sh")
}

// typeLine types a command line into a window and presses Enter.
func (s *screen) typeLine(window, line string) {
	s.run("send-keys", "-t", "w:"+window, "-l", line)
	s.run("send-keys", "-t", "w:"+window, "Enter")
}

// capture is what the window shows now; with escapes, its colours as SGR
// sequences.
func (s *screen) capture(window string, escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", "w:" + window}
	if escapes {
		args = append(args, "-e")
	}
	return s.run(args...)
}

// waitFor polls the window until ok holds for what it shows, for at most
// a minute, and returns that screen.
func (s *screen) waitFor(window, what string, ok func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		text := s.capture(window, false)
		if ok(text) {
			return text
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not seen within a minute; the window shows:\n%s", what, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *screen) waitText(window, text string) string {
	s.t.Helper()
	return s.waitFor(window, strconv.Quote(text), func(screen string) bool { return strings.Contains(screen, text) })
}

// tmuxDebate makes a directory with walkie.yaml and files, and the
// environment its panes run in.
func tmuxDebate(t *testing.T, files map[string]string, extraEnv ...string) (string, []string) {
	t.Helper()
	bins := testBins(t)
	dir := t.TempDir()
	for name, text := range files {
		writeFile(t, filepath.Join(dir, name), text)
	}
	env := append([]string{"PATH=" + bins + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"TMPDIR=" + os.TempDir(), "LANG=C.UTF-8", "TERM=xterm-256color", "EDITOR="}, extraEnv...)
	return dir, env
}

func writeFile(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// twoFakes configures ann and bob; each holds its turn open, after its
// output, until the test releases it (gate), so what the screen shows
// while a session runs never races the agent's clock.
func twoFakes(dir string) string {
	return `defaults: {timeout: 1m, stall: 50s, grace: 300ms}
agents:
  ann: {command: [fakeagent, --file, "{file}", --agent, "{agent}", --sign, --chatter, "3", --shell, ` + gate(dir, "ann") + `], usage: none}
  bob: {command: [fakeagent, --file, "{file}", --agent, "{agent}", --sign, --shell, ` + gate(dir, "bob") + `], usage: none}
`
}

// gate is a YAML-quoted shell line that waits for the file go-NAME in dir;
// release creates it.
func gate(dir, name string) string {
	return strconv.Quote("while [ ! -e " + filepath.Join(dir, "go-"+name) + " ]; do sleep 0.05; done")
}

func release(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "go-"+name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

const tmuxBriefing = "## Question\nCursor or offset pagination?\n"

var liveLineRe = regexp.MustCompile(`(?m)^▶ turn 1 · ann \(round 1, attempt 1\) [0-9]+s  ✓ step 3: read .*$`)

// On a terminal, walkie auto keeps one live line for the running turn,
// redrawn in place with its clock and the agent's latest output, within
// the terminal's width; each attempt leaves a line when it is recorded;
// the end shows the agreement. Colour unless NO_COLOR says otherwise.
func TestTmuxLiveLine(t *testing.T) {
	for _, noColor := range []bool{false, true} {
		t.Run(map[bool]string{false: "colour", true: "NO_COLOR"}[noColor], func(t *testing.T) {
			var extra []string
			if noColor {
				extra = append(extra, "NO_COLOR=1")
			}
			dir, env := tmuxDebate(t, map[string]string{"brief.md": tmuxBriefing}, extra...)
			writeFile(t, filepath.Join(dir, "walkie.yaml"), twoFakes(dir))
			release(t, dir, "bob")
			s := newScreen(t, dir, env)
			s.typeLine("main", "walkie init d.walkie.md --agents ann,bob --briefing brief.md && walkie brief approve d.walkie.md --yes >/dev/null && clear && walkie auto d.walkie.md; echo EXIT=$?")

			live := s.waitFor("main", "ann's live line with its output", liveLineRe.MatchString)
			line := liveLineRe.FindString(live)
			if w := len([]rune(line)); w > 99 {
				t.Errorf("the live line is %d columns on a 100-column terminal: %q", w, line)
			}
			if strings.Count(live, "▶") != 1 {
				t.Errorf("more than one live line for one running turn:\n%s", live)
			}
			// The clock moves in the same line: a later screen shows a
			// later time, and still one line.
			later := s.waitFor("main", "the clock moving", func(screen string) bool {
				m := regexp.MustCompile(`▶ turn 1 · ann \(round 1, attempt 1\) ([0-9]+)s`).FindStringSubmatch(screen)
				return m != nil && m[1] != regexp.MustCompile(`\) ([0-9]+)s`).FindStringSubmatch(line)[1]
			})
			if strings.Count(later, "▶") != 1 {
				t.Errorf("the redraw left a line behind:\n%s", later)
			}
			release(t, dir, "ann")

			end := s.waitText("main", "EXIT=0")
			for _, want := range []string{"✓ turn 1 · ann accepted in ", "✓ turn 2 · bob accepted in ", "debate converged",
				"d.walkie.md: converged after 2 turns in 1 round", "Agreed, signed off by ann and bob:", "record: " + filepath.Join(dir, "d.walkie.md")} {
				if !strings.Contains(end, want) {
					t.Errorf("the end lacks %q:\n%s", want, end)
				}
			}
			if strings.Contains(end, "▶") || strings.Contains(end, `"level"`) {
				t.Errorf("a live line or a log line is left on the screen:\n%s", end)
			}
			coloured := strings.Contains(s.capture("main", true), "\x1b[")
			if coloured == noColor {
				t.Errorf("NO_COLOR=%v, yet colour on the screen is %v:\n%q", noColor, coloured, s.capture("main", true))
			}
		})
	}
}

const reviewTable = `---
walkie: 1
id: rt
mode: roundtable
implementer: ada
reviewers: [brook, cy]
grader: "true"
workspace: work
max_rounds: 2
---
# Briefing
Write work/calc.
`

// In a round table the reviewers run side by side: a live line each, at
// once, and each leaves its own line when recorded.
func TestTmuxParallelReviewers(t *testing.T) {
	dir, env := tmuxDebate(t, map[string]string{
		"walkie.yaml": `defaults: {timeout: 1m, stall: 30s, grace: 300ms}
agents:
  ada: {command: [fakeagent, --file, "{file}", --agent, "{agent}", --shell, "echo v1 > work/calc"], usage: none}
  brook: {command: [fakeagent, --file, "{file}", --agent, "{agent}", --behavior, verdict, --verdict, '{"verdict": "approve"}', --chatter, "2", --shell, GATE-brook], usage: none}
  cy: {command: [fakeagent, --file, "{file}", --agent, "{agent}", --behavior, verdict, --verdict, '{"verdict": "approve"}', --shell, GATE-cy], usage: none}
`,
		"rt.walkie.md": reviewTable, "work/.keep": "",
	})
	// The reviewers hold their sessions until both lines have been seen.
	cfg := filepath.Join(dir, "walkie.yaml")
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, strings.NewReplacer("GATE-brook", gate(dir, "brook"), "GATE-cy", gate(dir, "cy")).Replace(string(text)))
	s := newScreen(t, dir, env)
	s.typeLine("main", "clear; walkie auto rt.walkie.md --approve; echo EXIT=$?")
	both := s.waitFor("main", "two reviewer lines at once", func(screen string) bool {
		return regexp.MustCompile(`(?m)^▶ turn \d+ · brook \(round 1, attempt 1\) \d+s`).MatchString(screen) &&
			regexp.MustCompile(`(?m)^▶ turn \d+ · cy \(round 1, attempt 1\) \d+s`).MatchString(screen)
	})
	if n := strings.Count(both, "▶"); n != 2 {
		t.Errorf("%d live lines while two reviewers run:\n%s", n, both)
	}
	release(t, dir, "brook")
	release(t, dir, "cy")
	end := s.waitText("main", "EXIT=0")
	for _, want := range []string{"· brook accepted in", "· cy accepted in", "rt.walkie.md: converged"} {
		if !strings.Contains(end, want) {
			t.Errorf("the end lacks %q:\n%s", want, end)
		}
	}
	if strings.Contains(end, "▶") {
		t.Errorf("live lines are left:\n%s", end)
	}
}

// walkie follow in one window shows a debate that walkie auto runs in
// another: it waits for the first turn, shows the running session with
// the agent's output, each entry rendered as it lands, and the end.
func TestTmuxFollow(t *testing.T) {
	// Each session stays open until follow's screen has shown it: through
	// two processes and the live view's half-second writes, a loaded
	// machine can take seconds.
	dir, env := tmuxDebate(t, map[string]string{"brief.md": tmuxBriefing})
	writeFile(t, filepath.Join(dir, "walkie.yaml"), twoFakes(dir))
	s := newScreen(t, dir, env)
	s.typeLine("main", "walkie init d.walkie.md --agents ann,bob --briefing brief.md && walkie brief approve d.walkie.md --yes >/dev/null && clear && walkie follow d.walkie.md; echo EXIT=$?")
	s.waitText("main", "… waiting for turn 1 · ann")
	s.waitText("main", "Cursor or offset pagination?") // the briefing, rendered

	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(filepath.Join(dir, "auto.out"))
			turns, _ := os.ReadFile(filepath.Join(dir, ".walkie", "d", "log.jsonl"))
			t.Logf("auto.out:\n%s\nlog.jsonl:\n%s", out, turns)
		}
	})
	s.window("run")
	s.typeLine("run", "walkie auto d.walkie.md > auto.out 2>&1; echo EXIT=$?")
	running := s.waitFor("main", "ann's session, followed", liveLineRe.MatchString)
	if strings.Contains(running, "waiting for turn") {
		t.Errorf("still waiting while ann runs:\n%s", running)
	}
	release(t, dir, "ann")
	s.waitFor("main", "turn 1, rendered as it lands", regexp.MustCompile(`(?m)^── Turn 1 · ann · round 1 · .* · signed off ─+$`).MatchString)
	s.waitFor("main", "bob's session", regexp.MustCompile(`(?m)^▶ turn 2 · bob \(round 1, attempt 1\) \d+s`).MatchString)
	release(t, dir, "bob")
	end := s.waitText("main", "EXIT=0")
	for _, want := range []string{"── Turn 2 · bob · round 1", "d.walkie.md: converged after 2 turns in 1 round", "Agreed, signed off by ann and bob:"} {
		if !strings.Contains(end, want) {
			t.Errorf("follow's end lacks %q:\n%s", want, end)
		}
	}
	if strings.Contains(end, "<!-- walkie") || strings.Contains(end, "▶") {
		t.Errorf("markers or live lines left in follow's window:\n%s", end)
	}
	s.waitText("run", "EXIT=0")
	if _, err := os.Stat(filepath.Join(dir, ".walkie", "d", "activity.json")); !os.IsNotExist(err) {
		t.Errorf("auto left its activity.json behind (%v)", err)
	}
}
