package fleet

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// The live page is driven by changes, never by a timer: the daemon calls
// Changed when a file event, a doorbell or one of the controller's events
// concerns a debate. One publisher goroutine then reads what changed,
// once, whatever the number of open streams, and wakes every stream; each
// stream sends its client what that client has not seen. A slow client
// only slows its own stream.

// Pacing of the publisher: after a publish it waits this long before the
// next, so a burst of events (an agent printing fast) costs one read.
const publishGap = 100 * time.Millisecond

// Stream bounds: a comment every heartbeat keeps proxies from closing an
// idle stream and finds clients that went away; a write that cannot go
// out within writeWait ends the stream (there is no server-wide write
// timeout, which would cut every stream).
const (
	heartbeat = 25 * time.Second
	writeWait = 10 * time.Second
)

// snapshot is what the publisher read last.
type snapshot struct {
	rows    []Debate
	rowHTML map[string]string // by key
	rowGen  map[string]uint64 // the publish that last changed the row
}

// live is one debate that a stream follows.
type live struct {
	file    string
	streams int
	stamp   string // of the files the page reads, at the last read
	page    *Page
	err     string
	status  string // the status fragment
	table   string // the round table fragment
	picture string // the timeline fragment
	entries []streamItem
	turns   []streamItem
}

// streamItem is an entry or a turn-log line as sent.
type streamItem struct {
	seq  int // entries: the sequence number
	html string
}

