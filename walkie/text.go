package walkie

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmtext "github.com/yuin/goldmark/text"
)

// The rules every entry's text obeys, whoever writes it (walkie post, or
// an agent appending to the file): an entry holds exactly one heading,
// the one walkie writes or expects, and nothing that a reader of the
// record would take for another. "A reader" is both walkie's own line
// parser and any CommonMark renderer, since people read the record in a
// markdown viewer; docs/format.md lists what is refused.

// problemKind says what is wrong with a line of an entry's text.
type problemKind int

const (
	probControl       problemKind = iota + 1 // a control character (b, col)
	probLoneCR                               // a carriage return not before a newline (col)
	probHeadingLine                          // walkie's parser reads the line as an entry heading (text)
	probMarker                               // the line holds a walkie marker
	probRendered                             // CommonMark renders a heading that reads as an entry heading (text)
	probRawHeading                           // a raw HTML heading tag (text)
	probOpenFence                            // a code fence never closed
	probOpenHTML                             // an HTML block never closed
	probHiddenSignOff                        // a sign-off line a viewer does not show (text: what holds it)
	probShownSignOff                         // a viewer shows a sign-off where walkie reads none (text: as shown)
)

// textProblem is the first thing in an entry's text that the record
// cannot hold. line is 1-based in the text checked.
type textProblem struct {
	kind problemKind
	line int
	col  int    // 1-based byte column, for control characters
	b    rune   // the control character
	text string // the heading as written or as rendered
	// from is a line the problem names besides its own (where the block
	// hiding a sign-off starts), counted as line is; text then holds a %d
	// for it.
	from int
}

// checkText applies the rules to text, the part of an entry after its
// heading line (a post's body, or an agent's turn below its heading). It
// returns nil when the text may stand in the record.
func checkText(text []byte) *textProblem {
	if p := controlProblem(text); p != nil {
		return p
	}
	for n, l := range bytes.Split(text, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		switch {
		case looseHeadingRe.Match(l):
			return &textProblem{kind: probHeadingLine, line: n + 1, text: string(l)}
		case looseMarkerRe.Match(l):
			return &textProblem{kind: probMarker, line: n + 1, text: string(l)}
		}
	}
	return markdownProblem(text)
}

// controlProblem finds the first control character (Unicode Cc) other than
// tab and newline. A carriage return is allowed only right before a
// newline (a CRLF line ending): CommonMark reads a lone one as a line
// break, which walkie's line parser does not, so a heading could hide
// behind it. The rest make git treat the record as binary, or rewrite a
// terminal that shows it.
func controlProblem(text []byte) *textProblem {
	line, start := 1, 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == '\n':
			line, start = line+1, i+1
		case r == '\r' && i+1 < len(text) && text[i+1] == '\n':
		case r == '\r':
			return &textProblem{kind: probLoneCR, line: line, col: i - start + 1}
		case r == '\t':
		case unicode.IsControl(r):
			return &textProblem{kind: probControl, line: line, col: i - start + 1, b: r}
		}
		i += size
	}
	return nil
}

// commonMark is the CommonMark parser and renderer the rules read headings
// with. It holds no per-document state and is safe for concurrent use.
var commonMark = sync.OnceValue(func() goldmark.Markdown { return goldmark.New() })

// probeTail follows the text when it is parsed, as the record goes on
// after an entry: the marker line, a blank line and the next heading. A
// block the text leaves open (a code fence, an HTML block) swallows them,
// and then the probe is not the document's last heading.
const probeTail = "<!-- walkie probe -->\n\n## Turn 1 · walkie-probe\n"

