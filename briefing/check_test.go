package briefing

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// filled returns a briefing with every section written and about n words.
func filled(n int) string {
	per := n / len(Sections)
	var b strings.Builder
	for _, s := range Sections {
		fmt.Fprintf(&b, "## %s\n%s\n\n", s.Title, strings.TrimSpace(strings.Repeat("word ", per)))
	}
	return b.String()
}

func TestWordCount(t *testing.T) {
	for text, want := range map[string]int{
		"":                                      0,
		"one two  three\nfour":                  4,
		"## Question\nHow should it page?":      4, // the heading is not counted
		"- a bullet — and a dash":               5, // "-" and "—" are not words
		"`page`, `per_page` (v1) 2026-11":       4,
		"# Briefing\nfive words are here now":   5,
		"```\n## not a heading? yes it is\n```": 6,
	} {
		if got := WordCount([]byte(text)); got != want {
			t.Errorf("WordCount(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	good := filled(350)
	if r := Check([]byte(good)); !r.OK() || r.Reason() != "" || r.Words != 350 {
		t.Fatalf("a full briefing of 350 words: %+v %q", r, r.Reason())
	}
	cases := []struct {
		name, text, reason string
	}{
		{"short", filled(100), "100 words, far below the 300-400 aimed at"},
		{"long", filled(600), "600 words, far above the 300-400 aimed at"},
		{"just under is fine", filled(250), ""},
		{"just over is fine", filled(475), ""},
		{"missing", strings.Replace(filled(350), "## Options\n", "## Choices\n", 1), "missing sections: Options"},
		{"empty", strings.Replace(filled(350), "## Question\n"+strings.TrimSpace(strings.Repeat("word ", 70)), "## Question\n", 1),
			"empty sections: Question"},
		{"unfilled", strings.Replace(filled(350), "## Constraints\n", "## Constraints\n_"+Sections[2].Guidance+"_\n## Other\n", 1),
			"sections still holding the template's guidance: Constraints"},
	}
	for _, c := range cases {
		if got := Check([]byte(c.text)).Reason(); got != c.reason {
			t.Errorf("%s: reason %q, want %q", c.name, got, c.reason)
		}
	}
}

func TestSectionHeadingsAreMatchedLoosely(t *testing.T) {
	// The demo's briefing words the headings its own way.
	b, err := os.ReadFile("../scripts/demo/briefing.md")
	if err != nil {
		t.Skip(err)
	}
	r := Check(b)
	if len(r.Missing)+len(r.Empty)+len(r.Unfilled) != 0 {
		t.Fatalf("demo briefing: %q", r.Reason())
	}
	for _, h := range []string{"### 1. Question", "## The options", "## Decided (do not relitigate)", "## Sign-off", "## What signing off means"} {
		if sectionOf(strings.TrimLeft(h, "# ")) < 0 {
			t.Errorf("heading %q names no section", h)
		}
	}
	if sectionOf("Background") >= 0 {
		t.Error("Background matched a section")
	}
}
