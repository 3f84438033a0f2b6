package roundtable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
)

// The verdict a reviewer writes, in its fixed schema:
//
//	{"verdict": "approve" | "request_changes",
//	 "objections": [{"summary": "…", "rule": "…", "failing_input": "…", "blocking": true}]}
const (
	VerdictApprove        = "approve"
	VerdictRequestChanges = "request_changes"
)

// Bounds on what a reviewer may write: a verdict is read into memory and
// into the record, and the record bounds a turn's size.
const (
	maxVerdictBytes = 256 << 10
	maxObjections   = 30
	maxFieldBytes   = 1500
)

// Objection is one point a reviewer raises.
type Objection struct {
	Summary      string `json:"summary"`
	Rule         string `json:"rule"`
	FailingInput string `json:"failing_input"`
	Blocking     bool   `json:"blocking"`
}

// blocker reports whether the objection may block: it is marked blocking
// and names both the rule it breaks and an input that fails.
//
// A failing input is kept exactly as written, white space and all: a lone
// newline, a tab or a space is an input (often the very one a parser's
// briefing leaves open). Only a missing one, JSON null, or the empty
// string names none: "" is what a model writes into a field it has
// nothing for, so the empty input must be written visibly, as "\"\"" or
// in words ("the empty string").
func (o Objection) blocker() bool {
	return o.Blocking && o.Rule != "" && o.FailingInput != ""
}

// ReviewVerdict is a reviewer's verdict as walkie read it: the schema's
// fields, trimmed and bounded, plus walkie's reading of them.
type ReviewVerdict struct {
	Verdict    string      `json:"verdict"`
	Objections []Objection `json:"objections"`
	// Approves is walkie's reading: no objection that may block. A
	// request_changes without one counts as an approval with advice, and a
	// blocking objection stands whatever the verdict word says.
	Approves bool `json:"approves"`
	// Notes say where walkie's reading differs from what was written.
	Notes []string `json:"notes,omitempty"`
}

// Blockers are the objections that block convergence.
func (v *ReviewVerdict) Blockers() []Objection {
	var out []Objection
	for _, o := range v.Objections {
		if o.blocker() {
			out = append(out, o)
		}
	}
	return out
}

// AdviceCount is how many objections are advice only.
func (v *ReviewVerdict) AdviceCount() int { return len(v.Objections) - len(v.Blockers()) }

// errVerdict marks a verdict file that does not follow the schema.
var errVerdict = errors.New("invalid verdict")

