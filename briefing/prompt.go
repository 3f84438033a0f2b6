package briefing

import (
	"strings"
	"text/template"
)

// PromptData is everything the distillation prompt is built from: two
// paths and, on the retry, the checker's reason. Like the debate's turn
// prompts, it never carries text from the conversation itself, so nothing
// said in the chat can rewrite the agent's instructions.
type PromptData struct {
	Chat  string // path of the conversation, as ParseChat rendered it
	Out   string // path the agent must write the briefing to
	Retry string // why the previous attempt was sent back; "" the first time
}

// distillPrompt is pinned: changing it changes every distillation, so it
// is covered by a golden file (testdata/distill-prompt.golden).
var distillPrompt = template.Must(template.New("distill").Parse(`You are writing the briefing of a written debate between AI coding agents. Each agent in that debate starts every turn with a blank memory and reads the briefing first, so the briefing must carry everything they need: nothing else of the conversation below reaches them.

1. Read the whole conversation in this file, from the top:

{{.Chat}}

2. Distill it into a briefing of {{.MinWords}} to {{.MaxWords}} words, in markdown, and write it into this file (create it; it must hold the briefing and nothing else):

{{.Out}}

The briefing has exactly these five sections, in this order, each a level-2 heading written exactly as shown, followed by its text:
{{range .Sections}}
## {{.Title}}
{{.Guidance}}
{{end}}
3. Write only what the conversation supports: do not invent options, figures or decisions, and where it leaves something open, say so. Write for a reader who never saw the conversation: name things in full, no "as discussed". State every option fairly and take no side: the debate decides. Start the file with "## Question": no title, no "# Briefing" line, no front matter, no preamble, no closing remarks. Do not change any other file.
{{if .Retry}}
A first attempt was sent back: {{.Retry}}. Write the file again, fixing that.
{{end}}
When the file is written, stop. Do not ask questions: nobody will answer them in this session.
`))

// DistillPrompt renders the pinned distillation prompt.
func DistillPrompt(d PromptData) string {
	var b strings.Builder
	err := distillPrompt.Execute(&b, struct {
		PromptData
		MinWords, MaxWords int
		Sections           []Section
	}{d, MinWords, MaxWords, Sections})
	if err != nil {
		// The template is fixed and its data are strings: a failure is a bug.
		panic("briefing: distill prompt: " + err.Error())
	}
	return b.String()
}
