package walkie

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Load reads and parses a walkie file.
func Load(file string) (*Doc, error) {
	data, err := readRecord(file)
	if err != nil {
		return nil, err
	}
	return Parse(file, data)
}

// ReadMeta reads only the front matter, however long the file.
func ReadMeta(file string) (Meta, error) {
	f, err := openRecord(file, os.O_RDONLY)
	if err != nil {
		return Meta{}, err
	}
	defer f.Close()
	buf, err := readPrefix(f, file, frontMatterEnd)
	if err != nil {
		return Meta{}, err
	}
	if !utf8.Valid(buf) {
		return Meta{}, notUTF8(file, buf)
	}
	d := &Doc{File: file}
	if _, err := d.parseFrontMatter(buf); err != nil {
		return Meta{}, err
	}
	return d.Meta, nil
}

// maxHead bounds how far readPrefix looks for the end of what it wants.
const maxHead = 1 << 20

// readPrefix reads the start of f in growing chunks until end finds where
// the wanted prefix stops (or the file ends), and returns the prefix cut
// at a line boundary, so no rune is ever split.
func readPrefix(f *os.File, file string, end func(buf []byte) int) ([]byte, error) {
	var buf []byte
	for chunk := 8 << 10; ; chunk *= 2 {
		b := make([]byte, chunk)
		n, err := f.ReadAt(b, int64(len(buf)))
		buf = append(buf, b[:n]...)
		if i := end(buf); i >= 0 {
			return buf[:i], nil
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		if len(buf) > maxHead {
			return buf[:bytes.LastIndexByte(buf, '\n')+1], nil
		}
	}
}

// frontMatterEnd is the offset after the closing --- line, or -1.
func frontMatterEnd(buf []byte) int {
	if len(buf) < 4 {
		return -1
	}
	if bytes.HasPrefix(buf[4:], []byte("---\n")) {
		return 8
	}
	if i := bytes.Index(buf[4:], []byte("\n---\n")); i >= 0 {
		return 4 + i + 5
	}
	return -1
}

// firstEntryEnd is the offset after the first complete marker line, or -1.
func firstEntryEnd(buf []byte) int {
	for off := 0; off < len(buf); {
		i := bytes.Index(buf[off:], []byte("<!-- walkie "))
		if i < 0 {
			return -1
		}
		start := off + i
		nl := bytes.IndexByte(buf[start:], '\n')
		if nl < 0 {
			return -1 // the line is not complete yet
		}
		end := start + nl + 1
		if (start == 0 || buf[start-1] == '\n') && isMarker(bytes.TrimSuffix(buf[start:end-1], []byte("\r"))) {
			return end
		}
		off = end
	}
	return -1
}

// checkHead verifies what a post cannot see from the end of the file: the
// front matter, the pinned briefing and the first entry's link to them,
// so a record whose header was edited is never appended to.
func checkHead(f *os.File, file string) (*Doc, error) {
	head, err := readPrefix(f, file, firstEntryEnd)
	if err != nil {
		return nil, err
	}
	d, err := Parse(file, head)
	if err != nil {
		return nil, err
	}
	if len(d.Entries) == 0 {
		return d, d.checkBriefing() // a tail, if any, is judged with the rest of the end
	}
	return d, d.Verify()
}

// Post is one entry for the enforced writer.
type Post struct {
	From       string // participant name; ignored for supervisor entries
	Supervisor bool
	Body       []byte
	// Size is the body's whole size when Body holds only its first bytes
	// (a bounded read stopped past the limit), -1 when that size is not
	// known (standard input); 0 when Body is the whole body.
	Size int64
	Sign bool
	At   time.Time // zero means now
	// Tags are the entry's type, verdict and refs (format 3), given
	// besides any trailer lines at the end of Body (they must agree).
	Tags Tags
	// Resolver, when set, checks the refs against the repository the
	// record is bound to before anything is written (walkie post
	// --verify-refs, on by default when the record is bound).
	Resolver RefResolver
	// NoQueue records a supervisor entry now or refuses it (busy) while
	// a turn runs, instead of queueing it: a signed post is signed once
	// it is recorded.
	NoQueue bool
	// resolved are the post's tags with the full ids the resolver found,
	// set before the lock is taken.
	resolved *Tags
}

// Receipt says what Append did.
type Receipt struct {
	Entry    EntryBrief
	Queued   bool // a supervisor note held until the running turn is recorded
	Progress Progress
	Status   string
}

// Append is the enforced writer: it checks a post against the rules,
// then, under the record lock, appends it with its marker in one synced
// write, logs it and rings the doorbell. Its cost grows with
// the entry, not with the file: only the head (front matter, briefing,
// first entry) and the last few entries are read.
func Append(file string, p Post) (Receipt, error) {
	// The head is checked before the lock is taken: a bad file changes
	// nothing on disk, not even the lock file.
	hf, err := openRecord(file, os.O_RDONLY)
	if err != nil {
		return Receipt{}, err
	}
	head, err := checkHead(hf, file)
	hf.Close()
	if err != nil {
		return Receipt{}, err
	}
	meta := head.Meta
	if err := checkPostRefs(&meta, &p); err != nil {
		return Receipt{}, err
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return Receipt{}, fmt.Errorf("lock %s: %w", file, err)
	}
	defer lock.Unlock()
	// Opened only now, under the lock: a restore replaces the file by
	// renaming a new one over it, and a descriptor opened before that
	// would append to the old, unlinked file.
	f, err := openRecord(file, os.O_RDWR|os.O_APPEND)
	if err != nil {
		return Receipt{}, err
	}
	defer f.Close()
	l := OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return Receipt{}, err
	}
	if (!p.Supervisor || p.NoQueue) && st.Running != nil && ControllerRunning(dir) {
		// The agent of the running attempt may be appending right now: a
		// post beside it would be judged together with it, and a rejected
		// attempt is undone, post and all. So nothing a participant posts
		// lands while an attempt runs: it waits for its end (--wait).
		a := st.Running
		return Receipt{}, &RefusedError{Busy: true, Reason: fmt.Sprintf("%s's agent is writing turn %d now, run by a controller (pid %d); a post beside it would be undone with the attempt, so it is refused: post once the turn is recorded (walkie post --wait waits for that), or stop that controller first",
			a.Agent, a.Turn, a.ControllerPID)}
	}
	if p.Supervisor && st.Running != nil && ControllerRunning(dir) {
		// The running agent may be appending right now; the controller
		// adds this note right after it records the turn.
		body, err := checkBody(&meta, &p, "")
		if err != nil {
			return Receipt{}, err
		}
		return queueNote(dir, body, p.At)
	}
	return appendLocked(f, file, dir, l, &meta, st, p)
}

