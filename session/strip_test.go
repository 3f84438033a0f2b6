package session

import (
	"bufio"
	"bytes"
	"regexp"
	"strings"
	"testing"
)

func stripAll(p []byte) []byte {
	var s stripper
	return s.strip(nil, p)
}

func TestStrip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "hello, world\n", "hello, world\n"},
		{"utf8 untouched", "Not logged in · Please run /login ⠋ é", "Not logged in · Please run /login ⠋ é"},
		{"sgr", "\x1b[1;31mred\x1b[0m plain", "red plain"},
		{"csi private", "\x1b[?25l\x1b[?2004hx\x1b[?25h", "x"},
		{"erase and move", "a\x1b[2K\x1b[1G\x1b[3Ab", "ab"},
		{"osc bel", "\x1b]0;title\x07text", "text"},
		{"osc st", "\x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"dcs", "\x1bPq#0;2;0;0;0\x1b\\after", "after"},
		{"apc", "\x1b_Gf=100;AAAA\x1b\\after", "after"},
		{"charset", "\x1b(Bx\x1b)0y", "xy"},
		{"two byte", "\x1b7saved\x1b8\x1b=\x1b>", "saved"},
		{"controls dropped", "a\x07b\x08c\x00d\x7fe", "abcde"},
		{"tab cr lf kept", "a\tb\r\nc", "a\tb\r\nc"},
		{"can aborts", "\x1b[12\x18x", "x"},
		{"esc esc", "\x1b\x1b[31mx", "x"},
		{"lf inside csi kept", "\x1b[1\n;2mx", "\nx"},
		{"string then new sequence", "\x1b]0;t\x1b[31mx", "x"},
		{"dangling esc", "x\x1b", "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(stripAll([]byte(tc.in))); got != tc.want {
				t.Errorf("strip(%q) = %q, want %q", tc.in, got, tc.want)
			}
			// Byte by byte must give the same: reads split sequences anywhere.
			var s stripper
			var got []byte
			for i := range len(tc.in) {
				got = s.strip(got, []byte{tc.in[i]})
			}
			if string(got) != tc.want {
				t.Errorf("byte-wise strip(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzStrip checks the stripper's invariants: no escape survives, the
// output is a subsequence of the input, and any split gives the same
// output as one piece.
func FuzzStrip(f *testing.F) {
	for _, s := range []string{"\x1b[31mred\x1b[0m", "\x1b]0;t\x07x", "\x1bP\x1b\\", "a\r\nb\rc", "⠋ Thinking…"} {
		f.Add([]byte(s), uint(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint) {
		whole := stripAll(in)
		if bytes.IndexByte(whole, 0x1b) >= 0 {
			t.Fatalf("ESC in output %q", whole)
		}
		j := 0
		for _, b := range whole {
			for j < len(in) && in[j] != b {
				j++
			}
			if j == len(in) {
				t.Fatalf("output %q is not a subsequence of %q", whole, in)
			}
			j++
		}
		k := int(cut % uint(len(in)+1))
		var s stripper
		split := s.strip(s.strip(nil, in[:k]), in[k:])
		if !bytes.Equal(split, whole) {
			t.Fatalf("split at %d: %q, whole: %q", k, split, whole)
		}
	})
}

func fold(t *testing.T, chunks ...string) (transcript, norm string) {
	t.Helper()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	f := textFolder{out: w}
	var n []byte
	for _, c := range chunks {
		n = f.fold(n, []byte(c))
	}
	f.close()
	w.Flush()
	return buf.String(), string(n)
}

func TestFold(t *testing.T) {
	tests := []struct {
		name             string
		chunks           []string
		transcript, norm string
	}{
		{"crlf", []string{"a\r\nb\r\n"}, "a\nb\n", "a\nb\n"},
		{"crlf split", []string{"a\r", "\nb"}, "a\nb", "a\nb"},
		{"double cr", []string{"a\r\r\n"}, "a\n", "a\n"},
		{"spinner keeps the last frame", []string{"⠋ x\r⠙ x\r", "done\n"}, "done\n", "⠋ x\n⠙ x\ndone\n"},
		{"unterminated last line kept", []string{"Apply? [y/N] "}, "Apply? [y/N] ", "Apply? [y/N] "},
		{"cr at the very end", []string{"working\r"}, "working", "working"},
		{"lf alone", []string{"\n\n"}, "\n\n", "\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, n := fold(t, tc.chunks...)
			if tr != tc.transcript || n != tc.norm {
				t.Errorf("fold = %q / %q, want %q / %q", tr, n, tc.transcript, tc.norm)
			}
		})
	}
}

func TestFoldLongLineIsBounded(t *testing.T) {
	long := strings.Repeat("x", 3*maxLine+5)
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	f := textFolder{out: w}
	f.fold(nil, []byte(long))
	if len(f.line) >= maxLine {
		t.Errorf("held back %d bytes of one line", len(f.line))
	}
	f.close()
	w.Flush()
	if buf.String() != long {
		t.Errorf("long line not written whole")
	}
}

func TestRules(t *testing.T) {
	login := Rule{Pattern: regexp.MustCompile(`Not logged in`), Outcome: "auth"}
	trust := Rule{Pattern: regexp.MustCompile(`(?m)Do you trust the files in this folder\?\n.*1\. Yes`), Reply: "1\r"}
	tests := []struct {
		name   string
		rules  []Rule
		chunks []string
		fired  []string // matched text, in order, across chunks
	}{
		{"one chunk", []Rule{login}, []string{"x Not logged in · y"}, []string{"Not logged in"}},
		{"split across reads", []Rule{login}, []string{"Not log", "ged in"}, []string{"Not logged in"}},
		{"split over three", []Rule{login}, []string{"No", "t logged", " in"}, []string{"Not logged in"}},
		{"fires once", []Rule{login}, []string{"Not logged in", "Not logged in"}, []string{"Not logged in"}},
		{"multi-line prompt", []Rule{trust}, []string{"Do you trust the files in this folder?\n", "  1. Yes, proceed"}, []string{"Do you trust the files in this folder?\n  1. Yes"}},
		{"no match", []Rule{login}, []string{"logged in fine"}, nil},
		{"nil pattern ignored", []Rule{{Reply: "x"}}, []string{"anything"}, nil},
		{"beyond the window", []Rule{login}, []string{"Not log", strings.Repeat("z", 2*ruleWindow), "ged in"}, nil},
		{"both rules, rule order", []Rule{trust, login}, []string{"Not logged in\nDo you trust the files in this folder?\n1. Yes"}, []string{"Do you trust the files in this folder?\n1. Yes", "Not logged in"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRuleSet(tc.rules)
			var fired []string
			for _, c := range tc.chunks {
				for _, m := range rs.check([]byte(c)) {
					fired = append(fired, m.text)
				}
				if len(rs.tail) > ruleWindow {
					t.Fatalf("window grew to %d", len(rs.tail))
				}
			}
			if strings.Join(fired, "|") != strings.Join(tc.fired, "|") {
				t.Errorf("fired %q, want %q", fired, tc.fired)
			}
		})
	}
}
