package engine

import (
	"strings"
	"testing"
)

func TestLineTracker(t *testing.T) {
	var l lineTracker
	steps := []struct {
		chunk, want string
		changed     bool
	}{
		{"\x1b[32mReading the file", "Reading the file", true},
		{"…\r\n", "Reading the file…", true},
		{"\x1b[2K", "Reading the file…", false}, // an escape alone: nothing new
		{"\r⠋ thinking", "⠋ thinking", true},    // a spinner redraws the line
		{"\r⠙ thinking", "⠙ thinking", true},
		{"\r           \r", "⠙ thinking", false}, // cleared: the last line with text stays
		{"done\n\n\n", "done", true},
		{strings.Repeat("x", 2000), strings.Repeat("x", maxLine), true},
	}
	for i, s := range steps {
		got, changed := l.feed([]byte(s.chunk))
		if got != s.want || changed != s.changed {
			t.Errorf("step %d (%q): got %q changed=%v, want %q changed=%v", i, s.chunk, got, changed, s.want, s.changed)
		}
	}
}
