package walkie

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Verdicts on an agent's turn: the outcomes the judge gives.
const (
	VerdictAccepted  = OutcomeAccepted
	VerdictNoTurn    = OutcomeNoTurn
	VerdictMalformed = OutcomeMalformed
	VerdictTampered  = OutcomeTampered
)

// Verdict is the judgement of what an agent left in the file.
type Verdict struct {
	Outcome Outcome // one of the Verdict* constants
	Detail  string  // one line a person understands
	Stamped bool    // the turn came through the enforced writer and is already stamped
	Signed  bool
	Line    int // where the problem is, when there is one
	// Tags are what the accepted turn states it is (format 3).
	Tags Tags
}

// Expect is the turn the controller asked for.
type Expect struct {
	Turn  int
	Agent string
	// Refs, when set, checks the turn's refs against the repository the
	// record is bound to when Settle records it (the judge's own reading
	// of the turn needs no repository).
	Refs RefResolver
	// Extra is a ref Settle adds to a typed record's accepted turn when
	// the agent wrote the turn itself and did not cite it: the branch its
	// worktree's commits came back on.
	Extra *Ref
	// Before, when set, is the parse of exactly the snapshot's bytes, as
	// the caller already holds it: Settle does not parse them again.
	Before *Doc
	// Tampered, when set, is what the session changed outside the record
	// that it may not (the repository's refs, config or hooks, which the
	// caller found and put back): Settle rejects the turn as tampered,
	// whatever it wrote, with this as the detail.
	Tampered string
	// Refuse, when set, is why a turn that is otherwise valid does not
	// hold (its evidence, checked by the caller): Settle rejects it as
	// malformed with this as the detail.
	Refuse string
}

// Judge decides, without touching anything, whether after holds exactly
// one valid new turn on top of before: the recorded part of before
// unchanged, one turn with the expected heading and author, within the
// size limit, signed only by its author on its last line.
func Judge(file string, before, after []byte, want Expect) (Verdict, *Doc) {
	bd, err := Parse(file, before)
	if err != nil {
		return Verdict{Outcome: VerdictTampered, Detail: "the record was already invalid before the turn: " + err.Error()}, nil
	}
	return judgeParsed(file, bd, before, after, want)
}

// judgeParsed is Judge with before already parsed (bd), for Settle,
// which parses it first to find the debate: once per turn is enough.
func judgeParsed(file string, bd *Doc, before, after []byte, want Expect) (Verdict, *Doc) {
	prefix := before[:bd.TailOffset]
	if !bytes.HasPrefix(after, prefix) {
		line := firstDiffLine(prefix, after)
		return Verdict{Outcome: VerdictTampered, Line: line, Detail: fmt.Sprintf("the file was changed above the new turn (first difference at line %d)", line)}, nil
	}
	ad, err := Parse(file, after)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) && ie.marker && ie.Line > bytes.Count(prefix, []byte("\n")) {
			// A marker line in the turn that is not one walkie writes
			// (a format-3 marker in a compact record, say).
			return Verdict{Outcome: VerdictMalformed, Line: ie.Line, Detail: forgedDetail(ie.Line, strings.TrimPrefix(ie.Msg, "bad marker line: "))}, nil
		}
		if errors.As(err, &ie) {
			return Verdict{Outcome: VerdictMalformed, Line: ie.Line, Detail: ie.Msg}, nil
		}
		return Verdict{Outcome: VerdictMalformed, Detail: err.Error()}, nil
	}
	switch n := len(ad.Entries) - len(bd.Entries); {
	case n == 0:
	case n == 1 && isBlank(ad.Tail):
		return judgeStamped(ad, want)
	default:
		if v, forged := forgedMarker(ad, len(bd.Entries)); forged {
			return v, nil
		}
		return Verdict{Outcome: VerdictMalformed, Detail: fmt.Sprintf("%d new recorded entries where one turn was expected", n)}, nil
	}
	switch {
	case ad.TailOffset != bd.TailOffset:
		// Before the first entry the parser counts every line up to an
		// entry heading as the briefing: text added under a wrong heading
		// (or none) lands there, not in the tail.
		line := bytes.Count(after[:bd.TailOffset], []byte("\n")) + 1
		return Verdict{Outcome: VerdictMalformed, Line: line,
			Detail: fmt.Sprintf("text was added without the heading %q", fmt.Sprintf("## Turn %d · %s", want.Turn, want.Agent))}, nil
	}
	v := judgeTail(ad, want)
	return v, ad
}

