package temporal

import (
	"strings"
	"testing"
)

// Whatever --queue and --agents say, the parsers never panic, and what
// they accept is well formed: a queue override names an agent and a queue,
// and an agent list holds no empty or padded names.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"codex=gpu", "=q", "a=", "a=b=c", "claude,codex", " , ,x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if q, err := ParseQueues([]string{s}); err == nil {
			for agent, queue := range q {
				if agent == "" || queue == "" || strings.Contains(agent, "=") {
					t.Fatalf("ParseQueues(%q) = %v", s, q)
				}
				if AgentQueue(agent, q) != queue {
					t.Fatalf("the override for %q is not used", agent)
				}
			}
		}
		for _, a := range ParseAgents([]string{s}) {
			if a == "" || a != strings.TrimSpace(a) || strings.Contains(a, ",") {
				t.Fatalf("ParseAgents(%q) gave %q", s, a)
			}
		}
	})
}
