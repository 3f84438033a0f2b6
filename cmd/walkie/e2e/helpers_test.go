package e2e

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/cmd/walkie/internal/blackbox"
	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// debate is one test's debate: a directory (the runner's) holding the
// walkie file, the config and the fake agents' scripts.
type debate struct {
	blackbox.Runner        // walkie in the debate's directory
	name            string // the walkie file, relative to the directory
	id              string
	marker          blackbox.Marker
}

// setup describes a debate. Defaults and agent settings are YAML values
// keyed by config key; they are laid over fast defaults suited to tests.
type setup struct {
	participants []string
	maxRounds    int
	defaults     map[string]string
	agents       map[string]map[string]string // per participant, agent keys (command replaces the fake agent)
	scripts      map[string]string            // per participant, the fake agent's script
	top          string                       // more top-level YAML
	people       []string                     // participants with no agent: persons who post
}

// newDebate writes the config and scripts and runs `walkie init`.
func newDebate(t *testing.T, s setup) *debate {
	t.Helper()
	blackbox.ReadSources(t)
	if s.maxRounds == 0 {
		s.maxRounds = 3
	}
	d := &debate{name: "d.walkie.md", id: "d", marker: blackbox.NewMarker(t)}
	d.Runner = walkieIn(t, t.TempDir(), d.marker)
	d.configure(s)
	d.write("briefing.md", "Should the test pass? Argue it out, one turn each.\n\n## What a sign-off means\nYou agree it passes.\n")
	args := []string{"init", d.name, "--agents", strings.Join(s.participants, ","), "--max-rounds", strconv.Itoa(s.maxRounds), "--briefing", "briefing.md"}
	if len(s.people) > 0 {
		args = append(args, "--people", strings.Join(s.people, ","))
	}
	d.MustRun(0, args...)
	t.Cleanup(d.marker.Kill)
	return d
}

// configure writes walkie.yaml and the scripts for s.
func (d *debate) configure(s setup) {
	d.T.Helper()
	cfg := blackbox.Config{Top: s.top, Defaults: blackbox.FakeDefaults(d.Dir)}
	maps.Copy(cfg.Defaults, s.defaults)
	for _, p := range s.participants {
		if !slices.Contains(s.people, p) {
			cfg.Agents = append(cfg.Agents, blackbox.ScriptedAgent(d.T, d.Dir, p, s.scripts[p], s.agents[p]))
		}
	}
	cfg.Write(d.T, d.path("walkie.yaml"))
}

func (d *debate) path(name string) string { return filepath.Join(d.Dir, name) }

func (d *debate) stateDir() string {
	return filepath.Join(d.Dir, filepath.Dir(d.name), ".walkie", d.id)
}

func (d *debate) write(name, content string) {
	d.T.Helper()
	if err := os.WriteFile(d.path(name), []byte(content), 0o644); err != nil {
		d.T.Fatal(err)
	}
}

func (d *debate) read(name string) []byte {
	d.T.Helper()
	b, err := os.ReadFile(d.path(name))
	if err != nil {
		d.T.Fatal(err)
	}
	return b
}

// walkieIn runs walkie in dir with the test's environment as it is now,
// the built binaries first on PATH, and the test's marker.
func walkieIn(t testing.TB, dir string, m blackbox.Marker) blackbox.Runner {
	return blackbox.Runner{T: t, Bin: filepath.Join(bin, "walkie"), Dir: dir,
		Env: append(os.Environ(), blackbox.Env(bin, m)...), Limit: 60 * time.Second}
}

// auto runs `walkie auto` on the debate and checks its exit code.
func (d *debate) auto(code int, args ...string) blackbox.Result {
	d.T.Helper()
	return d.MustRun(code, append([]string{"auto", d.name, "--approve"}, args...)...)
}

// turns reads the attempts in the log; every line must be whole.
func (d *debate) turns() []blackbox.Turn {
	d.T.Helper()
	return blackbox.ReadTurns(d.T, d.stateDir())
}

// wantOutcomes fails the test unless the attempts' outcomes are want.
func (d *debate) wantOutcomes(recs []blackbox.Turn, want ...string) {
	d.T.Helper()
	blackbox.WantOutcomes(d.T, d.stateDir(), recs, want...)
}

// state reads the debate's control state.
func (d *debate) state() *walkie.State {
	d.T.Helper()
	return blackbox.State(d.T, d.stateDir())
}

// verify runs `walkie verify` and checks the record has turns turns.
func (d *debate) verify(turns int) {
	d.T.Helper()
	d.MustRun(0, "verify", d.name)
	blackbox.Holds(d.T, d.path(d.name), turns)
}

// status returns the debate's status as `walkie status --json` reports it.
func (d *debate) status() string {
	d.T.Helper()
	return blackbox.Status(d.T, d.MustRun(0, "status", d.name, "--json"))
}

// waitRunning waits until the controller p has started an agent's
// session for turn and recorded its pid (walkie.SessionNote), and returns
// the pid.
func (d *debate) waitRunning(p *blackbox.Proc, turn int) int {
	d.T.Helper()
	pid := 0
	sessiontest.WaitFor(d.T, 20*time.Second, fmt.Sprintf("running turn %d", turn), func() bool {
		if r, ok := p.Exited(); ok {
			d.T.Fatalf("walkie exited %d before turn %d ran:\n%s", r.Code, turn, r.Stderr)
		}
		st, err := walkie.LoadState(d.stateDir())
		if err != nil || st.Running == nil || st.Running.Turn != turn {
			return false
		}
		if n := walkie.LoadSessionNote(d.stateDir(), st.Running.Session); n != nil {
			pid = n.Pid
		}
		return pid > 0
	})
	return pid
}

// waitInvoked waits until agent has been started n times: the fake agent
// counts its invocations in AGENT.state as soon as it has read its script.
func (d *debate) waitInvoked(agent string, n int) {
	d.T.Helper()
	sessiontest.WaitFor(d.T, 20*time.Second, fmt.Sprintf("%s invoked %d times", agent, n), func() bool {
		return blackbox.Invocations(filepath.Join(blackbox.FakeDir(filepath.Join(d.Dir, filepath.Dir(agent))), filepath.Base(agent)+".state")) >= n
	})
}

// noProcessesLeft fails the test if any process of the run is alive.
func (d *debate) noProcessesLeft() {
	d.T.Helper()
	d.marker.NoneLeft(d.T, 2*time.Second)
}
