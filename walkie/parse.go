package walkie

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says who wrote an entry.
type Kind int

const (
	// KindTurn is a participant's turn, headed `## Turn N · AGENT`.
	KindTurn Kind = iota + 1
	// KindSupervisor is a person's note, headed `## Supervisor`; it takes no turn.
	KindSupervisor
)

// Marker is the controller's stamp closing an entry.
type Marker struct {
	Seq   int
	Turn  int // 0 for supervisor entries
	Agent string
	At    time.Time
	Prev  string // chain hash before this entry, "sha256:HEX"
	Hash  string // chain hash after this entry, "sha256:HEX"
	// Short is a compact marker's h= (format 4): the first 128 bits of
	// Hash as the line records them. A format-4 line holds only seq, at
	// and h; Parse fills in the other fields from the entry and the chain.
	Short string `json:",omitempty"`
	// Tags are the entry's type, verdict and refs (format 3): fields of
	// the marker, so the chain covers them.
	Tags Tags `json:",omitzero"`
}

// Entry is one stamped entry of the record.
type Entry struct {
	Kind     Kind
	Turn     int    // turn number from the heading (turns only)
	Agent    string // author from the heading; SupervisorName for supervisor entries
	Body     []byte // bytes between the heading line and the marker line
	SignedBy string // name on a closing `Signed-off-by:` line, if any
	Marker   Marker
	Raw      []byte // the entry's bytes: leading blank lines through the marker line's newline
	Offset   int64  // file offset of Raw
	Line     int    // line of the heading
	MarkLine int    // line of the marker
}

// Signed reports whether the entry closes with its own author's sign-off.
func (e *Entry) Signed() bool { return e.Kind == KindTurn && e.SignedBy == e.Agent }

// Doc is a parsed walkie file. Rendering it gives back the input bytes.
type Doc struct {
	File         string
	Meta         Meta
	Header       []byte // front matter and briefing, through the last non-blank line before the first entry
	Briefing     []byte // the text under `# Briefing`, as hashed for approval
	BriefingLine int
	Entries      []Entry
	Tail         []byte // bytes after the last marker: blank, an unstamped turn, or a torn write
	TailOffset   int64
	TailLine     int
}

var (
	turnHeadingRe  = regexp.MustCompile(`^## Turn ([1-9][0-9]{0,8}) · (\S+)$`)
	superHeadingRe = regexp.MustCompile(`^## Supervisor$`)
	looseHeadingRe = regexp.MustCompile(`^#{1,6}\s*(Turn\s+\d+|Supervisor\b)`)
	markerRe       = regexp.MustCompile(`^<!-- walkie (.*) -->$`)
	looseMarkerRe  = regexp.MustCompile(`<!--\s*walkie\b`)
)

const briefingHeading = "# Briefing"

// isMarker and isHeading are markerRe and the heading patterns with a
// cheap test first: a long record has tens of thousands of lines, and
// running the regexps on every one of them was most of the cost of
// parsing. isMarker is exactly markerRe: "<!-- walkie ", anything
// without a newline, " -->".
func isMarker(b []byte) bool {
	return len(b) >= len("<!-- walkie ")+len(" -->") && bytes.HasPrefix(b, []byte("<!-- walkie ")) &&
		bytes.HasSuffix(b, []byte(" -->")) && bytes.IndexByte(b, '\n') < 0
}

func isHeading(b []byte) bool {
	return bytes.HasPrefix(b, []byte("## ")) && (turnHeadingRe.Match(b) || superHeadingRe.Match(b))
}

// line is one line of the input with its position.
type line struct {
	text  []byte // without the newline (and without a trailing \r for matching)
	start int    // offset of the first byte
	end   int    // offset after the newline (or EOF)
	num   int    // 1-based
}

