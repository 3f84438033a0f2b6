// Package mdsafe puts text walkie did not write into markdown that a
// platform renders (the pull-request comment and job summary of walkie
// review, the briefing it generates), so that the text shows as what it
// is and as nothing else: no heading, list, quote or table of its own, no
// HTML or comment, no link or image, no mention or issue reference, no
// code span it can break out of.
//
// Text is the one escaper; Quote shows several lines of someone else's
// words through it, and Fenced shows code. The choice, against CommonMark
// 0.31 and GitHub Flavored Markdown:
//
//   - Every character that can start or end markup is backslash-escaped.
//     CommonMark lets any ASCII punctuation be escaped, and an escaped
//     character is always literal text; GFM tables honour `\|` in a cell.
//     This works in every inline position (a paragraph, a heading, a table
//     cell, link text, a quote) with no rule that depends on where the
//     text lands. A code span instead would show `|` as a cell break in a
//     table, cannot hold an escape, and needs padding rules at its ends.
//   - Characters that only matter at the start of a line (`-`, `+`, `=`,
//     an ordered list's `1.`) are escaped there; "_" between two letters
//     or digits cannot open or close emphasis and is kept, so ordinary
//     paths and names read as they are in the markdown source too.
//   - Line breaks and runs of white space fold to one space: a newline
//     would end the line the text stands in and start a block of its own.
//   - GitHub links mentions (@name, @org/team), issue references (#12) and
//     bare addresses (https://…, www.…) in text after rendering, where no
//     escape reaches. An invisible word joiner (U+2060) after "@", "#",
//     "://"'s colon and "www" breaks each of them.
//   - Control characters and the bidirectional controls that reorder how
//     text reads on screen become U+FFFD.
package mdsafe

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// joiner is U+2060 WORD JOINER: invisible, and no word character.
const joiner = '\u2060'

// escaped are the characters escaped wherever they stand.
const escaped = "\\`*_[]<>&|~!$#"

// atStart are the characters escaped only as the first of the text.
const atStart = "-+="

// Text returns markdown that renders as s, on one line, as plain text.
func Text(s string) string {
	r := []rune(fold(s))
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	digits := true // the text so far is a run of digits: "1." would be a list
	for i, c := range r {
		switch {
		case c == '_' && i > 0 && i+1 < len(r) && isAlnum(r[i-1]) && isAlnum(r[i+1]):
			b.WriteRune(c)
		case strings.ContainsRune(escaped, c),
			i == 0 && strings.ContainsRune(atStart, c),
			i > 0 && digits && (c == '.' || c == ')'):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
		digits = digits && c >= '0' && c <= '9'
		if breaksLink(r, i) {
			b.WriteRune(joiner)
		}
	}
	return b.String()
}

// Quote returns s as a block quote of its lines, each line through Text
// and ending where it ended; runs of blank lines become one. It ends with
// a newline; an s of nothing but white space gives "".
func Quote(s string) string {
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s)
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		t := Text(l)
		switch {
		case t != "":
			lines = append(lines, t)
		case len(lines) > 0 && lines[len(lines)-1] != "":
			lines = append(lines, "")
		}
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for i, l := range lines {
		switch {
		case l == "":
			b.WriteString(">\n")
		case i+1 < len(lines) && lines[i+1] != "":
			// A hard break, so the next line stays a line. Two spaces, not
			// a backslash, which goldmark reads with an escaped one before
			// it as two.
			b.WriteString("> " + l + "  \n")
		default:
			b.WriteString("> " + l + "\n")
		}
	}
	return b.String()
}

// Fenced returns text as a fenced code block that nothing in it can
// close: its fence is a run of backticks longer than any in the text.
// lang is the block's info string, walkie's own ("sh", "diff").
func Fenced(lang, text string) string {
	text = strings.ToValidUTF8(strings.ReplaceAll(text, "\r\n", "\n"), "\uFFFD")
	text = strings.Map(func(c rune) rune {
		if c != '\n' && c != '\t' && (unicode.IsControl(c) || isBidi(c)) {
			return '\uFFFD'
		}
		return c
	}, text)
	f := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f + "\n"
}

// fold makes s one line of valid UTF-8 without controls, white space
// runs as single spaces and none at the ends.
func fold(s string) string {
	s = strings.Map(func(c rune) rune {
		switch {
		case unicode.IsSpace(c):
			return ' '
		case unicode.IsControl(c), isBidi(c), c == utf8.RuneError:
			return '\uFFFD'
		}
		return c
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return strings.Join(strings.Fields(s), " ")
}

// breaksLink reports whether a word joiner goes after r[i]: after "@"
// and "#" (a mention, an issue reference, an e-mail address), after the
// colon of "://" and after "www" before "." (GFM's bare links).
func breaksLink(r []rune, i int) bool {
	switch r[i] {
	case '@', '#':
		return true
	case ':':
		return i+2 < len(r) && r[i+1] == '/' && r[i+2] == '/'
	case 'w', 'W':
		return i >= 2 && i+1 < len(r) && r[i+1] == '.' && strings.EqualFold(string(r[i-2:i+1]), "www")
	}
	return false
}

func isAlnum(c rune) bool { return c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c)) }

// isBidi reports the characters that change the order text shows in:
// the embeddings, overrides and isolates, and the marks.
func isBidi(c rune) bool {
	return c == '\u061c' || c == '\u200e' || c == '\u200f' || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069')
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c rune) int {
	longest, n := 0, 0
	for _, r := range s {
		if r == c {
			n++
			longest = max(longest, n)
		} else {
			n = 0
		}
	}
	return longest
}