// markdownProblem parses text as a CommonMark renderer would and returns
// the first heading that reads as an entry heading, the first raw HTML
// heading tag, or the block left open at the end of the text.
func markdownProblem(text []byte) *textProblem {
	src, end, doc := parseProbed(text)
	md := commonMark()
	lineAt := func(off int) int { return bytes.Count(src[:max(off, 0)], []byte("\n")) + 1 }
	var found *textProblem
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering || found != nil {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			if n.Pos() >= end {
				return ast.WalkSkipChildren, nil // the probe
			}
			if s := renderedText(md, src, n); entryLike(s) {
				found = &textProblem{kind: probRendered, line: lineAt(n.Pos()), text: s}
			}
		case *ast.HTMLBlock:
			start, stop := span(n.Lines())
			if n.HasClosure() {
				stop = max(stop, n.ClosureLine.Stop)
			}
			found = rawHeading(src, start, min(stop, end), lineAt)
		case *ast.RawHTML:
			start, stop := span(n.Segments)
			found = rawHeading(src, start, min(stop, end), lineAt)
		}
		return ast.WalkContinue, nil
	})
	if found != nil {
		return found
	}
	// The probe heading must come out as the document's last block, at the
	// top level: otherwise the block before it never closed.
	last := doc.LastChild()
	if h, ok := last.(*ast.Heading); ok && h.Pos() >= end {
		return nil
	}
	for b := last; b != nil; b = b.PreviousSibling() {
		if b.Pos() >= 0 && b.Pos() < end {
			kind := probOpenHTML
			if _, fence := b.(*ast.FencedCodeBlock); fence {
				kind = probOpenFence
			}
			return &textProblem{kind: kind, line: lineAt(b.Pos())}
		}
	}
	return &textProblem{kind: probOpenHTML, line: lineAt(end)}
}

// parseProbed parses text followed by the probe, as a CommonMark
// renderer reads it in the record; end is where the probe starts in src.
func parseProbed(text []byte) (src []byte, end int, doc ast.Node) {
	src = make([]byte, 0, len(text)+1+len(probeTail))
	src = append(src, text...)
	if len(src) > 0 && src[len(src)-1] != '\n' {
		src = append(src, '\n')
	}
	end = len(src)
	src = append(src, probeTail...)
	return src, end, commonMark().Parser().Parse(gmtext.NewReader(src))
}

// renderedText is a heading's text as a viewer shows it: rendered to
// HTML, tags removed, entities decoded, white space collapsed. The default renderer writes raw
// HTML as a comment without '>' inside, so stripping tags is exact.
func renderedText(md goldmark.Markdown, src []byte, h *ast.Heading) string {
	var b bytes.Buffer
	if err := md.Renderer().Render(&b, src, h); err != nil {
		return ""
	}
	return strings.Join(strings.Fields(html.UnescapeString(tagRe.ReplaceAllString(b.String(), ""))), " ")
}

var (
	tagRe        = regexp.MustCompile(`<[^>]*>`)
	rawHeadingRe = regexp.MustCompile(`(?i)<h[1-6][\s/>]`)
	entryLikeRe  = regexp.MustCompile(`^(?:turn ?[0-9]|supervisor)`)
)

// entryLike reports whether a heading's text reads as an entry heading,
// "Turn N …" or "Supervisor …", whatever its case, spacing, emphasis or
// leading punctuation, and with invisible characters removed.
func entryLike(s string) bool {
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r):
			return -1
		case unicode.IsSpace(r):
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimLeftFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return entryLikeRe.MatchString(s)
}

// span is where segs start and stop in the source.
func span(segs *gmtext.Segments) (start, stop int) {
	if segs.Len() == 0 {
		return 0, 0
	}
	return segs.At(0).Start, segs.At(segs.Len() - 1).Stop
}

// rawHeading finds a raw HTML heading tag (<h1> to <h6>) in
// src[start:stop]: viewers show those as headings, and markdown headings
// serve any honest purpose.
func rawHeading(src []byte, start, stop int, lineAt func(int) int) *textProblem {
	if start >= stop {
		return nil
	}
	loc := rawHeadingRe.FindIndex(src[start:stop])
	if loc == nil {
		return nil
	}
	t := src[start+loc[0] : stop]
	if i := bytes.IndexByte(t, '\n'); i >= 0 {
		t = t[:i]
	}
	return &textProblem{kind: probRawHeading, line: lineAt(start + loc[0]), text: clip(bytes.TrimSpace(t))}
}

// controlName names a control character for a person.
func controlName(r rune) string {
	names := map[rune]string{0: "NUL", 7: "BEL", 8: "backspace", 0x0b: "vertical tab", 0x0c: "form feed", 0x1b: "ESC", 0x7f: "DEL"}
	if n, ok := names[r]; ok {
		return fmt.Sprintf("U+%04X (%s)", r, n)
	}
	return fmt.Sprintf("U+%04X", r)
}