// appendLocked appends p under the record lock; l is the debate's log
// and st its state.
func appendLocked(f *os.File, file, dir string, l *Log, meta *Meta, st *State, p Post) (Receipt, error) {
	ti, err := readTail(f, file, meta, st)
	if err != nil {
		return Receipt{}, err
	}
	if !isBlank(ti.tail) {
		line, err := ti.tailLine(f)
		if err != nil {
			return Receipt{}, err
		}
		return Receipt{}, &TornTailError{File: file, Line: line, Bytes: len(ti.tail)}
	}
	if err := ti.checkEnd(f, file, meta); err != nil {
		return Receipt{}, err
	}
	if err := CheckAgainstState(file, ti.prog, st); err != nil {
		return Receipt{}, err
	}
	whose, before := "", DebateStatus(meta, ti.prog, st)
	if before == StatusOpen {
		whose = ti.prog.NextAgent
	}
	if !p.Supervisor && !slices.Contains(meta.Participants, p.From) {
		return Receipt{}, &RefusedError{Reason: fmt.Sprintf("%q is not a participant of this debate (participants: %s)", p.From, strings.Join(meta.Participants, ", ")), Whose: whose}
	}
	body, err := checkBody(meta, &p, whose)
	if err != nil {
		return Receipt{}, err
	}
	if !p.Supervisor {
		if err := checkTurn(file, meta, ti.prog, st, p.From); err != nil {
			return Receipt{}, err
		}
	}
	mk := Marker{Seq: ti.prog.Seq + 1, Agent: SupervisorName, At: p.At, Prev: ti.prog.Hash, Tags: p.Tags}
	if !p.Supervisor {
		mk.Turn, mk.Agent = ti.prog.NextTurn, p.From
	}
	entry := postedText(&p, mk.Turn, body)
	if mk.At.IsZero() {
		mk.At = time.Now()
	}
	// The entry, as Verify will see it, starts where the last recorded
	// line ends, so a blank tail left there is part of it and is hashed
	// with it. A missing final newline is written first: it ends the
	// tail's last line (and is hashed too), or, with no tail, the last
	// marker line or the header, which lie before the entry.
	var lead []byte
	if !ti.endsWithNewline {
		lead = []byte("\n")
	}
	hashed := append([]byte(nil), ti.tail...)
	if len(ti.tail) > 0 {
		hashed = append(hashed, lead...)
	}
	hashed = append(hashed, entry...)
	rec := append(append(lead, entry...), stamp(hashed, &mk, meta.Walkie)...)
	if _, err := f.Write(rec); err != nil {
		return Receipt{}, fmt.Errorf("append entry %d to %s: %w", mk.Seq, file, err)
	}
	if err := f.Sync(); err != nil {
		return Receipt{}, fmt.Errorf("sync %s: %w", file, err)
	}
	prog := ti.prog
	prog.Seq, prog.Hash = mk.Seq, mk.Hash
	brief := &EntryBrief{Seq: mk.Seq, Turn: mk.Turn, Agent: mk.Agent, Signed: p.Sign, At: mk.At.UTC()}
	brief.setTags(mk.Tags)
	if !p.Supervisor {
		prog = progress(meta, append(ti.recent, TurnRef{Turn: mk.Turn, Agent: p.From, Signed: p.Sign, Closed: mk.Tags.Type == TypeClose}), mk.Turn, mk.Seq, mk.Hash)
	}
	return Receipt{Entry: *brief, Progress: prog, Status: DebateStatus(meta, prog, st)}, recordAppended(dir, l, meta, st, prog, brief, before)
}

