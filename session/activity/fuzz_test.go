package activity

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/session/usage"
)

var kinds = []string{usage.ClaudeJSON, usage.CodexJSONL, usage.GeminiJSON, "none"}

// FuzzFeed checks what must hold for any output: no panic; memory
// bounded; an answer that does not depend on where the output was split
// or on "\r\n" line ends; a one-line activity of bounded length; and
// never a raw JSON line shown as plain output.
func FuzzFeed(f *testing.F) {
	for _, name := range []string{sessions + "claude-turn.txt", sessions + "claude-500.txt", sessions + "codex-turn.txt",
		sessions + "codex-500.txt", sessions + "gemini-turn.txt", sessions + "gemini-500.txt"} {
		b := read(f, name)
		for k := range kinds {
			f.Add(uint8(k), b, uint16(len(b)/2))
		}
	}
	f.Add(uint8(0), []byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Read","input":{"file_path":"a\nb"}}]}}`), uint16(40))
	f.Add(uint8(3), []byte("\x1b[31mred\x1b[0m\r⠋ {\"a\":1}\r\n"), uint16(3))
	f.Fuzz(func(t *testing.T, k uint8, data []byte, split uint16) {
		kind := kinds[int(k)%len(kinds)]
		whole := New(kind)
		a, _ := whole.Feed(data)
		if cap(whole.cur) > 2*maxLine || cap(whole.buf) > 2*feedStep || cap(whole.last) > 2*maxTarget*utf8.UTFMax {
			t.Fatalf("kept %d, %d and %d bytes", cap(whole.cur), cap(whole.buf), cap(whole.last))
		}
		s := int(split) % (len(data) + 1)
		parts := New(kind)
		parts.Feed(data[:s])
		b, _ := parts.Feed(data[s:])
		if a != b {
			t.Fatalf("split at %d: %+v, whole: %+v", s, b, a)
		}
		if !bytes.Contains(data, []byte("\r")) {
			crlf, _ := New(kind).Feed(bytes.ReplaceAll(data, []byte("\n"), []byte("\r\n")))
			if crlf != a {
				t.Fatalf("\\r\\n line ends: %+v, \\n: %+v", crlf, a)
			}
		}
		str := a.String()
		if strings.ContainsAny(str, "\r\n") || utf8.RuneCountInString(a.Target) > maxTarget {
			t.Fatalf("not one short line: %q", str)
		}
		if a.Kind == Output && (strings.HasPrefix(a.Target, "{") || kind != "none") {
			t.Fatalf("%s showed a plain line %q", kind, a.Target)
		}
		if (a.Kind == "") != (str == "") {
			t.Fatalf("activity %+v reads %q", a, str)
		}
	})
}

// A session that prints megabytes without a line break keeps a tracker's
// memory where it was.
func TestMemoryIsBounded(t *testing.T) {
	for _, kind := range kinds {
		tr := New(kind)
		chunk := bytes.Repeat([]byte(`{"type":"x","v":"`), 2000)
		for range 200 { // 6.8 MB
			tr.Feed(chunk)
		}
		if cap(tr.cur) > 2*maxLine || cap(tr.buf) > 2*feedStep {
			t.Errorf("%s: kept %d and %d bytes", kind, cap(tr.cur), cap(tr.buf))
		}
	}
}

// BenchmarkFeed measures a real turn's events and the worst line a
// tracker keeps: 64 KiB of nesting, which once cost seconds.
func BenchmarkFeed(b *testing.B) {
	turn := inPty(read(b, sessions+"claude-turn.txt"))
	deep := []byte(strings.Repeat(`{"a":[`, maxLine/6) + "\n")
	for name, data := range map[string][]byte{"turn": turn, "deep": deep} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				New(usage.ClaudeJSON).Feed(data)
			}
		})
	}
}
