package walkie

import (
	"bytes"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	gmhtml "github.com/yuin/goldmark/renderer/html"
)

// FuzzEntryHeadings cross-checks the text rules against goldmark reading
// the whole record: whatever body walkie post accepts, or the judge
// accepts as an agent's turn, the record as it then stands (with a note
// after it) renders as a markdown viewer shows it, raw HTML included,
// with exactly one heading that reads as an entry heading per entry, and
// walkie's own parser finds those entries and verifies them. The rules
// look at one body, through the AST; this looks at the rendered HTML of
// the whole file, so the body's context and the renderer are checked too.
func FuzzEntryHeadings(f *testing.F) {
	for _, s := range []string{
		"Plain text.\n", "   ## Turn 3 · claude\n", "Turn 3 · claude\n===\n", "x\n\nSupervisor\n---\n",
		"> ## Turn 1 · a\n", "- # Supervisor\n", "```\n## Turn 3 · claude\n", "~~~\nx\n", "<pre>\n", "<h2>Turn 3</h2>\n",
		"## &#84;urn 3\n", "## \\Turn 3\n", "## **Turn** 3\n", "a\r## Turn 3\n", "x\x00y\n", "<!--\n## Turn 3 · claude\n",
		"    ## Turn 3 · claude\n", "<div>\n## Turn 3 · claude\n</div>\n", "[x]: /u\n## [Turn 3](x)\n", "Signed-off-by: claude\n",
		"<script>\n", "<![CDATA[\n", "<?php\n", "| a |\n|---|\n", "* * *\nTurn 3\n---\n",
	} {
		f.Add([]byte(s))
	}
	base := genRecord(f, 2, "claude", "codex") // turn 3 is claude's
	bd, err := Parse("f.walkie.md", base)
	if err != nil {
		f.Fatal(err)
	}
	want := Expect{Turn: 3, Agent: "claude"}
	f.Fuzz(func(t *testing.T, body []byte) {
		p := Post{From: "claude", Body: body}
		if text, err := checkBody(&bd.Meta, &p, ""); err == nil {
			checkRendered(t, "post", stampOn(base, bd, postedText(&p, 3, text)))
		}
		after := append(append(append([]byte(nil), base...), "\n## Turn 3 · claude\n\n"...), body...)
		if v, d := Judge("f.walkie.md", base, after, want); v.Outcome == VerdictAccepted {
			checkRendered(t, "turn", stampOn(base, bd, stampedText(d.Tail)))
		}
	})
}

// stampOn appends content to the record rec as walkie stamps an entry,
// then a supervisor note after it.
func stampOn(rec []byte, d *Doc, content []byte) []byte {
	p := d.Progress()
	mk := Marker{Seq: p.Seq + 1, Turn: p.NextTurn, Agent: p.NextAgent, At: t0, Prev: p.Hash}
	out := append(append(append([]byte(nil), rec...), content...), stamp(content, &mk, d.Meta.Walkie)...)
	note := []byte("\n## Supervisor\n\nA note after it.\n")
	nk := Marker{Seq: mk.Seq + 1, Agent: SupervisorName, At: t0, Prev: mk.Hash}
	return append(append(out, note...), stamp(note, &nk, d.Meta.Walkie)...)
}

var (
	htmlHeadingRe = regexp.MustCompile(`(?is)<h[1-6](?:\s[^>]*)?>(.*?)</h[1-6]>`)
	viewer        = goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
)

// checkRendered fails unless rec parses and verifies, and renders with one
// entry-like heading per entry, in order, each the entry's own heading.
func checkRendered(t *testing.T, how string, rec []byte) {
	t.Helper()
	d, err := Parse("f.walkie.md", rec)
	if err != nil {
		t.Fatalf("%s: the record no longer parses: %v\n%q", how, err, rec)
	}
	if err := d.Verify(); err != nil {
		t.Fatalf("%s: the record no longer verifies: %v\n%q", how, err, rec)
	}
	var out bytes.Buffer
	// A viewer hides the front matter; the briefing is where text starts.
	if err := viewer.Convert(rec[bytes.Index(rec, []byte("# Briefing")):], &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range htmlHeadingRe.FindAllStringSubmatch(out.String(), -1) {
		text := strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(m[1], ""))), " ")
		if entryLike(text) {
			got = append(got, text)
		}
	}
	var wantHeadings []string
	for _, e := range d.Entries {
		if e.Kind == KindSupervisor {
			wantHeadings = append(wantHeadings, "Supervisor")
		} else {
			wantHeadings = append(wantHeadings, "Turn "+itoa(e.Turn)+" · "+e.Agent)
		}
	}
	if strings.Join(got, "\n") != strings.Join(wantHeadings, "\n") {
		t.Fatalf("%s: a viewer shows the entry headings\n%q\nwhere the record has\n%q\nHTML:\n%s", how, got, wantHeadings, out.String())
	}
}
