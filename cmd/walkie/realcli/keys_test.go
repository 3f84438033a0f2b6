//go:build linux

package realcli

import (
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// probe is what each CLI's shell runs first: everything it can learn of
// keys and tokens — its environment, /proc/self/environ, the CLIs' files
// in its HOME, and the environments of its ancestors up to walkie's.
const probe = `env | grep -E 'KEY|TOKEN'; tr '\0' '\n' < /proc/self/environ | grep -E 'KEY|TOKEN'; ` +
	`cat ~/.claude.json ~/.codex/config.toml ~/.gemini/settings.json 2>/dev/null; ` +
	`p=$$; while [ "$p" -gt 1 ]; do tr '\0' '\n' < /proc/$p/environ 2>&1 | grep -E 'KEY|TOKEN|denied'; p=$(cut -d' ' -f4 /proc/$p/stat); done; echo probed`

// prober is a model that has each session run probe, then append its
// turn (next, the debate's own script), then stop.
func prober(next func(*modelserver.Request) (modelserver.Reply, bool)) func(*modelserver.Request) (modelserver.Reply, bool) {
	return func(r *modelserver.Request) (modelserver.Reply, bool) {
		if isRouting(r) {
			return modelserver.Text(routing), true
		}
		switch toolResults(r) {
		case 0:
			return modelserver.Shell(probe), true
		case 1:
			raw := strings.ReplaceAll(string(r.Raw), `"tool_result"`, `"probe_result"`)
			raw = strings.ReplaceAll(raw, `"function_call_output"`, `"probe_output"`)
			raw = strings.ReplaceAll(raw, `"functionResponse"`, `"probeResponse"`)
			return next(r.WithRaw([]byte(raw)))
		}
		return modelserver.Text("Done."), true
	}
}

// keyOf is the key a model request carried, where its vendor takes it.
func keyOf(r *modelserver.Request) string {
	switch r.Vendor {
	case modelserver.Anthropic:
		return r.Header.Get("X-Api-Key")
	case modelserver.OpenAI:
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	return r.Query.Get("key")
}

// checkKeys: every model call reached the server with the real key; the
// probes ran, found stand-ins, and no request body (which carries what
// the shells printed) holds the key or any of secrets.
func checkKeys(t *testing.T, srv *modelserver.Server, vendors []modelserver.Vendor, secrets ...string) {
	t.Helper()
	for _, v := range vendors {
		reqs := srv.ModelRequests(v)
		if len(reqs) == 0 {
			t.Errorf("%s made no model call", v)
		}
		for _, r := range reqs {
			if k := keyOf(r); k != modelserver.FakeAPIKey {
				t.Errorf("%s %s reached the model with key %q, want the real one", v, r.Path, k)
			}
		}
	}
	var probed, standin bool
	for _, r := range srv.Requests() {
		probed = probed || r.HasText("probed")
		standin = standin || r.HasText("walkie-standin-")
		for _, s := range append([]string{modelserver.FakeAPIKey}, secrets...) {
			if strings.Contains(string(r.Raw), s) {
				t.Errorf("a request to %s carries %q: an agent's shell saw it", r.Path, s)
			}
		}
	}
	if !probed || !standin {
		t.Errorf("probed %v, saw a stand-in %v: the probes did not run as planned", probed, standin)
	}
}

// The three CLIs debate with key_proxy on and their keys in walkie's own
// environment, as a user exports them: each CLI calls the model with the
// real key, and its shell finds only stand-ins — in env,
// /proc/self/environ, its files in the private HOME — and cannot read
// walkie's environment.
func TestDebateKeysStayInTheProxy(t *testing.T) {
	t.Parallel()
	d := &debater{participants: []string{"claude", "codex", "gemini"}, text: proposal}
	f := newFixture(t, func(file string) modelserver.Script {
		d.file = file
		return modelserver.Script{Func: prober(d.reply)}
	}, setup{participants: d.participants, maxRounds: 2,
		defaults: map[string]string{"key_proxy": "on"},
		env:      []string{"ANTHROPIC_API_KEY=" + modelserver.FakeAPIKey, "GEMINI_API_KEY=" + modelserver.FakeAPIKey, "FAKE_API_KEY=" + modelserver.FakeAPIKey},
		agents: func(url string) map[string]string {
			return map[string]string{
				"claude": claudeAgent(url, false),
				"codex":  codexAgent(url, false) + "    env_allow: [FAKE_API_KEY]\n",
				// gemini's preset has no shell: yolo, for the probe.
				"gemini": geminiAgent(url, false) + "    command: [gemini, -p, \"{prompt}\", -o, stream-json, --approval-mode, yolo, --skip-trust]\n",
			}
		}})
	sum := parseSummary(t, f.session(0, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted", "accepted", "accepted")
	for _, r := range recs {
		if !r.KeysProxied {
			t.Errorf("%s: its keys were not proxied", r)
		}
	}
	if sum.Status != "converged" {
		t.Errorf("status %s (%s)", sum.Status, sum.Reason)
	}
	checkKeys(t, f.srv, []modelserver.Vendor{modelserver.Anthropic, modelserver.OpenAI, modelserver.Gemini})
	f.MustRun(0, "verify", "d.walkie.md")
}

// walkie review in a simulated Actions run (CI set): the key proxy is on
// without being asked, and neither the runner's GITHUB_TOKEN nor a model
// key reaches an agent's shell, though walkie holds both.
func TestReviewKeepsTokenAndKeysFromAgents(t *testing.T) {
	t.Parallel()
	f := newReviewFixture(t, prober(reviewer))
	f.env = []string{"ANTHROPIC_API_KEY=" + modelserver.FakeAPIKey}
	f.review(0)
	checkKeys(t, f.srv, []modelserver.Vendor{modelserver.Anthropic, modelserver.OpenAI}, reviewToken)
}