// postedText is an entry as the writer appends it, before its marker:
// heading, and the body checkBody returned (its sign-off included).
func postedText(p *Post, turn int, body []byte) []byte {
	var b bytes.Buffer
	if p.Supervisor {
		b.WriteString("\n## Supervisor\n\n")
	} else {
		fmt.Fprintf(&b, "\n## Turn %d · %s\n\n", turn, p.From)
	}
	b.Write(body)
	return b.Bytes()
}

// CheckAgainstState catches what the chain alone cannot: whole entries cut
// from the end of the file, or the last entry replaced.
func CheckAgainstState(file string, prog Progress, st *State) error {
	switch {
	case prog.Seq < st.LastSeq:
		return &ChainError{File: file, Seq: prog.Seq + 1, Msg: fmt.Sprintf("the record ends at entry %d but walkie recorded %d entries: the file was truncated", prog.Seq, st.LastSeq),
			Fix: "restore the missing entries from git or from a copy; walkie keeps the count in .walkie/ID/log.jsonl"}
	case prog.Seq == st.LastSeq && st.LastHash != "" && prog.Hash != st.LastHash:
		return &ChainError{File: file, Seq: prog.Seq, Msg: "the last entry is not the one walkie recorded: it was replaced", Fix: fixRestore}
	}
	return nil
}

// CheckState is CheckAgainstState for a whole parsed record: the error
// names the line of the replaced entry, or the end of the file where
// entries are missing.
func (d *Doc) CheckState(st *State) error {
	err := CheckAgainstState(d.File, d.Progress(), st)
	var ce *ChainError
	if errors.As(err, &ce) {
		ce.Line = d.TailLine
		if ce.Seq >= 1 && ce.Seq <= len(d.Entries) {
			ce.Line = d.Entries[ce.Seq-1].Line
		}
	}
	return err
}

