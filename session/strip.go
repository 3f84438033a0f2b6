package session

import (
	"bufio"
	"bytes"
)

// The plain-text transcript and the prompt rules both read the pty output
// with terminal control sequences removed, from a stream a read boundary
// may cut anywhere, a sequence included. charmbracelet/x/ansi's parser
// handles such a stream too; this stripper stays because the session only
// needs to know which bytes are visible, and it reads every byte of every
// session: one state byte, no allocation, no callback per byte. It is a
// small state machine after the same DEC/ECMA-48 parser model, reduced to
// that question, and its tests check strip(a+b) == strip(a)+strip(b) for
// every split.

// stripState is where the stripper stands inside a control sequence.
type stripState uint8

const (
	sGround    stripState = iota // plain text
	sEsc                         // after ESC
	sEscInter                    // ESC + intermediates (e.g. "ESC ( B"), waiting for the final byte
	sCSI                         // after ESC [ : parameters and intermediates until a final byte
	sString                      // OSC/DCS/SOS/PM/APC body, ended by ST (or BEL for OSC)
	sStringEsc                   // ESC seen inside a string: "\" ends it
)

// stripper removes ANSI/VT escape sequences from a byte stream. Its zero
// value is ready; it keeps only its state between calls, so memory is
// constant and strip(a+b) == strip(a)+strip(b) for any split.
type stripper struct {
	state stripState
}

// strip appends the visible bytes of p to dst. Visible means printable
// bytes (including UTF-8, passed through untouched), '\t', '\n' and '\r';
// other C0 controls (BEL, BS, …) and DEL are dropped.
func (s *stripper) strip(dst, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch s.state {
		case sGround:
			// Fast path: copy the run of ordinary bytes in one append.
			j := i
			for j < len(p) && p[j] >= 0x20 && p[j] != 0x7f {
				j++
			}
			dst = append(dst, p[i:j]...)
			if j == len(p) {
				return dst
			}
			i = j
			b = p[i]
			switch b {
			case 0x1b:
				s.state = sEsc
			case '\t', '\n', '\r':
				dst = append(dst, b)
			}
		case sEsc:
			switch {
			case b == '[':
				s.state = sCSI
			case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
				s.state = sString
			case b == 0x1b:
				// ESC ESC: the first one is abandoned, a new sequence starts.
			case b == 0x18 || b == 0x1a: // CAN, SUB abort a sequence
				s.state = sGround
			case b >= 0x20 && b <= 0x2f:
				s.state = sEscInter
			case b < 0x20:
				// A C0 control inside a sequence is executed by a terminal;
				// keep the line structure it carries.
				dst = s.control(dst, b)
			default:
				s.state = sGround // two-byte sequence such as ESC 7, ESC =, ESC M
			}
		case sEscInter:
			switch {
			case b >= 0x20 && b <= 0x2f:
			case b == 0x1b:
				s.state = sEsc
			case b < 0x20:
				dst = s.control(dst, b)
			default:
				s.state = sGround
			}
		case sCSI:
			switch {
			case b >= 0x20 && b <= 0x3f: // parameters and intermediates
			case b >= 0x40 && b <= 0x7e: // final byte
				s.state = sGround
			case b == 0x1b:
				s.state = sEsc
			case b < 0x20:
				dst = s.control(dst, b)
			default: // DEL or a byte >= 0x80: malformed, give up on the sequence
				s.state = sGround
			}
		case sString:
			// The body of an OSC (window title, hyperlink target, …) is never
			// shown, so it is skipped without being buffered.
			switch b {
			case 0x07: // BEL ends an OSC (xterm)
				s.state = sGround
			case 0x1b:
				s.state = sStringEsc
			case 0x18, 0x1a:
				s.state = sGround
			}
		case sStringEsc:
			switch b {
			case '\\':
				s.state = sGround
			case 0x1b:
			default:
				// Not ST: treat it as the start of a new sequence, as a
				// terminal would after abandoning the string.
				s.state = sEsc
				i--
			}
		}
	}
	return dst
}

// control handles a C0 control byte met inside a sequence: CAN/SUB abort the
// sequence, line structure is kept, the rest is dropped.
func (s *stripper) control(dst []byte, b byte) []byte {
	switch b {
	case 0x18, 0x1a:
		s.state = sGround
	case '\t', '\n', '\r':
		dst = append(dst, b)
	}
	return dst
}

// maxLine bounds the line the text transcript holds back while it waits to
// learn whether a carriage return will overwrite it.
const maxLine = 64 << 10

// textFolder turns stripped output into plain text. For the transcript it
// folds "\r\n" (and "\r\r\n", which a tty's ONLCR can produce) into "\n" and
// treats a lone "\r" followed by more text as a redraw of the line: spinners
// and progress bars leave only their last frame, not thousands of lines. For
// the prompt rules it produces the same text unbuffered, with a lone "\r"
// read as a line break, so a prompt without a trailing newline is seen at
// once.
type textFolder struct {
	cr   bool          // a '\r' was seen and not yet resolved
	line []byte        // the current transcript line, not yet written
	out  *bufio.Writer // nil: no text transcript
}

// fold appends the rule-matching form of p to norm and writes finished
// transcript lines to t.out. It works on runs between line-control bytes,
// not byte by byte: this is the hot path of a flood of output.
func (t *textFolder) fold(norm, p []byte) []byte {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if j := bytes.IndexByte(seg, '\r'); j >= 0 {
			i, seg = j, seg[:j]
		}
		if len(seg) > 0 {
			if t.cr {
				t.cr = false
				t.line = t.line[:0] // redrawn: the new frame replaces the old one
				norm = append(norm, '\n')
			}
			if t.out != nil {
				t.line = append(t.line, seg...)
				if len(t.line) >= maxLine {
					t.flush()
				}
			}
			norm = append(norm, seg...)
		}
		if i < 0 {
			break
		}
		if p[i] == '\r' {
			t.cr = true
		} else {
			t.cr = false
			if t.out != nil {
				t.line = append(t.line, '\n')
				t.flush()
			}
			norm = append(norm, '\n')
		}
		p = p[i+1:]
	}
	return norm
}

func (t *textFolder) flush() {
	if t.out != nil && len(t.line) > 0 {
		// Write errors surface from the final Flush of the bufio.Writer.
		_, _ = t.out.Write(t.line)
	}
	t.line = t.line[:0]
}

// close writes the last, unterminated line: the final frame of a redraw is
// what the screen showed when the process ended.
func (t *textFolder) close() {
	t.flush()
}