// Changed says that something about the debates changed: the publisher
// reads them again soon. It never blocks.
func (s *Server) Changed() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run publishes changes until ctx ends, then ends every open stream.
func (s *Server) Run(ctx context.Context) {
	defer close(s.done)
	s.publish()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.publish()
		t := time.NewTimer(publishGap)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// publish reads the fleet and every followed debate, and wakes the
// streams.
func (s *Server) publish() {
	rows := s.o.Debates()
	s.mu.Lock()
	prev := s.snap
	follow := make(map[string]*live, len(s.lives))
	for k, l := range s.lives {
		follow[k] = l
	}
	s.mu.Unlock()

	next := &snapshot{rows: rows, rowHTML: map[string]string{}, rowGen: map[string]uint64{}}
	gen := s.gen.Load() + 1
	now := s.o.Now()
	for _, r := range rows {
		h := s.fragment("row", rowData{Debate: r, Now: now})
		next.rowHTML[r.Key] = h
		if old, ok := prev.rowHTML[r.Key]; ok && stripElapsed(old) == stripElapsed(h) {
			next.rowGen[r.Key] = prev.rowGen[r.Key]
		} else {
			next.rowGen[r.Key] = gen
		}
	}
	for key, l := range follow {
		if row, ok := findRow(rows, key); ok {
			s.refresh(l, row, now)
		}
	}

	s.mu.Lock()
	s.snap = next
	s.gen.Store(gen)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// stripElapsed leaves out of a row what changes with the clock alone.
func stripElapsed(h string) string {
	i := strings.Index(h, `class="elapsed"`)
	if i < 0 {
		return h
	}
	j := strings.Index(h[i:], "</time>")
	if j < 0 {
		return h
	}
	return h[:i] + h[i+j:]
}

func findRow(rows []Debate, key string) (Debate, bool) {
	for _, r := range rows {
		if r.Key == key {
			return r, true
		}
	}
	return Debate{}, false
}

// stamp names the state of the files a debate's page reads: a change to
// any of them is a page to read again. Lstat: a link put in a file's
// place is a change too (the page then says it refuses it).
func stamp(file string, dir string) string {
	var b strings.Builder
	for _, p := range []string{file, filepath.Join(dir, walkie.LogFile)} {
		if fi, err := os.Lstat(p); err == nil {
			fmt.Fprintf(&b, "%d.%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// refresh reads a followed debate again if its files changed; its status
// is rendered again every time (the row changes with the activity). One
// refresh runs at a time (refreshMu); streams read l's fields under s.mu.
func (s *Server) refresh(l *live, row Debate, now time.Time) {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	dir := filepath.Dir(row.File)
	if meta, err := walkie.ReadMeta(row.File); err == nil {
		dir = walkie.StateDir(row.File, meta.ID)
	}
	st := stamp(row.File, dir)
	var page *Page
	var perr string
	// Another attempt running (or none now) is a timeline to draw again,
	// whether or not the state file has shown it yet.
	if st != l.stamp || l.page == nil || runningKey(row.Running) != l.page.timelineKey {
		p, err := loadPage(row, s.bodies, now)
		if err != nil {
			perr = err.Error()
		} else {
			page = p
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if page != nil {
		l.page, l.stamp, l.err = page, st, ""
		l.entries = l.entries[:0]
		for _, e := range page.Entries {
			l.entries = append(l.entries, streamItem{seq: e.Seq, html: s.fragment("entry", e)})
		}
		l.turns = l.turns[:0]
		for _, t := range page.Turns {
			l.turns = append(l.turns, streamItem{html: s.fragment("turn", t)})
		}
		l.table = s.fragment("roundtable", page)
		l.picture = s.fragment("timeline", page)
	} else if perr != "" {
		l.err = perr
	}
	if l.page != nil {
		l.page.Debate = row
		l.status = s.fragment("status", pageData{Page: l.page, Now: now})
	}
}

// follow registers a stream on a debate; the returned func ends it.
func (s *Server) follow(row Debate) (*live, func()) {
	s.mu.Lock()
	l := s.lives[row.Key]
	if l == nil {
		l = &live{file: row.File}
		s.lives[row.Key] = l
	}
	l.streams++
	s.mu.Unlock()
	s.refresh(l, row, s.o.Now())
	return l, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if l.streams--; l.streams == 0 && s.lives[row.Key] == l {
			delete(s.lives, row.Key)
		}
	}
}

// ErrTooManyStreams refuses a stream past Options.MaxStreams.
var ErrTooManyStreams = errors.New("too many open event streams")

// stream is one open event stream to a client.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// open starts an event stream, or refuses it when too many are open.
func (s *Server) open(w http.ResponseWriter, r *http.Request) (*stream, func(), error) {
	s.mu.Lock()
	if s.streams >= s.o.MaxStreams {
		s.mu.Unlock()
		return nil, nil, ErrTooManyStreams
	}
	s.streams++
	s.mu.Unlock()
	release := func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not hold events back
	w.WriteHeader(http.StatusOK)
	st := &stream{w: w, rc: http.NewResponseController(w)}
	// A reconnecting browser waits this long; the page also reopens a
	// stream that was refused.
	if err := st.write([]byte("retry: 2000\n\n")); err != nil {
		release()
		return nil, nil, err
	}
	return st, release, nil
}

func (st *stream) event(event, id, data string) error {
	var b bytes.Buffer
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString(dataLines(data))
	b.WriteString("\n")
	return st.write(b.Bytes())
}

func (st *stream) write(p []byte) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(writeWait))
	if _, err := st.w.Write(p); err != nil {
		return err
	}
	if err := st.rc.Flush(); err != nil {
		return err
	}
	return st.rc.SetWriteDeadline(time.Time{})
}

// dataLines is data as SSE data fields: one per line, since a line break
// inside a field would end it (CR, LF and CRLF all do).
func dataLines(data string) string {
	data = strings.ReplaceAll(data, "\r\n", "\n")
	data = strings.ReplaceAll(data, "\r", "\n")
	var b strings.Builder
	for line := range strings.SplitSeq(data, "\n") {
		b.WriteString("data: " + line + "\n")
	}
	return b.String()
}

// wait blocks until the next publish after gen, the heartbeat, the
// client's leaving or the server's end. It returns false to end.
func (s *Server) wait(ctx context.Context, gen uint64, st *stream, beat *time.Timer) bool {
	s.mu.Lock()
	ch := s.changed
	moved := s.gen.Load() != gen
	s.mu.Unlock()
	if moved {
		return true
	}
	select {
	case <-ch:
		return true
	case <-beat.C:
		beat.Reset(heartbeat)
		return st.write([]byte(": keep-alive\n\n")) == nil
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// serveFleet streams the fleet table of the page's scope (?all=1: the
// registry's debates too): every row the client has not seen as it is
// now, and the rows that went away. A reconnected client gets every row
// again, so it misses nothing.
func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request) {
	st, release, err := s.open(w, r)
	if err != nil {
		s.refuseStream(w, err)
		return
	}
	defer release()
	all := allScope(r)
	sent := map[string]uint64{}
	beat := time.NewTimer(heartbeat)
	defer beat.Stop()
	for {
		s.mu.Lock()
		gen := s.gen.Load()
		snap := s.snap
		s.mu.Unlock()
		shown := map[string]bool{}
		for _, row := range snap.rows {
			if !inScope(row, all) {
				continue // a row of the other scope; gone below if it was sent
			}
			shown[row.Key] = true
			if g, ok := sent[row.Key]; ok && g == snap.rowGen[row.Key] {
				continue
			}
			if st.event("row", "", snap.rowHTML[row.Key]) != nil {
				return
			}
			sent[row.Key] = snap.rowGen[row.Key]
		}
		for key := range sent {
			if !shown[key] {
				if st.event("gone", "", key) != nil {
					return
				}
				delete(sent, key)
			}
		}
		if !s.wait(r.Context(), gen, st, beat) {
			return
		}
	}
}

// serveDebate streams one debate: each entry and turn-log line after the
// client's position, and the status and round-table panels and the
// timeline when they change. The position (Last-Event-ID on a reconnect, else ?after= from
// the page) is "SEQ.TURNS": the last entry's sequence number and the
// number of turn-log lines seen. Entries come from the record itself, so
// a client that was away for any time misses none.
func (s *Server) serveDebate(w http.ResponseWriter, r *http.Request, row Debate) {
	seq, turns := parsePosition(cmp.Or(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")))
	l, unfollow := s.follow(row)
	defer unfollow()
	st, release, err := s.open(w, r)
	if err != nil {
		s.refuseStream(w, err)
		return
	}
	defer release()
	var status, table, picture, failed string
	beat := time.NewTimer(heartbeat)
	defer beat.Stop()
	for {
		s.mu.Lock()
		gen := s.gen.Load()
		var entries, logged []streamItem
		for _, e := range l.entries {
			if e.seq > seq {
				entries = append(entries, e)
			}
		}
		if turns < len(l.turns) {
			logged = append(logged, l.turns[turns:]...)
		}
		nstatus, ntable, npicture, nerr := l.status, l.table, l.picture, l.err
		s.mu.Unlock()
		for _, e := range entries {
			seq = e.seq
			if st.event("entry", position(seq, turns), e.html) != nil {
				return
			}
		}
		for _, t := range logged {
			turns++
			if st.event("turn", position(seq, turns), t.html) != nil {
				return
			}
		}
		if stripElapsed(nstatus) != stripElapsed(status) {
			if st.event("status", "", nstatus) != nil {
				return
			}
			status = nstatus
		}
		if ntable != table {
			if st.event("roundtable", "", ntable) != nil {
				return
			}
			table = ntable
		}
		if npicture != picture {
			if st.event("timeline", "", npicture) != nil {
				return
			}
			picture = npicture
		}
		if nerr != failed {
			if st.event("problem", "", nerr) != nil {
				return
			}
			failed = nerr
		}
		if !s.wait(r.Context(), gen, st, beat) {
			return
		}
	}
}

func (s *Server) refuseStream(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrTooManyStreams) {
		s.o.Log.Warn("event stream refused", zap.Error(err), zap.Int("max_streams", s.o.MaxStreams))
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many open event streams; the page retries", http.StatusServiceUnavailable)
	}
}

func position(seq, turns int) string { return strconv.Itoa(seq) + "." + strconv.Itoa(turns) }

// parsePosition reads "SEQ.TURNS"; anything else is the start.
func parsePosition(s string) (seq, turns int) {
	a, b, ok := strings.Cut(s, ".")
	if !ok {
		return 0, 0
	}
	seq, err1 := strconv.Atoi(a)
	turns, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || seq < 0 || turns < 0 {
		return 0, 0
	}
	return seq, turns
}