// recordAppended logs the entry as the record walkie last wrote and rings
// the doorbell, after the entry is synced in the record; before is the
// debate's status before it. The log's line is synced and the doorbell
// is not: after a machine crash Reconcile rings again a doorbell behind
// the record, and brings back in line a log that a process killed
// between the two writes left behind it.
func recordAppended(dir string, l *Log, meta *Meta, st *State, prog Progress, brief *EntryBrief, before string) error {
	st.LastSeq, st.LastHash = prog.Seq, prog.Hash
	st.Settle(meta, prog, before)
	if _, err := l.Save(OpAppended, st, nil); err != nil {
		return fmt.Errorf("entry %d is recorded but not in the log: %w", prog.Seq, err)
	}
	if err := Ring(dir, meta, prog, st, brief); err != nil {
		return fmt.Errorf("entry %d is recorded but the doorbell was not rung: %w", prog.Seq, err)
	}
	return nil
}

// checkTurn applies the turn-order rules to a participant's post to file.
func checkTurn(file string, meta *Meta, prog Progress, st *State, from string) error {
	whose := prog.NextAgent
	switch DebateStatus(meta, prog, st) {
	case StatusClosed:
		return &RefusedError{Reason: fmt.Sprintf("the thread was closed in turn %d by %s; nothing but supervisor entries follows a close (start another thread: walkie thread new DIR SLUG)", prog.Turns, meta.TurnAgent(prog.Turns))}
	case StatusConverged:
		return &RefusedError{Reason: "the debate has converged: every participant has signed off"}
	case StatusHalted:
		return &RefusedError{Reason: fmt.Sprintf("the debate is halted (%s); `walkie resume %s` lifts the halt", orNone(st.Reason), file)}
	case StatusMaxRounds:
		return &RefusedError{Reason: fmt.Sprintf("turn %d would be in round %d, past the round cap of %d; `walkie extend %s --rounds N` raises it", prog.NextTurn, prog.NextRound, RoundCap(meta, st), file), Whose: whose}
	case StatusOpen:
	default:
		return &RefusedError{Reason: fmt.Sprintf("the debate has ended as %s (%s); `walkie resume %s` reopens it", st.Status, orNone(st.Reason), file)}
	}
	if from != whose {
		return &RefusedError{Reason: fmt.Sprintf("%s cannot post turn %d: out of turn", from, prog.NextTurn), Whose: whose, OutOfTurn: true}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "no reason given"
	}
	return s
}

// checkBody refuses bodies that would break the record, and returns the
// body normalised to end in exactly one newline, without a closing own
// sign-off (which it turns into p.Sign). whose goes into the refusal.
func checkBody(meta *Meta, p *Post, whose string) ([]byte, error) {
	refuse := func(format string, args ...any) ([]byte, error) {
		return nil, &RefusedError{Reason: fmt.Sprintf(format, args...), Whose: whose}
	}
	if !utf8.Valid(p.Body) {
		return refuse("the body is not UTF-8")
	}
	switch {
	case len(p.Body) <= meta.TurnLimit():
	case p.Size < 0:
		return refuse("the body is over the limit of %d bytes (max_turn_bytes)", meta.TurnLimit())
	default:
		return refuse("the body is %d bytes, over the limit of %d (max_turn_bytes)", max(int64(len(p.Body)), p.Size), meta.TurnLimit())
	}
	if p.Supervisor && p.Sign {
		return refuse("supervisor entries cannot sign: a sign-off belongs to a participant's turn")
	}
	lines := strings.Split(strings.TrimRight(string(p.Body), "\r\n\t "), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return refuse("the body is empty")
	}
	if pr := checkText([]byte(strings.Join(lines, "\n"))); pr != nil {
		return refuse("%s", pr.postReason())
	}
	for i, l := range lines {
		name := signOffName([]byte(l))
		if name == "" {
			continue
		}
		switch {
		case p.Supervisor:
			return refuse("body line %d is a sign-off; supervisor entries cannot sign", i+1)
		case name != p.From:
			return refuse("body line %d is a sign-off of %s; only its author can sign a turn", i+1, name)
		case i != len(lines)-1:
			return refuse("body line %d is a sign-off but not the last line; use --sign or end the body with it", i+1)
		default:
			lines = lines[:i]
			p.Sign = true
		}
	}
	if len(lines) == 0 {
		return refuse("the body is empty (a sign-off alone is not a turn)")
	}
	if p.Sign && meta.IsRoundtable() {
		return refuse("a round table has no sign-offs: the hidden grader and the reviewers' quorum decide when the work is done")
	}
	text, err := postTags(meta, p, lines)
	if err != nil {
		return nil, &RefusedError{Reason: err.Error(), Whose: whose}
	}
	if p.Supervisor || meta.IsRoundtable() {
		return text, nil
	}
	text, pr := withSignOff(text, p)
	if pr != nil {
		return refuse("%s", pr.postReason())
	}
	return text, nil
}

