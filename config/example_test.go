package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/walkie-sh/walkie/walkie"
)

// The example files are the ones docs/configuration.md shows; they must
// parse, and the docs must show them verbatim.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "example-*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v", files, err)
	}
	doc, docErr := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Parse(f, data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		for _, name := range c.AgentNames() {
			a, _ := c.Agent(name)
			if _, err := a.Argv(Vars{Prompt: "p", File: "f", Dir: "d", Agent: name, Turn: 1, Round: 1}); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			if _, err := c.RenderPrompt(a.Prompt, PromptData{Agent: name, File: "f", Turn: 1, Round: 1}); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if docErr != nil {
			t.Errorf("docs: %v", docErr)
		} else if !strings.Contains(string(doc), string(data)) {
			t.Errorf("docs/configuration.md does not show %s verbatim", f)
		}
	}
}

func TestExampleFakeAgents(t *testing.T) {
	c, err := Parse("x", mustRead(t, "testdata/example-fake.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Agent("fake-a")
	argv, err := a.Argv(Vars{File: "/w/d.walkie.md", Dir: "/w", Agent: "fake-a", Turn: 3, Round: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(argv, " "); got != "fakeagent --file /w/d.walkie.md --agent fake-a --turn 3 --round 2 --script /w/fake-a.yaml" {
		t.Errorf("argv %s", got)
	}
	b, _ := c.Agent("fake-b")
	env, err := b.EnvVars(Vars{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(env, " ") != "WALKIE_DEMO=1" || !slices.Contains(b.EnvAllow, "HTTPS_PROXY") {
		t.Errorf("env %q, allow %q", env, b.EnvAllow)
	}
	if len(b.Rules) != 2 || b.Rules[0].Reply != "y\r" || b.Rules[1].Outcome != "auth" || b.Timeout != 2*time.Minute {
		t.Errorf("fake-b %+v", b)
	}
}

// Every key the decoder accepts is documented.
func TestDocsNameEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	outcomes := strings.Split(outcomeList(walkie.RuleOutcomes), ", ")
	lists := [][]string{Placeholders, usageKinds, outcomes}
	for _, keys := range sectionKeys() {
		lists = append(lists, keys)
	}
	for _, keys := range lists {
		for _, k := range keys {
			if !strings.Contains(string(doc), "`"+k+"`") && !strings.Contains(string(doc), "`{"+k+"}`") {
				t.Errorf("docs/configuration.md does not mention `%s`", k)
			}
		}
	}
}

// sectionKeys returns the keys of every section table, by section.
func sectionKeys() map[string][]string {
	c := &Config{}
	var a Agent
	var r Rule
	var match *yaml.Node
	var price Price
	var in, out bool
	var person Person
	return map[string][]string{
		"":                     topKeys,
		"defaults":             defaultsFields(&c.Defaults).keys(),
		"agents.NAME":          agentFields(&a, nil).keys(),
		"agents.NAME.rules[N]": ruleFields(&r, &match).keys(),
		"pricing":              pricingFields(&c.Pricing).keys(),
		"pricing.models.MODEL": priceFields(&price, &in, &out).keys(),
		"limits":               limitsFields(c).keys(),
		"notify":               notifyFields(&c.Notify).keys(),
		"notify.webhook":       webhookFields(&c.Notify.Webhook).keys(),
		"notify.telegram":      telegramFields(&c.Notify.Telegram).keys(),
		"serve":                serveFields(&c.Serve).keys(),
		"roundtable_prompts":   roundtablePromptFields(&c.Roundtable).keys(),
		"people.NAME":          personFields(&person).keys(),
		"sandbox":              sandboxRoleFields(map[string]Sandboxing{}).keys(),
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
