// Package activity tells what an agent is doing now from the output of
// its session as it streams in: reading a file, editing one, running a
// command, searching, writing its turn, thinking, answering, or waiting
// on the model. It reads the CLIs' own event streams (claude's
// stream-json, codex's --json JSONL, gemini's stream-json) and, for any
// other command, takes the last meaningful line of its plain output.
//
// It is fed raw pty output, split anywhere, escape sequences and "\r\n"
// included, and keeps a bounded amount of it whatever it is fed. Like
// session/usage it knows each CLI's output shape and nothing of debates;
// a progress display or a live file shows what it reports.
package activity

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/usage"
)

// Kind is what an agent is doing.
type Kind string

// Kinds of activity. The zero Kind means nothing is known yet.
const (
	Waiting   Kind = "waiting"   // the CLI is waiting on the model
	Thinking  Kind = "thinking"  // the model is reasoning
	Answering Kind = "answering" // the model is writing its answer
	Reading   Kind = "reading"   // Target: the file, directory or URL
	Editing   Kind = "editing"   // Target: the file
	Writing   Kind = "writing"   // Target: the file written whole
	Turn      Kind = "turn"      // writing its turn: an edit of, or an append to, a walkie file (Target)
	Running   Kind = "running"   // Target: the command
	Searching Kind = "searching" // Target: the pattern or query
	Tool      Kind = "tool"      // Target: the name of another tool
	Retrying  Kind = "retrying"  // the CLI reported a problem it retries; Target: its message
	Failed    Kind = "failed"    // the CLI reported its run as failed; Target: its message
	Done      Kind = "done"      // the CLI reported its result
	Output    Kind = "output"    // a command without events; Target: its last meaningful line
)

// Activity is what the agent is doing now.
type Activity struct {
	Kind   Kind
	Target string // the file, command, pattern, tool, message or line; "" when none
}

// String is the activity as a person reads it: "reading api.go",
// "running go test ./...", "writing its turn".
func (a Activity) String() string {
	t := a.Target
	switch a.Kind {
	case "":
		return ""
	case Waiting:
		return "waiting on the model"
	case Thinking, Answering, Done:
		return string(a.Kind)
	case Turn:
		return "writing its turn"
	case Reading, Editing, Writing:
		if t == "" {
			return string(a.Kind) + " a file"
		}
		return string(a.Kind) + " " + shortPath(t)
	case Running:
		if t == "" {
			return "running a command"
		}
		return "running " + t
	case Searching:
		if t == "" {
			return "searching"
		}
		return fmt.Sprintf("searching %q", t)
	case Tool:
		return "using " + t
	case Retrying, Failed:
		if t == "" {
			return string(a.Kind)
		}
		return string(a.Kind) + ": " + t
	}
	return t // Output
}

// Limits that keep a tracker's memory bounded whatever it is fed.
const (
	// maxLine is the most of one output line a tracker keeps. Past it
	// the line's first maxLine bytes are read as far as they go: an
	// event that quotes a whole file still names its tool and file,
	// which come first or are told by the fields that do.
	maxLine = 64 << 10
	// maxTarget bounds Activity.Target, in runes.
	maxTarget = 200
	// feedStep is how much raw output is stripped at a time, so that a
	// huge chunk never needs a buffer of its size.
	feedStep = 4 << 10
)

// Tracker follows one session's output. It is not safe for concurrent
// use: a session feeds it from one goroutine.
type Tracker struct {
	events format // nil: plain output
	plain  session.PlainText
	buf    []byte // the plain form of the piece being fed
	cur    []byte // the line being written (at most maxLine bytes)
	last   []byte // plain mode: the last meaningful line ended so far
	now    Activity
}

// New returns a tracker for output of the given kind: usage.ClaudeJSON,
// usage.CodexJSONL or usage.GeminiJSON (config's usage names) read the
// CLI's events; any other kind ("", "none", a command of your own) reads
// plain output.
func New(kind string) *Tracker {
	return &Tracker{events: formats[kind]}
}

var formats = map[string]format{
	usage.ClaudeJSON: claude{},
	usage.CodexJSONL: codex{},
	usage.GeminiJSON: gemini{},
}

// Activity is the activity last reported.
func (t *Tracker) Activity() Activity { return t.now }

// Feed takes the next chunk of raw output and returns the activity now,
// and whether it differs from the one returned before.
func (t *Tracker) Feed(chunk []byte) (Activity, bool) {
	was := t.now
	for len(chunk) > 0 {
		n := min(len(chunk), feedStep)
		t.buf = t.plain.Append(t.buf[:0], chunk[:n])
		chunk = chunk[n:]
		t.scan(t.buf)
	}
	if t.events == nil {
		t.now = t.plainActivity()
	}
	return t.now, t.now != was
}

// scan splits plain text into lines; PlainText has already turned every
// "\r" into a line break.
func (t *Tracker) scan(text []byte) {
	for len(text) > 0 {
		i := bytes.IndexByte(text, '\n')
		if i < 0 {
			t.add(text)
			return
		}
		t.add(text[:i])
		t.endLine()
		text = text[i+1:]
	}
}

func (t *Tracker) add(b []byte) {
	if room := maxLine - len(t.cur); len(b) > room {
		b = b[:room]
	}
	t.cur = append(t.cur, b...)
}

func (t *Tracker) endLine() {
	line := bytes.TrimSpace(t.cur)
	switch {
	case t.events != nil && len(line) > 0 && line[0] == '{':
		if a, ok := t.events.activity(readFields(line, t.events.fields())); ok {
			t.now = Activity{Kind: a.Kind, Target: clip(a.Target)}
		}
	case t.events != nil:
		if a, ok := t.events.line(string(line[:min(len(line), maxField)])); ok {
			t.now = Activity{Kind: a.Kind, Target: clip(a.Target)}
		}
	case meaningful(line):
		t.last = append(t.last[:0], line[:min(len(line), maxTarget*utf8.UTFMax)]...)
	}
	t.cur = t.cur[:0]
}

// plainActivity is the line being written if it means something yet, else
// the last line that did.
func (t *Tracker) plainActivity() Activity {
	line := bytes.TrimSpace(t.cur)
	if !meaningful(line) {
		line = t.last
	}
	if len(line) == 0 {
		return Activity{}
	}
	return Activity{Kind: Output, Target: clip(string(line))}
}

// meaningful tells a line worth showing: it has a letter or a digit (not
// a bare spinner or rule) and is not a raw JSON line, whole or begun.
func meaningful(line []byte) bool {
	if len(line) == 0 || line[0] == '{' || bytes.HasPrefix(line, []byte(`[{`)) || bytes.HasPrefix(line, []byte(`["`)) {
		return false
	}
	return bytes.IndexFunc(line, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// clip makes s one line of at most maxTarget runes, runs of blanks folded
// to one space.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= maxTarget {
		return s
	}
	return string([]rune(s)[:maxTarget-1]) + "…"
}

// shortPath keeps a path's last two elements: enough to tell
// controller/attempt.go from session/attempt.go, short enough for a
// status line. A URL or a relative path of two elements stays whole.
func shortPath(p string) string {
	if strings.Contains(p, "://") {
		return p
	}
	parts := strings.Split(filepath.ToSlash(filepath.Clean(p)), "/")
	if len(parts) <= 2 {
		return p
	}
	return strings.Join(parts[len(parts)-2:], "/")
}