// withSignOff ends a turn's text with its author's sign-off when the post
// signs: on the line after the text, or after a blank line when the
// text's last block would otherwise take the line in (an HTML block
// runs on to a blank line), so that a markdown viewer shows what walkie
// reads (checkSignOff). A post that does not sign must not show a
// sign-off either.
func withSignOff(text []byte, p *Post) ([]byte, *textProblem) {
	if !p.Sign {
		return text, checkSignOff(text)
	}
	var first *textProblem
	for _, sep := range []string{"", "\n"} {
		out := fmt.Appendf(append(slices.Clip(text), sep...), "Signed-off-by: %s\n", p.From)
		pr := checkSignOff(out)
		if pr == nil {
			return out, nil
		}
		if first == nil {
			first = pr
		}
	}
	return nil, first
}

// tailInfo is what Append learns from the end of the file.
type tailInfo struct {
	prog            Progress
	recent          []TurnRef
	recentAt        []markAt // where each recent turn's marker is
	last            *lastEntry
	tail            []byte // after the last marker
	tailStart       int64
	endsWithNewline bool
	lastShort       string // the last marker's h= (format 4)
}

// markAt is a marker's sequence number and the file offset of its line.
type markAt struct {
	seq int
	off int64
}

// lastEntry is the last recorded entry as the writer read it.
type lastEntry struct {
	start    int64  // file offset of its first byte
	content  []byte // its bytes before the marker line
	mk       Marker
	prevHash string // the chain hash before it; "" when it was not read
}

// checkEnd verifies what the writer read of the end of the record: the
// last entry's hash and its link to the one before, and that the turns it
// read follow the turn order. It costs nothing more to read, and keeps a
// post from building on an end that was edited, or forged.
func (t *tailInfo) checkEnd(f *os.File, file string, meta *Meta) error {
	lineAt := func(off int64, content []byte) int {
		n, err := linesBefore(f, off)
		if err != nil {
			return 0
		}
		return n + 1 + leadingBlankLines(content)
	}
	if e := t.last; e != nil {
		bad := func(msg string) error {
			return &ChainError{File: file, Line: lineAt(e.start, e.content), Seq: e.mk.Seq, Msg: msg, Fix: fixRestore}
		}
		if e.prevHash != "" && e.mk.Prev != e.prevHash {
			return bad("does not follow the entry before it: entries were removed, inserted or reordered")
		}
		if entryHash(e.content, e.mk) != e.mk.Hash {
			return bad("its text was changed after it was recorded")
		}
	}
	for i, r := range t.recent {
		var msg string
		switch want := meta.TurnAgent(r.Turn); {
		case i > 0 && r.Turn != t.recent[i-1].Turn+1:
			msg = fmt.Sprintf("turn %d where turn %d was expected", r.Turn, t.recent[i-1].Turn+1)
		case r.Agent != want:
			msg = fmt.Sprintf("turn %d was written by %q but it was %q's turn", r.Turn, r.Agent, want)
		default:
			continue
		}
		return &ChainError{File: file, Line: lineAt(t.recentAt[i].off, nil), Seq: t.recentAt[i].seq, Msg: "its marker says " + msg, Fix: fixRestore}
	}
	return nil
}