// judgeStamped checks a turn that came stamped: posted through `walkie
// post`, or closed by a marker the agent wrote itself. Only the record
// before the attempt is known good, so a chain that breaks at the new
// entry is the turn's fault; a forged marker that does verify must still
// hold a body walkie post would have taken (Settle then checks that
// walkie really recorded it).
func judgeStamped(ad *Doc, want Expect) (Verdict, *Doc) {
	e := &ad.Entries[len(ad.Entries)-1]
	if v, forged := forgedMarker(ad, len(ad.Entries)-1); forged {
		return v, nil
	}
	if err := ad.Verify(); err != nil {
		return Verdict{Outcome: VerdictTampered, Detail: err.Error()}, nil
	}
	if e.Kind != KindTurn || e.Turn != want.Turn || e.Agent != want.Agent {
		return Verdict{Outcome: VerdictMalformed, Line: e.Line, Detail: fmt.Sprintf("the new entry is not turn %d by %s", want.Turn, want.Agent)}, nil
	}
	if pr := checkText(e.Body); pr != nil {
		return Verdict{Outcome: VerdictMalformed, Line: e.Line + pr.line, Detail: pr.turnDetail(e.Line + pr.line)}, nil
	}
	if pr := checkSignOff(e.Body); pr != nil && !ad.Meta.IsRoundtable() {
		return Verdict{Outcome: VerdictMalformed, Line: e.Line + pr.line, Detail: pr.turnDetail(e.Line + pr.line)}, nil
	}
	if ad.Meta.IsTyped() {
		if err := checkStatic(&ad.Meta, e.Marker.Tags, false); err != nil {
			return Verdict{Outcome: VerdictMalformed, Line: e.MarkLine, Detail: err.Error()}, nil
		}
	}
	// A round table's turns never sign: convergence is the grader's and
	// the reviewers' verdicts.
	return Verdict{Outcome: VerdictAccepted, Stamped: true, Signed: e.Signed() && !ad.Meta.IsRoundtable(), Detail: "posted with walkie post", Tags: e.Marker.Tags}, ad
}

// forgedMarker reports a new entry (after the first old ones) whose
// marker the chain does not confirm: the record verified up to it, so
// its marker was written by the agent, not by walkie.
func forgedMarker(ad *Doc, old int) (Verdict, bool) {
	var ce *ChainError
	if err := ad.Verify(); !errors.As(err, &ce) || ce.Seq <= old || ce.Seq > len(ad.Entries) {
		return Verdict{}, false
	}
	e := &ad.Entries[ce.Seq-1]
	return Verdict{Outcome: VerdictMalformed, Line: e.MarkLine, Detail: forgedDetail(e.MarkLine, "the chain does not match it")}, true
}

func forgedDetail(line int, why string) string {
	return fmt.Sprintf("line %d is a walkie marker that walkie did not write (%s): only walkie post and the controller stamp turns; write the turn under its heading and leave the marker to walkie", line, why)
}

// judgeTail checks the unstamped text after the last marker.
func judgeTail(d *Doc, want Expect) Verdict {
	if !utf8.Valid(d.Tail) {
		return Verdict{Outcome: VerdictMalformed, Line: d.TailLine, Detail: "the turn is not UTF-8"}
	}
	bad := func(l int, format string, args ...any) Verdict {
		return Verdict{Outcome: VerdictMalformed, Line: l, Detail: fmt.Sprintf(format, args...)}
	}
	if pr := controlProblem(d.Tail); pr != nil {
		return bad(d.TailLine+pr.line-1, "%s", pr.turnDetail(d.TailLine+pr.line-1))
	}
	lines := splitLines(d.Tail, 0, d.TailLine)
	k := 0
	for k < len(lines) && isBlank(lines[k].text) {
		k++
	}
	if k == len(lines) {
		return Verdict{Outcome: VerdictNoTurn, Detail: "no new turn was written"}
	}
	h := lines[k]
	heading := fmt.Sprintf("## Turn %d · %s", want.Turn, want.Agent)
	if string(h.text) != heading {
		if m := turnHeadingRe.FindSubmatch(h.text); m != nil && string(m[2]) != want.Agent {
			return bad(h.num, "the turn is headed for %s, not %s", m[2], want.Agent)
		}
		return bad(h.num, "heading %q where %q was expected", clip(h.text), heading)
	}
	body := d.Tail[h.end:]
	if len(body) > d.Meta.TurnLimit() {
		return bad(h.num, "the turn is %d bytes, over the limit of %d", len(body), d.Meta.TurnLimit())
	}
	if pr := checkText(body); pr != nil {
		return bad(h.num+pr.line, "%s", pr.turnDetail(h.num+pr.line))
	}
	last := -1
	for _, l := range lines[k+1:] {
		if !isBlank(l.text) {
			last = l.num
		}
	}
	if last < 0 {
		return bad(h.num, "the turn has a heading but no text")
	}
	signed := false
	for _, l := range lines[k+1:] {
		name := signOffName(l.text)
		switch {
		case name == "":
		case name != want.Agent:
			return bad(l.num, "a sign-off of %s in %s's turn", name, want.Agent)
		case l.num != last:
			return bad(l.num, "the sign-off is not the turn's last line")
		default:
			signed = true
		}
	}
	if pr := checkSignOff(body); pr != nil && !d.Meta.IsRoundtable() {
		return bad(h.num+pr.line, "%s", pr.turnDetail(h.num+pr.line))
	}
	var tags Tags
	if d.Meta.IsTyped() {
		t, first, pr := bodyTags(body)
		if pr != nil {
			return bad(h.num+pr.line, "line %d: %s", h.num+pr.line, pr.msg)
		}
		if err := checkStatic(&d.Meta, t, false); err != nil {
			return bad(h.num+max(first, 1), "%v", err)
		}
		if e := (Entry{Body: body, Marker: Marker{Tags: t}}); e.Text() == "" {
			return bad(h.num, "the turn has trailer lines but no text: say what the %s is", orWord(t.Type, "entry"))
		}
		tags = t
	}
	// A round table has no sign-offs (see progress): the line is kept as
	// text, and the turn is not signed.
	return Verdict{Outcome: VerdictAccepted, Signed: signed && !d.Meta.IsRoundtable(), Tags: tags}
}

func firstDiffLine(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return bytes.Count(a[:i], []byte("\n")) + 1
}
