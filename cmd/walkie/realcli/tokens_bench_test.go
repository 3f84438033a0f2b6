//go:build linux

package realcli

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/fakemodel/modelserver"
	"github.com/walkie-sh/walkie/walkie"
)

// The token benchmarks of issue 29: debates through the real claude,
// codex and gemini against the fake model server, which counts what each
// CLI sends in o200k tokens (modelserver.Tokens), run two ways in the
// same run: today's prompt, presets and markers (the baseline below,
// kept here and nowhere in the live config), and the built-in ones. The
// model is the same reader on both sides: it reads as its prompt says,
// appends the same argument for the same turn, and ends.

// baselinePrompt is the turn prompt walkie shipped before issue 29.
const baselinePrompt = `You are {{.Agent}}, one participant in a written debate{{if .Participants}} between {{list .Participants}}{{end}}. The whole debate is one markdown file:

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

// baselineCommands are the presets' commands before issue 29: no tool
// limits; {model} and {effort} as presetFlags adds them.
var baselineCommands = map[string]string{
	"claude": `[claude, -p, "{prompt}", --output-format, stream-json, --verbose, --permission-mode, acceptEdits, --no-session-persistence]`,
	"codex":  `[codex, exec, --json, --skip-git-repo-check, -s, workspace-write, --ephemeral, -m, "{model}", -c, "model_reasoning_effort={effort}", "{prompt}"]`,
	"gemini": `[gemini, -p, "{prompt}", -o, stream-json, --approval-mode, auto_edit, --skip-trust]`,
}

// benchBriefing is a briefing of the usual length (300 words or so).
var benchBriefing = strings.Repeat("Should the service's API return errors as RFC 9457 problem details, with a stable type URI per error, "+
	"or keep its own error envelope? The clients are three mobile apps and two partner integrations; the envelope is in use "+
	"for two years. A sign-off means: ship the proposal as it stands in the next minor release.\n\n", 4)

// side is one way of running the debate.
type side struct {
	name     string
	baseline bool
}

var sides = []side{{"baseline", true}, {"new", false}}

// benchFixture makes a debate of participants for side, the record
// created as walkie init does on that side: format 1 for the baseline,
// walkie init's own for the new side, with the same briefing.
func benchFixture(b testing.TB, sd side, rd *reader, participants []string, rounds int) *fixture {
	s := setup{participants: participants, maxRounds: rounds}
	s.create = func(f *fixture) {
		f.write("brief.md", benchBriefing)
		if !sd.baseline {
			f.MustRun(0, "init", "d.walkie.md", "--agents", strings.Join(participants, ","), "--max-rounds", strconv.Itoa(rounds), "--briefing", "brief.md")
			return
		}
		f.write("d.walkie.md", fmt.Sprintf("---\nwalkie: 1\nid: d\nparticipants: [%s]\nmax_rounds: %d\n---\n# Briefing\n\n%s",
			strings.Join(participants, ", "), rounds, benchBriefing))
	}
	if sd.baseline {
		var top strings.Builder
		top.WriteString("prompts:\n  baseline: |\n")
		for _, l := range strings.SplitAfter(strings.TrimSuffix(baselinePrompt, "\n"), "\n") {
			top.WriteString("    " + l)
		}
		s.top = top.String() + "\n"
		s.agents = func(url string) map[string]string {
			m := map[string]string{}
			for _, p := range participants {
				m[p] = agentFor(p, url, true) + "    command: " + baselineCommands[p] + "\n    prompt: baseline\n"
			}
			return m
		}
	}
	return newFixture(b, rd.script, s)
}

// sessionCost is what one session sent the model.
type sessionCost struct {
	turn   int
	agent  string
	calls  int
	bytes  int // request bodies
	tokens int // input tokens
	cached int // of them, the prefix an earlier call began with
	fixed  int // the first call less walkie's prompt: what the CLI adds to every call
	unseen []int
}

// costs reads the server's log: one sessionCost per turn, in order.
func costs(b testing.TB, srv *modelserver.Server) []sessionCost {
	var out []sessionCost
	byTurn := sessions(srv)
	for _, turn := range slices.Sorted(maps.Keys(byTurn)) {
		reqs := byTurn[turn]
		_, agent, prompt := promptTurn(reqs[0])
		c := sessionCost{turn: turn, agent: agent, calls: len(reqs), unseen: unseen(reqs, turn)}
		for i, r := range reqs {
			n, err := r.Tokens()
			if err != nil {
				b.Fatal(err)
			}
			c.bytes += len(r.Raw)
			c.tokens += n
			c.cached += r.Reply.Usage.CachedInputTokens
			if i == 0 {
				q, _ := modelserver.CountTokens([]byte(strconv.Quote(prompt)))
				c.fixed = n - q
			}
		}
		out = append(out, c)
	}
	return out
}

// markerTokens is, per entry of the record, the tokens the file grew by
// beyond the entry's own text (heading and body): its marker line.
func markerTokens(b testing.TB, file string) []int {
	d, err := walkie.Load(file)
	if err != nil {
		b.Fatal(err)
	}
	var out []int
	for _, e := range d.Entries {
		whole, _ := modelserver.CountTokens(e.Raw)
		i := strings.LastIndex(strings.TrimSuffix(string(e.Raw), "\n"), "\n")
		text, _ := modelserver.CountTokens(e.Raw[:i+1])
		out = append(out, whole-text)
	}
	return out
}

// debateRun is one debate's figures.
type debateRun struct {
	sessions []sessionCost
	markers  []int
}

func (r debateRun) total(agent string) (tokens, bytes, calls int) {
	for _, s := range r.sessions {
		if agent == "" || s.agent == agent {
			tokens, bytes, calls = tokens+s.tokens, bytes+s.bytes, calls+s.calls
		}
	}
	return
}

func (r debateRun) mean(agent string, f func(sessionCost) int) float64 {
	sum, n := 0, 0
	for _, s := range r.sessions {
		if s.agent == agent {
			sum, n = sum+f(s), n+1
		}
	}
	return float64(sum) / float64(max(n, 1))
}

// growth is how much an agent's session grows per turn of the debate:
// from its first session to its last, per turn between them.
func (r debateRun) growth(agent string) float64 {
	var first, last *sessionCost
	for i := range r.sessions {
		if s := &r.sessions[i]; s.agent == agent {
			if first == nil {
				first = s
			}
			last = s
		}
	}
	if first == nil || last.turn == first.turn {
		return 0
	}
	return float64(last.tokens-first.tokens) / float64(last.turn-first.turn)
}

func (r debateRun) unseen(agent string) int {
	n := 0
	for _, s := range r.sessions {
		if s.agent == agent {
			n += len(s.unseen)
		}
	}
	return n
}

// BenchmarkDebateTokens: a 10- and a 30-turn claude + codex debate, the
// baseline against the new, side by side: tokens and bytes sent per turn
// and per debate, the ratio, what the file grows by per entry beyond the
// entry's own text, the fixed prompt of each CLI's calls, and entries an
// agent never saw. Targets (issue 29): input tokens of the 30-turn debate
// at most 0.35 of the baseline's; a claude call's fixed prompt at most
// 6,000 tokens; at most 40 tokens of growth per entry beyond its text;
// no entry unseen.
func BenchmarkDebateTokens(b *testing.B) {
	for b.Loop() {
		runs := map[string]map[int]debateRun{}
		for _, turns := range []int{10, 30} {
			for _, sd := range sides {
				rd := &reader{write: argument}
				f := benchFixture(b, sd, rd, []string{"claude", "codex"}, turns/2)
				f.session(10, "auto", "d.walkie.md", "--approve")
				if runs[sd.name] == nil {
					runs[sd.name] = map[int]debateRun{}
				}
				runs[sd.name][turns] = debateRun{sessions: costs(b, f.srv), markers: markerTokens(b, f.file)}
			}
		}
		reportDebates(b, runs)
	}
}

func reportDebates(b *testing.B, runs map[string]map[int]debateRun) {
	base, next := runs["baseline"], runs["new"]
	for _, turns := range []int{10, 30} {
		bd, nd := base[turns], next[turns]
		var tbl strings.Builder
		fmt.Fprintf(&tbl, "%d-turn debate, per turn (baseline | new):\n", turns)
		fmt.Fprintf(&tbl, "  turn agent   calls  bytes    tokens  cached | calls  bytes    tokens  cached  ratio\n")
		for i := range bd.sessions {
			o, n := bd.sessions[i], nd.sessions[i]
			fmt.Fprintf(&tbl, "  %4d %-7s %5d %7d %9d %7d | %5d %7d %9d %7d  %5.2f\n", o.turn, o.agent, o.calls, o.bytes, o.tokens, o.cached,
				n.calls, n.bytes, n.tokens, n.cached, float64(n.tokens)/float64(o.tokens))
		}
		bt, bb, _ := bd.total("")
		nt, nb, _ := nd.total("")
		fmt.Fprintf(&tbl, "  debate: %d tokens, %d bytes | %d tokens, %d bytes; ratio %.3f (tokens), %.3f (bytes)\n", bt, bb, nt, nb,
			float64(nt)/float64(bt), float64(nb)/float64(bb))
		fmt.Fprintf(&tbl, "  growth of a claude session's input per turn: %.0f | %.0f tokens; of a codex session's: %.0f | %.0f\n",
			bd.growth("claude"), nd.growth("claude"), bd.growth("codex"), nd.growth("codex"))
		fmt.Fprintf(&tbl, "  the file's growth per entry beyond its text (marker): max %d, mean %.1f | max %d, mean %.1f tokens\n",
			slices.Max(bd.markers), meanInts(bd.markers), slices.Max(nd.markers), meanInts(nd.markers))
		for _, a := range []string{"claude", "codex"} {
			fmt.Fprintf(&tbl, "  %s: fixed prompt per call %.0f | %.0f tokens; entries unseen %d | %d\n", a,
				bd.mean(a, func(s sessionCost) int { return s.fixed }), nd.mean(a, func(s sessionCost) int { return s.fixed }), bd.unseen(a), nd.unseen(a))
		}
		// Printed, not logged: go test keeps only the first lines of a
		// benchmark's log.
		fmt.Print(tbl.String())
		t := strconv.Itoa(turns)
		b.ReportMetric(float64(bt), "tokens-"+t+"-base")
		b.ReportMetric(float64(nt), "tokens-"+t+"-new")
		b.ReportMetric(float64(nt)/float64(bt), "ratio-tokens-"+t)
		b.ReportMetric(float64(nb)/float64(bb), "ratio-bytes-"+t)
		b.ReportMetric(bd.growth("claude"), "growth-per-turn-"+t+"-base")
		b.ReportMetric(nd.growth("claude"), "growth-per-turn-"+t+"-new")
		if turns == 30 {
			b.ReportMetric(float64(slices.Max(bd.markers)), "marker-tokens-max-base")
			b.ReportMetric(float64(slices.Max(nd.markers)), "marker-tokens-max-new")
			for _, a := range []string{"claude", "codex"} {
				b.ReportMetric(bd.mean(a, func(s sessionCost) int { return s.fixed }), "fixed-"+a+"-base")
				b.ReportMetric(nd.mean(a, func(s sessionCost) int { return s.fixed }), "fixed-"+a+"-new")
				b.ReportMetric(float64(bd.unseen(a)), "unseen-"+a+"-30-base")
				b.ReportMetric(float64(nd.unseen(a)), "unseen-"+a+"-30-new")
			}
		}
	}
}

func meanInts(xs []int) float64 {
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(max(len(xs), 1))
}

// BenchmarkUnseen: the entries a session never saw, per CLI, on records
// of 30 and 60 turns (seeded, then one turn by each of claude, codex and
// gemini), the baseline against the new. Target: none, on the new side.
func BenchmarkUnseen(b *testing.B) {
	for b.Loop() {
		var tbl strings.Builder
		tbl.WriteString("entries unseen (baseline | new):\n")
		for _, turns := range []int{30, 60} {
			got := map[string][2]int{}
			for i, sd := range sides {
				rd := &reader{write: argument}
				f := benchFixture(b, sd, rd, []string{"claude", "codex", "gemini"}, turns/3+1)
				f.MustRun(0, "brief", "approve", "d.walkie.md", "--yes")
				seed(b, f.file, turns-3)
				for k := turns - 2; k <= turns; k++ {
					f.session(0, "turn", "d.walkie.md")
				}
				for _, s := range costs(b, f.srv) {
					g := got[s.agent]
					g[i] = len(s.unseen)
					got[s.agent] = g
				}
			}
			for _, a := range []string{"claude", "codex", "gemini"} {
				fmt.Fprintf(&tbl, "  %d turns, %s: %d | %d\n", turns, a, got[a][0], got[a][1])
				b.ReportMetric(float64(got[a][0]), fmt.Sprintf("unseen-%s-%d-base", a, turns))
				b.ReportMetric(float64(got[a][1]), fmt.Sprintf("unseen-%s-%d-new", a, turns))
			}
		}
		fmt.Print(tbl.String())
	}
}