// tailLine is the line where the tail's first non-blank line is. Only an
// error needs it, so counting lines from the top is fine.
func (t *tailInfo) tailLine(f *os.File) (int, error) {
	n, err := linesBefore(f, t.tailStart)
	return n + 1 + leadingBlankLines(t.tail), err
}

// linesBefore counts the newlines in f before offset off.
func linesBefore(f *os.File, off int64) (int, error) {
	n := 0
	buf := make([]byte, 256<<10)
	for pos := int64(0); pos < off; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), off-pos)], pos)
		n += bytes.Count(buf[:k], []byte("\n"))
		pos += int64(k)
		if err != nil && !(errors.Is(err, io.EOF) && pos >= off) {
			return n, fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}
	return n, nil
}

// readTail reads backwards from the end in growing windows until it has
// the last marker and the last len(participants) turn markers, so a post
// reads O(entry) bytes. A file short enough to fit is parsed whole, and
// so is a compact record (format 4) whose last marker is not the one st
// recorded: its line holds only part of the chain hash, and the next
// entry is chained from the whole one.
func readTail(f *os.File, file string, meta *Meta, st *State) (*tailInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	for w := int64(64 << 10); ; w *= 4 {
		if w >= size {
			return readWhole(f, file, size)
		}
		buf := make([]byte, w)
		if _, err := f.ReadAt(buf, size-w); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		ti, scanned, ok := scanWindow(buf, size-w, meta)
		if ok && meta.Walkie >= FormatCompact && !ti.anchor(st) {
			return readWhole(f, file, size)
		}
		if ok {
			// The recorded part that was scanned must be text, like the
			// rest of the record; the tail is judged as a whole.
			rec := buf[scanned : ti.tailStart-(size-w)]
			if !utf8.Valid(rec) {
				return nil, notUTF8InWindow(f, file, rec, size-w+int64(scanned))
			}
			return ti, nil
		}
	}
}

// notUTF8InWindow reports the first invalid byte of b, which starts at
// file offset base, with its line counted from the top of the file.
func notUTF8InWindow(f *os.File, file string, b []byte, base int64) error {
	off := 0
	for off < len(b) {
		r, size := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		off += size
	}
	n, err := linesBefore(f, base+int64(off))
	if err != nil {
		return err
	}
	return &InputError{File: file, Line: n + 1, Msg: fmt.Sprintf("not UTF-8 (invalid byte 0x%02x at offset %d)", b[off], base+int64(off)), Fix: "save the file as UTF-8"}
}

func readWhole(f *os.File, file string, size int64) (*tailInfo, error) {
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	ends := len(data) > 0 && data[len(data)-1] == '\n'
	d, err := Parse(file, data)
	if err != nil {
		return nil, err
	}
	p := d.Progress()
	if !ends && len(d.Entries) == 0 && len(d.Tail) == 0 {
		// The newline written before the first entry ends the header,
		// whose hash starts the chain.
		p.Hash = GenesisHash(append(append([]byte(nil), d.Header...), '\n'))
	}
	ti := &tailInfo{prog: p, tail: d.Tail, tailStart: d.TailOffset, endsWithNewline: ends}
	for i := range d.Entries {
		if e := &d.Entries[i]; e.Kind == KindTurn {
			ti.recent = append(ti.recent, e.turnRef())
			ti.recentAt = append(ti.recentAt, markAt{e.Marker.Seq, e.Offset + int64(len(e.Raw)-len(markerLine(e)))})
		}
	}
	if n := len(d.Meta.Participants); len(ti.recent) > n {
		ti.recent, ti.recentAt = ti.recent[len(ti.recent)-n:], ti.recentAt[len(ti.recentAt)-n:]
	}
	if n := len(d.Entries); n > 0 {
		e := &d.Entries[n-1]
		ti.last = &lastEntry{start: e.Offset, content: e.Raw[:len(e.Raw)-len(markerLine(e))], mk: e.Marker, prevHash: GenesisHash(d.Header)}
		if n > 1 {
			ti.last.prevHash = d.Entries[n-2].Marker.Hash
		}
	}
	return ti, nil
}