func splitLines(data []byte, base int, firstNum int) []line {
	out := make([]line, 0, bytes.Count(data, []byte("\n"))+1)
	for off, n := 0, firstNum; off < len(data); n++ {
		i := bytes.IndexByte(data[off:], '\n')
		end := len(data)
		if i >= 0 {
			end = off + i + 1
		}
		t := bytes.TrimSuffix(bytes.TrimSuffix(data[off:end], []byte("\n")), []byte("\r"))
		out = append(out, line{text: t, start: base + off, end: base + end, num: n})
		off = end
	}
	return out
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// Parse reads a walkie file. It checks structure, not the chain: see Verify.
func Parse(file string, data []byte) (*Doc, error) {
	whole := data
	if !utf8.Valid(data) {
		// A write cut short can end inside a character: those last bytes
		// belong to a torn tail, which Verify reports, not to bad input.
		cut := partialRune(data)
		if cut == 0 || !utf8.Valid(data[:len(data)-cut]) {
			return nil, notUTF8(file, data)
		}
		data = data[:len(data)-cut]
	}
	d := &Doc{File: file}
	fmEnd, err := d.parseFrontMatter(data)
	if err != nil {
		return nil, err
	}
	lines := splitLines(data[fmEnd:], fmEnd, bytes.Count(data[:fmEnd], []byte("\n"))+1)
	lastMarker := -1
	for i, l := range lines {
		if isMarker(l.text) {
			lastMarker = i
		}
	}
	// The header runs to the first entry heading (or the end); its trailing
	// blank lines belong to the first entry, so appending never changes it.
	first := len(lines)
	for i, l := range lines {
		if isHeading(l.text) || isMarker(l.text) {
			first = i
			break
		}
	}
	if lastMarker >= 0 && lastMarker < first {
		first = lastMarker
	}
	hdrEnd := fmEnd
	for i := first - 1; i >= 0; i-- {
		if !isBlank(lines[i].text) {
			hdrEnd = lines[i].end
			break
		}
	}
	d.Header = data[:hdrEnd]
	if err := d.parseBriefing(lines, hdrEnd); err != nil {
		return nil, err
	}
	stampedEnd := hdrEnd
	if lastMarker >= 0 {
		stampedEnd = lines[lastMarker].end
		if err := d.parseEntries(data, lines, hdrEnd, lastMarker); err != nil {
			return nil, err
		}
	}
	if d.Meta.Walkie >= FormatCompact {
		d.linkCompact()
	}
	d.Tail = whole[stampedEnd:]
	d.TailOffset = int64(stampedEnd)
	d.TailLine = bytes.Count(data[:stampedEnd], []byte("\n")) + 1
	return d, nil
}

// partialRune is the length of an incomplete UTF-8 sequence ending data,
// or 0.
func partialRune(data []byte) int {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return len(data) - i
			}
			return 0
		}
	}
	return 0
}

