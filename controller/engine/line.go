package engine

import (
	"bytes"

	"github.com/walkie-sh/walkie/session"
)

// maxLine bounds the line a lineTracker keeps; a progress display shows
// far less, and an agent may print megabytes without a newline.
const maxLine = 512

// lineTracker follows an agent's output and tells its latest line: the
// line being written if it has text yet, else the last line that had.
type lineTracker struct {
	plain     session.PlainText
	buf       []byte // plain text of the current chunk
	cur, last []byte
	shown     string
}

// feed takes a chunk of raw output and returns the latest line, and
// whether it differs from the one returned before.
func (l *lineTracker) feed(chunk []byte) (string, bool) {
	l.buf = l.plain.Append(l.buf[:0], chunk)
	for _, b := range l.buf {
		if b == '\n' {
			if len(bytes.TrimSpace(l.cur)) > 0 {
				l.last = append(l.last[:0], l.cur...)
			}
			l.cur = l.cur[:0]
			continue
		}
		if len(l.cur) < maxLine {
			l.cur = append(l.cur, b)
		}
	}
	line := bytes.TrimSpace(l.cur)
	if len(line) == 0 {
		line = bytes.TrimSpace(l.last)
	}
	if len(line) == 0 || string(line) == l.shown {
		return l.shown, false
	}
	l.shown = string(line)
	return l.shown, true
}
