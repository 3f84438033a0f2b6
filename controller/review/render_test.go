package review

import (
	"regexp"
	"strings"
	"testing"
)

func sampleResult() *Result {
	r := &Result{Version: ReportVersion, Mode: "debate", Agents: []string{"claude", "codex"}, Head: strings.Repeat("a", 40),
		Base: strings.Repeat("b", 40), BaseSHA: strings.Repeat("b", 40), MergeBase: strings.Repeat("b", 40),
		PullRequest: &PullRequest{Number: 3, URL: "https://github.com/o/r/pull/3", BaseRef: "main", BaseSHA: strings.Repeat("b", 40)},
		Docs: []DocResult{{Doc: "docs/x.md", ID: "review-docs-x", Record: "/out/review-docs-x/review-docs-x.walkie.md", Verdict: VerdictDisagreed,
			Reason: "not accepted", Status: "max-rounds", Rounds: 3, MaxRounds: 3, Turns: 6, ChainHash: "sha256:" + strings.Repeat("c", 64), Verified: true,
			Parties: []Party{{Agent: "claude", Role: "reviewer", Signed: true, Position: "ok"},
				{Agent: "codex", Role: "reviewer", Position: "@everyone look: <img src=https://evil/x.png> ``` closed?\n## Turn 9 · codex"}},
			Objections: []Objection{{Agent: "codex", Text: "@org/team `x` ``y`` <b>bold</b> | pipe", File: "docs/x.md", Line: 4, EndLine: 6}},
			Costs:      []AgentCost{{Agent: "claude", Sessions: 3, CostUSD: 0.5}, {Agent: "codex", Sessions: 3, CostUSD: 0.25, Estimated: 3}},
		}}}
	r.summarize()
	return r
}

// What agents wrote is inert in the report: inside a fence or a code
// span that nothing in the text can close.
func TestMarkdownQuotesAgents(t *testing.T) {
	md := Markdown(sampleResult())
	for _, want := range []string{
		"1. **codex** on [`docs/x.md:4-6`](https://github.com/o/r/blob/" + strings.Repeat("a", 40) + "/docs/x.md#L4-L6): ```@org/team `x` ``y`` <b>bold</b> | pipe```",
		"````text\n@everyone look: <img src=https://evil/x.png> ``` closed?\n## Turn 9 · codex\n````",
		"| codex | reviewer | no | 0 | 3 | ~$0.25 |",
		"against `main` at `bbbbbbbbbbbb`, merge base `bbbbbbbbbbbb`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q:\n%s", want, md)
		}
	}
	outside := regexp.MustCompile("(?s)````text\n.*?\n````|```[^`].*?```").ReplaceAllString(md, "")
	for _, bad := range []string{"@everyone", "@org", "<img", "<b>"} {
		if strings.Contains(outside, bad) {
			t.Errorf("%q is outside a code span or fence:\n%s", bad, outside)
		}
	}
}

func TestProse(t *testing.T) {
	got := prose("turn 2: found `## Turn 9` <img src=x> [link](u) @team *bold* a_b\nnext")
	want := "turn 2: found \\`\\#\\# Turn 9\\` \\<img src=x\\> \\[link\\](u) @\u2060team \\*bold\\* a\\_b next"
	if got != want {
		t.Errorf("prose:\n%s\nwant\n%s", got, want)
	}
}

func TestCodeSpanAndFence(t *testing.T) {
	for _, s := range []string{"plain", "`", "a ` b", "``x``", "` starts", "ends `", "```", "", "a\nb"} {
		span := codeSpan(s)
		if s == "" {
			if span != "(empty)" {
				t.Errorf("%q", span)
			}
			continue
		}
		f := regexp.MustCompile("^`+").FindString(span)
		inner := strings.TrimSuffix(strings.TrimPrefix(span, f), f)
		for _, run := range regexp.MustCompile("`+").FindAllString(inner, -1) {
			if len(run) >= len(f) {
				t.Errorf("codeSpan(%q) = %q: a run inside closes it", s, span)
			}
		}
		if strings.Contains(span, "\n") {
			t.Errorf("codeSpan(%q) spans lines", s)
		}
		block := fenced("text", s)
		lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
		open := strings.TrimSuffix(lines[0], "text")
		for _, l := range lines[1 : len(lines)-1] {
			if strings.HasPrefix(strings.TrimSpace(l), open) {
				t.Errorf("fenced(%q): line %q closes it", s, l)
			}
		}
	}
}

// A comment stays under GitHub's limit however much the agents wrote.
func TestCommentBounded(t *testing.T) {
	r := sampleResult()
	for i := range 40 {
		r.Docs = append(r.Docs, r.Docs[0])
		r.Docs[i].Parties[1].Position = strings.Repeat("long position ", 1000)
		r.Docs[i].Objections = append(r.Docs[i].Objections, Objection{Agent: "codex", Text: strings.Repeat("o", 999)})
	}
	c := Comment(r)
	if len(c) > maxCommentBytes || !strings.HasPrefix(c, CommentMarker+"\n") {
		t.Fatalf("comment of %d bytes", len(c))
	}
	small := Comment(sampleResult())
	if !strings.Contains(small, "Final positions") {
		t.Error("a small comment lost its positions")
	}
}

func TestSummarize(t *testing.T) {
	r := &Result{Docs: []DocResult{
		{Doc: "a", Verdict: VerdictDisagreed, Reason: "no", Rounds: 1, CostUSD: 1},
		{Doc: "b", Verdict: VerdictFailed, Failure: FailureBudget, Reason: "money", Rounds: 2, CostUSD: 2},
		{Doc: "c", Verdict: VerdictFailed, Failure: FailureSetup, Reason: "no key", Rounds: 0},
	}}
	r.summarize()
	if r.Verdict != VerdictFailed || r.Failure != FailureSetup || r.Reason != "c: no key" || r.Rounds != 3 || r.CostUSD != 3 {
		t.Errorf("%+v", r)
	}
	r.Docs = r.Docs[:1]
	r.summarize()
	if r.Verdict != VerdictDisagreed || r.Failure != "" || r.Reason != "a: no" {
		t.Errorf("%+v", r)
	}
	r.Docs, r.Patterns = nil, []string{"docs/*.md"}
	r.summarize()
	if r.Verdict != VerdictNone || !strings.Contains(r.Reason, "`docs/*.md`") {
		t.Errorf("%+v", r)
	}
}
