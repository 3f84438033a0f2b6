//go:build linux

package realcli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// walkie doctor with the real binaries: each found on PATH, its version
// as the CLI prints it, and the login judged from the agent's settings
// (codex's from its model provider's key), with no model call; without
// the keys, a problem per agent in use and exit 1.
func TestDoctor(t *testing.T) {
	t.Parallel()
	all := []string{"claude", "codex", "gemini"}
	versions := map[string]string{"claude": "2.1.197", "codex": "0.171.0", "gemini": "0.61.0"}
	for _, keys := range []bool{true, false} {
		f := newFixture(t, fixed(modelserver.Script{}), setup{participants: all, agents: func(url string) map[string]string {
			m := map[string]string{}
			for _, cli := range all {
				m[cli] = agentFor(cli, url, keys)
			}
			return m
		}})
		code := 0
		if !keys {
			code = 1
		}
		r := f.MustRun(code, "doctor", "d.walkie.md", "--config", "walkie.yaml", "--json")
		var checks []struct {
			Name     string   `json:"name"`
			InUse    bool     `json:"in_use"`
			Binary   string   `json:"binary"`
			Version  string   `json:"version"`
			LoggedIn string   `json:"logged_in"`
			Problems []string `json:"problems"`
			Notes    []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &checks); err != nil {
			t.Fatalf("%v\n%s", err, r.Stdout)
		}
		if len(checks) != 3 {
			t.Fatalf("checks %+v", checks)
		}
		for _, ck := range checks {
			if !ck.InUse || ck.Binary != filepath.Join(clis, ck.Name) || ck.Version != versions[ck.Name] {
				t.Errorf("%s: in use %v, binary %q, version %q (want %s)", ck.Name, ck.InUse, ck.Binary, ck.Version, versions[ck.Name])
			}
			switch {
			case keys && (ck.LoggedIn != "yes" || len(ck.Problems) > 0):
				t.Errorf("%s with its key: logged in %q, problems %q, notes %q", ck.Name, ck.LoggedIn, ck.Problems, ck.Notes)
			case !keys && (ck.LoggedIn != "no" || len(ck.Problems) == 0 || !strings.Contains(ck.Problems[0], "_KEY")):
				t.Errorf("%s without its key: logged in %q, problems %q: want one naming the variable", ck.Name, ck.LoggedIn, ck.Problems)
			}
			t.Logf("keys %v: %s %s %s logged in %s %q %q", keys, ck.Name, ck.Binary, ck.Version, ck.LoggedIn, ck.Problems, ck.Notes)
		}
		// No model call, so no token spent (claude auth status may HEAD
		// the API's root).
		for _, r := range f.srv.Requests() {
			if r.Vendor != "" {
				t.Errorf("doctor called the model: %s %s", r.Method, r.Path)
			}
		}
		f.noneLeft()
	}
}

// With home: inherit, doctor asks claude itself (claude auth status): a
// ~/.claude.json, which any run of claude leaves, is not a login.
func TestDoctorClaudeOwnHome(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixed(modelserver.Script{}), setup{participants: []string{"claude", "codex"}, agents: func(url string) map[string]string {
		return map[string]string{"claude": claudeAgent(url, false) + "    home: inherit\n"}
	}})
	if err := os.WriteFile(filepath.Join(f.home, ".claude.json"), []byte(`{"numStartups":3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := f.MustRun(1, "doctor", "d.walkie.md", "--config", "walkie.yaml", "--agents", "claude,codex")
	if !regexp.MustCompile(`(?m)^claude .* no +not logged in: .*log in with ` + "`claude`" + `, then /login$`).MatchString(r.Stdout) {
		t.Errorf("doctor's table:\n%s", r.Stdout)
	}
	// The answer is claude's own, asked with its auth status.
	r = f.MustRun(1, "doctor", "d.walkie.md", "--config", "walkie.yaml", "--agents", "claude,codex", "--json")
	if !strings.Contains(r.Stdout, "claude auth status: not logged in") {
		t.Errorf("doctor --json:\n%s", r.Stdout)
	}
	f.noneLeft()
}