// scanWindow finds what Append needs in the last bytes of a file; ok is
// false when the window is too short to hold it. scanned is where in buf
// the lines it read begin.
func scanWindow(buf []byte, base int64, meta *Meta) (ti *tailInfo, scanned int, ok bool) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return nil, 0, false
	}
	lines := splitLines(buf[i+1:], int(base)+i+1, 0) // line numbers unknown here
	n := len(meta.Participants)
	var recent []TurnRef
	var recentAt []markAt
	var lastMk Marker
	lastK := -1
	for k := len(lines) - 1; k >= 1 && len(recent) < n; k-- {
		if !isMarker(lines[k].text) {
			continue
		}
		mk, err := parseMarker(lines[k].text, meta.Walkie)
		if err != nil {
			return nil, 0, false
		}
		if meta.Walkie >= FormatCompact && !compactFromHeading(buf, base, lines, k, &mk) {
			return nil, 0, false
		}
		if ti == nil {
			tail := buf[lines[k].end-int(base):]
			ti = &tailInfo{tail: tail, tailStart: int64(lines[k].end), endsWithNewline: buf[len(buf)-1] == '\n'}
			ti.prog.Seq, ti.prog.Hash, ti.lastShort = mk.Seq, mk.Hash, mk.Short
			lastK, lastMk = k, mk
		} else if ti.last == nil {
			// The marker before the last one: where the last entry starts.
			ti.last = &lastEntry{start: int64(lines[k].end), content: buf[lines[k].end-int(base) : lines[lastK].start-int(base)], mk: lastMk, prevHash: mk.Hash}
		}
		if mk.Turn == 0 {
			continue
		}
		if ti.prog.Turns == 0 {
			ti.prog.Turns = mk.Turn
		}
		prev := k - 1
		for prev >= 0 && isBlank(lines[prev].text) {
			prev--
		}
		if prev < 0 {
			return nil, 0, false
		}
		recent = append(recent, TurnRef{Turn: mk.Turn, Agent: mk.Agent, Signed: signOffName(lines[prev].text) == mk.Agent, Closed: mk.Tags.Type == TypeClose})
		recentAt = append(recentAt, markAt{mk.Seq, int64(lines[k].start)})
	}
	if ti == nil || (len(recent) < n && ti.prog.Turns > len(recent)) || ti.prog.Turns == 0 {
		return nil, 0, false
	}
	slices.Reverse(recent)
	slices.Reverse(recentAt)
	ti.recent, ti.recentAt = recent, recentAt
	ti.prog = progress(meta, recent, ti.prog.Turns, ti.prog.Seq, ti.prog.Hash)
	return ti, i + 1, true
}

// compactFromHeading fills in the turn, author and tags of the compact
// marker at lines[k] from its entry's heading and trailer lines, as Parse
// does; false when the heading is not in the window (or the entry has
// none, which Parse reports once the window is the whole file).
func compactFromHeading(buf []byte, base int64, lines []line, k int, mk *Marker) bool {
	h := k - 1
	for h >= 0 && !isHeading(lines[h].text) {
		if isMarker(lines[h].text) {
			return false
		}
		h--
	}
	if h < 0 {
		return false
	}
	if m := turnHeadingRe.FindSubmatch(lines[h].text); m != nil {
		mk.Turn, _ = strconv.Atoi(string(m[1]))
		mk.Agent = string(m[2])
	} else {
		mk.Agent = SupervisorName
	}
	if t, _, pr := bodyTags(buf[lines[h].end-int(base) : lines[k].start-int(base)]); pr == nil {
		mk.Tags = t
	}
	return true
}

// anchor takes the whole chain hash after a compact record's last entry
// from st, when st recorded that very entry (same seq, same tag): what
// the window read cannot give. The last entry's own text is then not
// hashed again here; it is checked against the same hash by Verify, which
// the controller runs before every turn, and an edit of it never verifies
// again, since the next entry is chained from the hash walkie recorded.
func (t *tailInfo) anchor(st *State) bool {
	if st == nil || st.LastSeq != t.prog.Seq || shortTag(st.LastHash) != t.lastShort {
		return false
	}
	t.prog.Hash, t.last = st.LastHash, nil
	return true
}

