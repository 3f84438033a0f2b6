package engine

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/session/usage"
)

// maxEventStart bounds what a tap keeps of a line: enough to tell an event
// and its type (usage.Event reads only the start), however long the line.
const maxEventStart = 256

// tap follows a session's output for the supervisor: when it last printed
// anything, whether it streams the events of its usage format, and when
// it printed the final one. A CLI that streams events ends its turn with
// its final event (the result with the usage and cost), which may come
// long after the turn is on disk when the model is slow to write its
// closing message: the supervisor waits for it, so the cost is known.
type tap struct {
	format string
	start  time.Time
	// last is when output last came, as time since start (monotonic).
	last atomic.Int64

	// Owned by the session's reader goroutine (observe).
	plain session.PlainText
	buf   []byte
	line  []byte // the start of the line being printed

	streamed atomic.Bool
	final    chan struct{} // closed at the final event
	once     sync.Once
}

func newTap(format string) *tap {
	return &tap{format: format, start: time.Now(), final: make(chan struct{})}
}

// observe takes a chunk of raw output (a session.Spec Observer).
func (t *tap) observe(chunk []byte) {
	t.last.Store(int64(time.Since(t.start)))
	t.buf = t.plain.Append(t.buf[:0], chunk)
	for len(t.buf) > 0 {
		i := bytes.IndexByte(t.buf, '\n')
		part := t.buf
		if i >= 0 {
			part = t.buf[:i]
		}
		if room := maxEventStart - len(t.line); room > 0 {
			t.line = append(t.line, part[:min(room, len(part))]...)
		}
		if i < 0 {
			return
		}
		t.endLine()
		t.buf = t.buf[i+1:]
	}
}

func (t *tap) endLine() {
	event, final := usage.Event(t.format, t.line)
	t.line = t.line[:0]
	if event {
		t.streamed.Store(true)
	}
	if final {
		t.once.Do(func() { close(t.final) })
	}
}

// quietFor is how much longer output must stay quiet to have been quiet
// for d; 0 when it has been.
func (t *tap) quietFor(d time.Duration) time.Duration {
	since := time.Since(t.start) - time.Duration(t.last.Load())
	return max(d-since, 0)
}

// awaitingFinal reports that the CLI streams events and has not printed its
// final one yet: its turn is not over, whatever the file says.
func (t *tap) awaitingFinal() bool {
	if !t.streamed.Load() {
		return false
	}
	select {
	case <-t.final:
		return false
	default:
		return true
	}
}
