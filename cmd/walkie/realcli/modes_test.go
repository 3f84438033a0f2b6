//go:build linux

package realcli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
)

// mode: read-only is each CLI's own read-only mode: the model asks for the
// append as ever, the CLI refuses the write and still exits 0, and the
// turn is no-turn with the file untouched. The detail quotes why, as the
// CLI said it (issue 13: it said only "no new turn was written"): the
// refused tool call, else the agent's last words.
//
// codex says it either way: mostly it reports no failed call and only the
// agent's words are left, but in a full run under load its sandbox ran the
// command and the write failed ("Read-only file system", a failed tool
// call, quoted as such).
func TestReadOnlyMode(t *testing.T) {
	why := map[string][]string{
		"claude": {`no new turn was written; a tool call was refused or failed: "Output redirection to '`},
		"codex": {`no new turn was written; its last message: "I appended my turn."`,
			`no new turn was written; a tool call was refused or failed: "/bin/bash -lc "printf`},
		"gemini": {`no new turn was written; a tool call was refused or failed: "Access denied: plan path (`},
	}
	for _, cli := range []string{"claude", "codex", "gemini"} {
		fc := failure{cli: cli, want: []string{"no-turn"}, code: exitFailed, details: why[cli],
			agent: func(url string) string { return agentFor(cli, url, true) + "    mode: read-only\n" }}
		t.Run(cli, fc.run)
	}
}

// The presets in their default write mode play a round table: codex
// implements in the workspace; claude and gemini review, each in its
// sandbox, where the CLI lets them write their verdict and nothing
// outside (each first tries to write into the real workspace, and its CLI
// refuses); the hidden grader passes and the table converges in round 1.
func TestRoundtable(t *testing.T) {
	t.Parallel()
	var file, work string
	approve := `{"verdict":"approve","objections":[]}`
	script := func(f string) modelserver.Script {
		file, work = f, filepath.Join(filepath.Dir(f), "work")
		return modelserver.Script{Func: func(r *modelserver.Request) (modelserver.Reply, bool) {
			if isRouting(r) {
				return modelserver.Text(routing), true
			}
			n := toolResults(r)
			switch {
			case r.Vendor == modelserver.OpenAI && n == 0: // the implementer
				return modelserver.Shell("printf '42\\n' > '" + filepath.Join(work, "answer.txt") + "'"), true
			case r.Vendor == modelserver.OpenAI && n == 1:
				return modelserver.Shell("printf '\\n## Turn 1 · codex\\n\\nwork/answer.txt holds 42.\\n' >> '" + file + "'"), true
			case r.Vendor == modelserver.OpenAI:
				return modelserver.Text("Done."), true
			}
			evil := filepath.Join(work, "evil-"+string(r.Vendor)+".txt")
			verdict := findText(r.Body, verdictPath)
			switch {
			case n == 0 && r.Vendor == modelserver.Anthropic:
				return modelserver.Shell("printf 'changed by a reviewer\\n' > '" + evil + "'"), true
			case n == 0:
				return modelserver.Tool("write_file", map[string]any{"file_path": evil, "content": "changed by a reviewer\n"}), true
			case n == 1 && verdict == "":
				return modelserver.Text("The prompt names no verdict file."), true
			case n == 1 && r.Vendor == modelserver.Anthropic:
				return modelserver.Shell("printf '%s\\n' '" + approve + "' > '" + verdict + "'"), true
			case n == 1:
				return modelserver.Tool("write_file", map[string]any{"file_path": verdict, "content": approve + "\n"}), true
			}
			return modelserver.Text("Approved."), true
		}}
	}
	f := newFixture(t, script, setup{participants: []string{"codex", "claude", "gemini"}})
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	f.write("d.walkie.md", `---
walkie: 1
id: d
mode: roundtable
implementer: codex
reviewers: [claude, gemini]
grader: "grep -qx 42 {workspace}/answer.txt"
workspace: work
max_rounds: 2
---
# Briefing
Write the product of 6 and 7 into work/answer.txt, on a line of its own.
Rule 1: the answer is exact.
`)
	sum := parseSummary(t, f.session(exitOK, "auto", "d.walkie.md", "--approve", "--json"))
	recs := f.turns()
	f.wantOutcomes(recs, "accepted", "accepted", "accepted")
	if sum.Status != "converged" || sum.Turns != 3 {
		t.Fatalf("status %s after %d turns (%s)", sum.Status, sum.Turns, sum.Reason)
	}
	f.MustRun(0, "verify", "d.walkie.md")
	ents, _ := os.ReadDir(work)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "answer.txt" {
		t.Errorf("the real workspace holds %v: a reviewer wrote outside its sandbox", names)
	}
	// Each reviewer's CLI told the model it would not write there.
	for v, says := range map[modelserver.Vendor]string{
		modelserver.Anthropic: "Claude Code may only write to files in the allowed working directories",
		modelserver.Gemini:    "Path not in workspace",
	} {
		refused := false
		for _, r := range f.srv.ModelRequests(v) {
			refused = refused || (toolResults(r) == 1 && r.HasText(says))
		}
		if !refused {
			t.Errorf("%s's CLI did not say %q", v, says)
		}
	}
	// The implementer changes code: codex keeps its own instructions.
	if own, walkies := codexInstructions(f.srv); own == 0 || walkies > 0 {
		t.Errorf("of the implementer's calls, %d carry codex's own instructions and %d walkie's", own, walkies)
	}
	for _, r := range recs {
		t.Log(r)
	}
}

// verdictPath finds the verdict file the reviewer prompt names.
var verdictPath = regexp.MustCompile(`/\S*walkie-review-[^/\s]+/verdict\.json`)

// findText returns the first match of re in any string of a decoded JSON
// value.
func findText(v any, re *regexp.Regexp) string {
	switch x := v.(type) {
	case string:
		return re.FindString(x)
	case []any:
		for _, e := range x {
			if s := findText(e, re); s != "" {
				return s
			}
		}
	case map[string]any:
		for _, e := range x {
			if s := findText(e, re); s != "" {
				return s
			}
		}
	}
	return ""
}