// checkBriefingText applies the entry text rules to a briefing: a line
// that reads as an entry heading would end the header there, and one that
// renders as one, or a block left open, misleads every reader of the
// record.
func checkBriefingText(file string, brief []byte) error {
	if !utf8.Valid(brief) {
		return &InputError{File: file, Msg: "the briefing is not UTF-8", Fix: "save the briefing as UTF-8"}
	}
	if len(brief) > MaxBriefingBytes {
		return &InputError{File: file, Msg: fmt.Sprintf("the briefing is %d bytes, over the limit of %d", len(brief), MaxBriefingBytes),
			Fix: "shorten it: every agent reads it every turn, and 300-400 words is the aim"}
	}
	p := checkText(brief)
	if p == nil {
		return nil
	}
	msg := fmt.Sprintf("line %d of the briefing %s", p.line, p.describe(0))
	if p.kind == probHeadingLine || p.kind == probMarker {
		msg = fmt.Sprintf("line %d of the briefing reads as an entry heading or a walkie marker: %q", p.line, clip([]byte(p.text)))
	}
	return &InputError{File: file, Msg: msg, Fix: "reword that line: entry headings and markers are walkie's (docs/format.md)"}
}

// MaxBriefingBytes bounds a briefing: it is read whole by every agent
// every turn, and walkie reads the record's head (front matter, briefing,
// first entry) in one piece before every post.
const MaxBriefingBytes = 256 << 10

// postReason words a problem for a refused post; line is in the body.
func (p *textProblem) postReason() string {
	switch p.kind {
	case probHeadingLine:
		return fmt.Sprintf("body line %d is an entry heading (%q); walkie writes the heading itself", p.line, p.text)
	case probMarker:
		return fmt.Sprintf("body line %d holds a walkie marker; only walkie writes markers", p.line)
	}
	return fmt.Sprintf("body line %d %s", p.line, p.describe(0))
}

// turnDetail words a problem for a rejected turn; line is the problem's
// line in the file.
func (p *textProblem) turnDetail(line int) string {
	switch p.kind {
	case probHeadingLine:
		return fmt.Sprintf("a second heading %q: exactly one turn was expected", clip([]byte(p.text)))
	case probMarker:
		return "the turn contains a walkie marker; only walkie writes markers"
	}
	return fmt.Sprintf("line %d %s", line, p.describe(line-p.line))
}

// describe words the problem; offset turns the lines it names besides
// its own (from) into the caller's count.
func (p *textProblem) describe(offset int) string {
	switch p.kind {
	case probControl:
		return fmt.Sprintf("holds the control character %s at column %d; only tab and newline are allowed (git would treat the record as binary)", controlName(p.b), p.col)
	case probLoneCR:
		return fmt.Sprintf("holds a carriage return not followed by a newline at column %d; end lines with \\n (or \\r\\n)", p.col)
	case probRendered:
		return fmt.Sprintf("renders as the heading %q in a markdown viewer, which reads as an entry heading; reword it, or indent it by 4 spaces to show it as code", clip([]byte(p.text)))
	case probRawHeading:
		return fmt.Sprintf("holds a raw HTML heading (%s); use a markdown heading that does not read as an entry heading", p.text)
	case probOpenFence:
		return "opens a code fence that is never closed: it would swallow the marker and every later entry; close it"
	case probOpenHTML:
		return "opens an HTML block that is never closed: it would swallow the marker and every later entry; close it"
	case probHiddenSignOff:
		where := p.text
		if p.from > 0 {
			where = fmt.Sprintf(p.text, p.from+offset)
		}
		return fmt.Sprintf("is a sign-off that a markdown viewer does not show: it is inside %s; end the turn with the sign-off as plain text after a blank line, outside comments, code and HTML", where)
	case probShownSignOff:
		return fmt.Sprintf("shows as the sign-off %q in a markdown viewer, but a sign-off is the last line written exactly `Signed-off-by: NAME`; write it so, or reword it", clip([]byte(p.text)))
	}
	return "cannot stand in the record"
}