// queueNote holds a supervisor note while an agent's turn is running.
func queueNote(dir string, body []byte, at time.Time) (Receipt, error) {
	if at.IsZero() {
		at = time.Now()
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("%s-%s.json", at.UTC().Format("20060102T150405.000000000"), hex.EncodeToString(rnd[:]))
	b, _ := json.Marshal(queuedNote{Body: string(body), At: at.UTC()})
	if err := WriteFileAtomic(filepath.Join(dir, "inbox", name), b, 0o644); err != nil {
		return Receipt{}, fmt.Errorf("queue supervisor note: %w", err)
	}
	return Receipt{Queued: true, Entry: EntryBrief{Agent: SupervisorName, At: at.UTC()}}, nil
}

type queuedNote struct {
	Body string    `json:"body"`
	At   time.Time `json:"at"`
}

// FlushInbox appends supervisor notes queued while a turn was running, in
// the order they were posted. The controller calls it after recording a turn.
func FlushInbox(file string) (int, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return 0, err
	}
	dir := StateDir(file, meta.ID)
	inbox := filepath.Join(dir, "inbox")
	ents, err := os.ReadDir(inbox)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	n := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(inbox, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			return n, err
		}
		var q queuedNote
		if err := json.Unmarshal(b, &q); err != nil {
			return n, &InputError{File: path, Msg: "queued supervisor note is not valid JSON", Fix: "remove it and post the note again"}
		}
		if err := appendNote(file, dir, &meta, []byte(q.Body), q.At); err != nil {
			return n, err
		}
		// Removing after the append can post a note twice after a crash
		// between the two; removing first could lose it. Twice is better.
		if err := os.Remove(path); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func appendNote(file, dir string, meta *Meta, body []byte, at time.Time) error {
	lock, err := LockRecord(dir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	f, err := openRecord(file, os.O_RDWR|os.O_APPEND) // under the lock: see Append
	if err != nil {
		return err
	}
	defer f.Close()
	l := OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return err
	}
	_, err = appendLocked(f, file, dir, l, meta, st, Post{Supervisor: true, Body: body, At: at})
	return err
}

// doorbellAgrees reports whether signal.json says what Ring would: the
// record's last entry and the debate's status. None before the first
// entry agrees too.
func doorbellAgrees(dir string, m *Meta, p Progress, st *State) bool {
	sig, err := LoadSignal(dir)
	if err != nil {
		return false
	}
	if sig == nil {
		return p.Seq == 0
	}
	return sig.Seq == p.Seq && sig.Status == DebateStatus(m, p, st)
}

// Reconcile makes the log and the doorbell agree with a record that is
// ahead of them: an entry stamped by a process that died before it could
// log it (its append is synced first, so this is the one way the two
// part), or a machine crash that lost the doorbell, which is never synced
// (Ring). A doorbell behind the record or unreadable is rung again. Nothing changes when they agree or the record
// does not verify. It reports whether it wrote.
func Reconcile(file string) (bool, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return false, err
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	d, err := Load(file)
	if err != nil || d.Verify() != nil {
		return false, nil // verify and repair say what is wrong
	}
	l := OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return false, err
	}
	prog := d.Progress()
	var last *EntryBrief
	if n := len(d.Entries); n > 0 {
		last = d.Entries[n-1].Brief()
	}
	if prog.Seq <= st.LastSeq {
		if doorbellAgrees(dir, &d.Meta, prog, st) {
			return false, nil
		}
		return true, Ring(dir, &d.Meta, prog, st, last)
	}
	// Its status before the lost write is unknown; as it stands now, an
	// ended debate's extension is already cleared by the entry's settle.
	return true, recordAppended(dir, l, &d.Meta, st, prog, last, DebateStatus(&d.Meta, prog, st))
}
