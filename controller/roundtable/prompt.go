package roundtable

import (
	"fmt"
	"strings"

	"github.com/walkie-sh/walkie/config"
)

// The round table's prompts are templates of the config
// (roundtable_prompts:, built-in ones by default): the instructions are
// the template's, and what other agents or the grader wrote reaches an
// agent only as quoted data in a block that says so.

// maxChangedListed bounds the changed paths a reviewer's prompt lists.
const maxChangedListed = 100

// render renders the config's round-table template for role.
func (rt *Table) render(role string, data any) (string, error) {
	p, err := rt.Engine.Config().RenderRoundtable(role, data)
	if err != nil {
		return "", fmt.Errorf("%s prompt: %w", role, err)
	}
	return p, nil
}

func promptObjection(reviewer string, o Objection) config.PromptObjection {
	return config.PromptObjection{Reviewer: reviewer, Summary: o.Summary, Rule: o.Rule, FailingInput: o.FailingInput}
}

func promptChanges(ch []Change) []config.PromptChange {
	out := make([]config.PromptChange, len(ch))
	for i, c := range ch {
		out[i] = config.PromptChange{Path: c.Path, Kind: c.Kind}
	}
	return out
}

// listWords joins names as a sentence does: "a", "a and b", "a, b and c".
func listWords(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