func notUTF8(file string, data []byte) error {
	off := 0
	for off < len(data) {
		r, size := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	return &InputError{File: file, Line: bytes.Count(data[:off], []byte("\n")) + 1,
		Msg: fmt.Sprintf("not UTF-8 (invalid byte 0x%02x at offset %d)", data[off], off), Fix: "save the file as UTF-8"}
}

// parseFrontMatter reads the --- fenced YAML at the top and returns the
// offset just after the closing fence.
func (d *Doc) parseFrontMatter(data []byte) (int, error) {
	if !bytes.HasPrefix(data, []byte("---\n")) {
		return 0, &InputError{File: d.File, Line: 1, Msg: "missing front matter: the file must start with a `---` line",
			Fix: "create debates with `walkie init`, or add the YAML front matter shown in docs/format.md"}
	}
	body := data[4:]
	end := -1
	if bytes.HasPrefix(body, []byte("---\n")) {
		end = 0
	} else if i := bytes.Index(body, []byte("\n---\n")); i >= 0 {
		end = i + 1
	} else if bytes.HasSuffix(body, []byte("\n---")) {
		end = len(body) - 3
	}
	if end < 0 {
		return 0, &InputError{File: d.File, Line: 1, Msg: "front matter is not closed", Fix: "end it with a line holding only `---`"}
	}
	m, err := parseMeta(d.File, body[:end], 2)
	if err != nil {
		return 0, err
	}
	d.Meta = m
	fmEnd := 4 + end + 4
	if fmEnd > len(data) {
		fmEnd = len(data)
	}
	return fmEnd, nil
}

func (d *Doc) parseBriefing(lines []line, hdrEnd int) error {
	for _, l := range lines {
		if l.start >= hdrEnd {
			break
		}
		if isBlank(l.text) {
			continue
		}
		if string(l.text) != briefingHeading {
			return &InputError{File: d.File, Line: l.num, Msg: fmt.Sprintf("expected %q after the front matter, found %q", briefingHeading, clip(l.text)),
				Fix: "start the body with a `# Briefing` line"}
		}
		d.BriefingLine = l.num
		d.Briefing = BriefingText(d.Header[l.end:])
		return nil
	}
	line := bytes.Count(d.Header, []byte("\n")) + 1 // just after the front matter
	if len(lines) > 0 {
		line = lines[0].num
	}
	return &InputError{File: d.File, Line: line, Msg: "no `# Briefing` section", Fix: "add a `# Briefing` line and the briefing under it (walkie brief draft FILE)"}
}

// BriefingText normalises the text under `# Briefing` for hashing: outer
// blank lines removed, lines ending in "\n".
func BriefingText(b []byte) []byte {
	t := bytes.Trim(b, "\r\n \t")
	if len(t) == 0 {
		return nil
	}
	return append(append([]byte(nil), t...), '\n')
}

func (d *Doc) parseEntries(data []byte, lines []line, hdrEnd, lastMarker int) error {
	i := 0
	for i < len(lines) && lines[i].end <= hdrEnd {
		i++
	}
	for i <= lastMarker {
		start := lines[i].start
		for i <= lastMarker && isBlank(lines[i].text) {
			i++
		}
		h := lines[i]
		e := Entry{Offset: int64(start), Line: h.num}
		if m := turnHeadingRe.FindSubmatch(h.text); m != nil {
			e.Kind, e.Agent = KindTurn, string(m[2])
			e.Turn, _ = strconv.Atoi(string(m[1]))
		} else if superHeadingRe.Match(h.text) {
			e.Kind, e.Agent = KindSupervisor, SupervisorName
		} else {
			return &InputError{File: d.File, Line: h.num, Msg: fmt.Sprintf("expected an entry heading (`## Turn N · AGENT` or `## Supervisor`), found %q", clip(h.text)),
				Fix: "the record was edited by hand: restore it from git or the agent's copy under .walkie/"}
		}
		j := i + 1
		for ; j <= lastMarker && !isMarker(lines[j].text); j++ {
			if isHeading(lines[j].text) {
				return &InputError{File: d.File, Line: h.num, Msg: "entry has no marker line before the next heading",
					Fix: "the record was edited by hand: restore it from git"}
			}
		}
		mk, err := parseMarker(lines[j].text, d.Meta.Walkie)
		if err != nil {
			return &InputError{File: d.File, Line: lines[j].num, Msg: "bad marker line: " + err.Error(), Fix: "markers are written by walkie only; restore the line from git", marker: true}
		}
		if !mk.Tags.IsZero() && d.Meta.Walkie < FormatTyped {
			return &InputError{File: d.File, Line: lines[j].num, Msg: fmt.Sprintf("the marker records a type or refs, which need format %d, and this file says walkie: %d", FormatTyped, d.Meta.Walkie),
				Fix: "markers are written by walkie only; restore the line from git"}
		}
		e.Marker, e.MarkLine = mk, lines[j].num
		e.Body = data[h.end:lines[j].start]
		e.Raw = data[start:lines[j].end]
		if e.Kind == KindTurn {
			_, e.SignedBy = SplitSignOff(e.Body)
		}
		d.Entries = append(d.Entries, e)
		i = j + 1
	}
	return nil
}

// parseMarker reads a marker line of a file of the given format: the
// compact line of format 4, or the whole one of formats 1 to 3. A line of
// the other shape is named as such.
func parseMarker(text []byte, format int) (Marker, error) {
	if !isMarker(text) {
		return Marker{}, fmt.Errorf("not a marker")
	}
	fields := strings.Fields(string(text[len("<!-- walkie ") : len(text)-len(" -->")]))
	compact := len(fields) > 0 && strings.HasPrefix(fields[len(fields)-1], "h=")
	switch {
	case format >= FormatCompact && !compact:
		return Marker{}, fmt.Errorf("the whole marker of formats 1 to 3 in a file that says walkie: %d, whose markers are compact (seq=, at=, h=)", format)
	case format < FormatCompact && compact:
		return Marker{}, fmt.Errorf("a compact marker (format %d) in a file that says walkie: %d", FormatCompact, format)
	case compact:
		return parseCompactMarker(text, fields)
	}
	var mk Marker
	seen := map[string]bool{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || seen[k] {
			return mk, fmt.Errorf("field %q", f)
		}
		seen[k] = true
		var err error
		switch k {
		case "seq":
			mk.Seq, err = strconv.Atoi(v)
		case "turn":
			mk.Turn, err = strconv.Atoi(v)
		case "agent":
			mk.Agent = v
		case "at":
			mk.At, err = time.Parse(time.RFC3339Nano, v)
		case "prev":
			mk.Prev = v
		case "hash":
			mk.Hash = v
		case "type", "verdict", "refs":
			err = mk.Tags.setMarkerField(k, v)
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			return mk, fmt.Errorf("field %q: %w", f, err)
		}
	}
	for _, k := range []string{"seq", "agent", "at", "prev", "hash"} {
		if !seen[k] {
			return mk, fmt.Errorf("missing %s=", k)
		}
	}
	if err := checkTagValues(mk.Tags); err != nil {
		return mk, err
	}
	return mk, nil
}

// Render gives back the bytes the document was parsed from.
func (d *Doc) Render() []byte {
	var b bytes.Buffer
	b.Write(d.Header)
	for _, e := range d.Entries {
		b.Write(e.Raw)
	}
	b.Write(d.Tail)
	return b.Bytes()
}

func clip(b []byte) string { return Clip(string(b), 61) }

// Clip shortens s to at most n runes, the last of them "…" when it was
// cut: for a line of agent text in a message, a log or a status line.
func Clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(n-1, 0)]) + "…"
}
