package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// shAgent is an agent command that appends a proper turn with the shell,
// then runs extra (more shell).
func shAgent(extra string) string {
	return `[sh, -c, 'printf "\n## Turn %s · %s\nA turn.\n" "$1" "$2" >> "$3"; ` + extra + `', sh, "{turn}", "{agent}", "{file}"]`
}

// testDebate makes a debate between participants and a config whose
// agents run the given commands (YAML flow sequences), with fast timings.
// A participant without a command in agents has no agent: a person.
func testDebate(t *testing.T, maxRounds int, agents map[string]string, participants ...string) (string, *config.Config) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "t.walkie.md")
	// A participant without a command here is a person.
	var people []string
	for _, p := range participants {
		if _, ok := agents[p]; !ok && !config.IsPreset(p) {
			people = append(people, p)
		}
	}
	if err := walkie.Init(file, walkie.InitOptions{Participants: participants, People: people, MaxRounds: maxRounds,
		Briefing: []byte("Decide the thing.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	var y strings.Builder
	y.WriteString("defaults:\n  home: inherit\n  grace: 100ms\n  kill_grace: 500ms\n  timeout: 20s\n  retries: 1\nagents:\n")
	for _, p := range participants {
		if cmd, ok := agents[p]; ok {
			fmt.Fprintf(&y, "  %s:\n    command: %s\n", p, cmd)
		}
	}
	cfg, err := config.Parse(filepath.Join(dir, "walkie.yaml"), []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	return file, cfg
}

func stateDir(t *testing.T, file string) string {
	t.Helper()
	m, err := walkie.ReadMeta(file)
	if err != nil {
		t.Fatal(err)
	}
	return walkie.StateDir(file, m.ID)
}

func loadState(t *testing.T, file string) *walkie.State {
	t.Helper()
	st, err := walkie.LoadState(stateDir(t, file))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func turnLog(t *testing.T, file string) []TurnRecord {
	t.Helper()
	recs, err := ReadTurnLog(stateDir(t, file))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
