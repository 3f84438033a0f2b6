package config

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"text/template"
)

// Prompts maps a template name to its text/template source.
type Prompts map[string]string

// PromptData is everything a prompt template may use. The prompt is built
// only from these fields, never from the record's text, so nothing a
// participant writes can steer the next agent's instructions.
type PromptData struct {
	Agent        string   // the agent's name
	File         string   // path of the walkie file
	Heading      string   // the exact heading to write; RenderPrompt fills "## Turn N · NAME" when empty
	Turn         int      // the turn number being written
	Round        int      // the current round
	MaxRounds    int      // the cap; 0 = not shown
	Participants []string // in turn order
	SignRule     string   // overrides the default sign-off paragraph when set
	MaxTurnBytes int      // size limit of one turn; 0 = not shown
}

// Heading returns the turn heading the record expects: "## Turn N · NAME",
// with U+00B7 MIDDLE DOT as the separator.
func Heading(turn int, agent string) string {
	return fmt.Sprintf("## Turn %d \u00b7 %s", turn, agent)
}

// DefaultTurnPrompt is the built-in "turn" template.
const DefaultTurnPrompt = `You are {{.Agent}}, one participant in a written debate{{if .Participants}} between {{list .Participants}}{{end}}. The whole debate is one markdown file:

{{.File}}

You are writing turn {{.Turn}}{{if .MaxRounds}} (round {{.Round}} of at most {{.MaxRounds}}){{else}} (round {{.Round}}){{end}}. This session starts blank: everything you need is in that file.

1. Read the whole file first, from the top: the briefing at the top states the question, the constraints and what a sign-off means; then read every turn so far, in order.
2. Decide what you think of the proposal as it stands now: what you agree with, what you object to and why, and what you propose instead. Be concrete.
3. Append exactly one turn at the very end of the file, and nothing else: with your file-editing tool, or a shell append whose heredoc delimiter is quoted (<<'EOF'). Start it, after a blank line, with this heading line exactly as written (the separator is "·", U+00B7 MIDDLE DOT):

{{.Heading}}

4. Never edit, reformat, reorder or delete anything above your turn: not the briefing, not earlier turns, not the "<!-- walkie ... -->" marker lines, not even whitespace. Every byte above your turn is checked, and any change voids your turn. Do not write marker lines yourself and do not touch any other file.
5. Keep your turn {{if .MaxTurnBytes}}under {{.MaxTurnBytes}} bytes{{else}}short{{end}}: write what moves the debate forward, not a summary of what is already there.
6. {{if .SignRule}}{{.SignRule}}{{else}}Sign off only if you agree with the proposal as it stands, with nothing left to change. Then, and only then, make the last line of your turn exactly:

Signed-off-by: {{.Agent}}

Otherwise do not sign. A turn without that line means you do not agree yet, and it voids every earlier sign-off, so everyone must sign again after it. Sign only with your own name, and only in your own turn.{{end}}

When your turn is appended, stop. Do not ask questions: nobody will answer them in this session.
`

// DefaultReviewPrompt is the built-in "review" template, a minimal start for
// the round table's reviewers.
const DefaultReviewPrompt = `You are {{.Agent}}, a reviewer. Read the whole file {{.File}} from the top, then append exactly one entry at its end, starting with this heading on a line of its own:

{{.Heading}}

Never change anything above your entry. State your verdict; a blocking objection must name the rule it breaks and an input that fails.
`

func defaultPrompts() Prompts {
	return Prompts{"turn": DefaultTurnPrompt, "review": DefaultReviewPrompt}
}

var promptFuncs = template.FuncMap{"join": strings.Join, "list": listWords}

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

func parsePrompt(name, src string) (*template.Template, error) {
	return template.New(name).Funcs(promptFuncs).Option("missingkey=error").Parse(src)
}

// checkPrompt parses src and runs it once on sample data, so a misspelt
// field ({{.Agnet}}) is caught at load, not at the first turn.
func checkPrompt(name, src string) error {
	t, err := parsePrompt(name, src)
	if err != nil {
		return err
	}
	d := PromptData{Agent: "a", File: "f.walkie.md", Turn: 1, Round: 1, MaxRounds: 2,
		Participants: []string{"a", "b"}, MaxTurnBytes: 1}
	d.Heading = Heading(d.Turn, d.Agent)
	return t.Execute(io.Discard, d)
}

// RenderPrompt renders the named template with d. An empty d.Heading is
// filled with Heading(d.Turn, d.Agent).
func (c *Config) RenderPrompt(name string, d PromptData) (string, error) {
	name = cmp.Or(name, DefaultPrompt)
	src, ok := c.Prompts[name]
	if !ok {
		return "", fmt.Errorf("config: no prompt template %q; known: %s", name, strings.Join(sortedKeys(c.Prompts), ", "))
	}
	d.Heading = cmp.Or(d.Heading, Heading(d.Turn, d.Agent))
	t, err := parsePrompt(name, src)
	if err != nil {
		return "", fmt.Errorf("config: prompt %q: %w", name, err)
	}
	var b strings.Builder
	if err := t.Execute(&b, d); err != nil {
		return "", fmt.Errorf("config: prompt %q: %w", name, err)
	}
	return b.String(), nil
}