// parseVerdict reads a verdict file. A fenced ```json block around the
// object is tolerated (models like to add one), and so is prose around one
// fenced block, which is then the verdict ("Here is my verdict:", then the
// block; a note says the prose was not read); anything else that is not
// exactly one object of the schema is an error wrapping errVerdict.
func parseVerdict(data []byte) (ReviewVerdict, error) {
	bad := func(format string, args ...any) (ReviewVerdict, error) {
		return ReviewVerdict{}, fmt.Errorf("%w: %s", errVerdict, fmt.Sprintf(format, args...))
	}
	if len(data) > maxVerdictBytes {
		return bad("%d bytes, over the limit of %d", len(data), maxVerdictBytes)
	}
	if !utf8.Valid(data) {
		return bad("not UTF-8")
	}
	data = unfence(bytes.TrimSpace(data))
	if len(data) == 0 {
		return bad("the file is empty")
	}
	var notes []string
	if data[0] != '{' {
		block, n := fencedBlock(data)
		switch {
		case n == 1:
			data = block
			notes = append(notes, "the verdict was read from its fenced block; the text around it was not")
		case n > 1:
			return bad("%d fenced blocks: write one verdict, as one JSON object (a fenced block is allowed)", n)
		}
	}
	var raw struct {
		Verdict    *string `json:"verdict"`
		Objections []struct {
			Summary      any `json:"summary"`
			Rule         any `json:"rule"`
			FailingInput any `json:"failing_input"`
			Blocking     any `json:"blocking"`
		} `json:"objections"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return bad("not a JSON object of the schema: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("text after the JSON object")
	}
	if raw.Verdict == nil {
		return bad(`no "verdict" field`)
	}
	v := ReviewVerdict{Notes: notes}
	switch w := strings.NewReplacer("-", "_", " ", "_").Replace(strings.ToLower(strings.TrimSpace(*raw.Verdict))); w {
	case VerdictApprove, VerdictRequestChanges:
		v.Verdict = w
	default:
		return bad(`"verdict" is %q; it must be "approve" or "request_changes"`, clipBytes(*raw.Verdict, 40))
	}
	if len(raw.Objections) > maxObjections {
		v.Notes = append(v.Notes, fmt.Sprintf("%d objections; only the first %d were read", len(raw.Objections), maxObjections))
		raw.Objections = raw.Objections[:maxObjections]
	}
	for i, ro := range raw.Objections {
		o := Objection{Summary: field(ro.Summary, true), Rule: field(ro.Rule, true), FailingInput: field(ro.FailingInput, false)}
		switch b := ro.Blocking.(type) {
		case bool:
			o.Blocking = b
		case nil:
		default:
			v.Notes = append(v.Notes, fmt.Sprintf("objection %d: \"blocking\" is not true or false; read as false", i+1))
		}
		if o.Blocking && !o.blocker() {
			var missing []string
			if o.Rule == "" {
				missing = append(missing, "no rule")
			}
			if o.FailingInput == "" {
				missing = append(missing, `no failing input ("" counts as none; write the empty input as "\"\"" or in words)`)
			}
			v.Notes = append(v.Notes, fmt.Sprintf("objection %d is marked blocking but names %s: recorded as advice", i+1, strings.Join(missing, " and ")))
		}
		v.Objections = append(v.Objections, o)
	}
	nb := len(v.Blockers())
	v.Approves = nb == 0
	switch {
	case v.Verdict == VerdictApprove && nb > 0:
		v.Notes = append(v.Notes, fmt.Sprintf("the verdict says approve but %d blocking objection(s) stand: read as request_changes", nb))
	case v.Verdict == VerdictRequestChanges && nb == 0:
		v.Notes = append(v.Notes, "request_changes without a blocking objection that names a rule and a failing input: read as approval with advice")
	}
	return v, nil
}

// unfence strips one surrounding markdown code fence, if there is one.
func unfence(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("```")) || !bytes.HasSuffix(b, []byte("```")) || len(b) < 6 {
		return b
	}
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return b
	}
	return bytes.TrimSpace(b[nl+1 : len(b)-3])
}

// fencedBlock is the content of the fenced code blocks of markdown b, as
// CommonMark reads them (goldmark): the first one's, and how many there
// are. Only blocks at the top level count; a fence quoted inside a list
// or a quote is the prose's.
func fencedBlock(b []byte) ([]byte, int) {
	doc := goldmark.DefaultParser().Parse(gmtext.NewReader(b))
	var first []byte
	n := 0
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		fb, ok := c.(*ast.FencedCodeBlock)
		if !ok {
			continue
		}
		if n++; n == 1 {
			lines := fb.Lines()
			for i := range lines.Len() {
				seg := lines.At(i)
				first = append(first, seg.Value(b)...)
			}
		}
	}
	return bytes.TrimSpace(first), n
}

// field turns one schema string into text: bounded, and trimmed when trim
// is set (not for a failing input, whose white space may be the point);
// numbers and other JSON values a model may write for a failing input are
// kept as JSON.
func field(v any, trim bool) string {
	var s string
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s = x
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	if trim {
		s = strings.TrimSpace(s)
	}
	return clipBytes(s, maxFieldBytes)
}

// clipBytes shortens s to at most n bytes and a "…", at a rune boundary:
// the fields it bounds reach the implementer inside one argv element,
// which the kernel bounds in bytes.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
