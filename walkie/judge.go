package walkie

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Verdicts on an agent's turn: the outcomes the judge gives.
const (
	VerdictAccepted  = OutcomeAccepted
	VerdictNoTurn    = OutcomeNoTurn
	VerdictMalformed = OutcomeMalformed
	VerdictTampered  = OutcomeTampered
)

// Verdict is the judgement of what an agent left in the file.
type Verdict struct {
	Outcome Outcome // one of the Verdict* constants
	Detail  string  // one line a person understands
	Stamped bool    // the turn came through the enforced writer and is already stamped
	Signed  bool
	Line    int // where the problem is, when there is one
}

// Expect is the turn the controller asked for.
type Expect struct {
	Turn  int
	Agent string
}

// Judge decides, without touching anything, whether after holds exactly
// one valid new turn on top of before: the recorded part of before
// unchanged, one turn with the expected heading and author, within the
// size limit, signed only by its author on its last line.
func Judge(file string, before, after []byte, want Expect) (Verdict, *Doc) {
	bd, err := Parse(file, before)
	if err != nil {
		return Verdict{Outcome: VerdictTampered, Detail: "the record was already invalid before the turn: " + err.Error()}, nil
	}
	prefix := before[:bd.TailOffset]
	if !bytes.HasPrefix(after, prefix) {
		line := firstDiffLine(prefix, after)
		return Verdict{Outcome: VerdictTampered, Line: line, Detail: fmt.Sprintf("the file was changed above the new turn (first difference at line %d)", line)}, nil
	}
	ad, err := Parse(file, after)
	if err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			return Verdict{Outcome: VerdictMalformed, Line: ie.Line, Detail: ie.Msg}, nil
		}
		return Verdict{Outcome: VerdictMalformed, Detail: err.Error()}, nil
	}
	switch n := len(ad.Entries) - len(bd.Entries); {
	case n == 1 && isBlank(ad.Tail):
		// Posted through `walkie post`, which checked and stamped it.
		e := &ad.Entries[len(ad.Entries)-1]
		if err := ad.Verify(); err != nil {
			return Verdict{Outcome: VerdictTampered, Detail: err.Error()}, nil
		}
		if e.Kind != KindTurn || e.Turn != want.Turn || e.Agent != want.Agent {
			return Verdict{Outcome: VerdictMalformed, Line: e.Line, Detail: fmt.Sprintf("the new entry is not turn %d by %s", want.Turn, want.Agent)}, nil
		}
		return Verdict{Outcome: VerdictAccepted, Stamped: true, Signed: e.Signed(), Detail: "posted with walkie post"}, ad
	case n != 0:
		return Verdict{Outcome: VerdictMalformed, Detail: fmt.Sprintf("%d new recorded entries where one turn was expected", n)}, nil
	case ad.TailOffset != bd.TailOffset:
		// Before the first entry the parser counts every line up to an
		// entry heading as the briefing: text added under a wrong heading
		// (or none) lands there, not in the tail.
		line := bytes.Count(after[:bd.TailOffset], []byte("\n")) + 1
		return Verdict{Outcome: VerdictMalformed, Line: line,
			Detail: fmt.Sprintf("text was added without the heading %q", fmt.Sprintf("## Turn %d · %s", want.Turn, want.Agent))}, nil
	}
	v := judgeTail(ad, want)
	return v, ad
}

// judgeTail checks the unstamped text after the last marker.
func judgeTail(d *Doc, want Expect) Verdict {
	if !utf8.Valid(d.Tail) {
		return Verdict{Outcome: VerdictMalformed, Line: d.TailLine, Detail: "the turn is not UTF-8"}
	}
	lines := splitLines(d.Tail, 0, d.TailLine)
	k := 0
	for k < len(lines) && isBlank(lines[k].text) {
		k++
	}
	if k == len(lines) {
		return Verdict{Outcome: VerdictNoTurn, Detail: "no new turn was written"}
	}
	h := lines[k]
	heading := fmt.Sprintf("## Turn %d · %s", want.Turn, want.Agent)
	bad := func(l int, format string, args ...any) Verdict {
		return Verdict{Outcome: VerdictMalformed, Line: l, Detail: fmt.Sprintf(format, args...)}
	}
	if string(h.text) != heading {
		if m := turnHeadingRe.FindSubmatch(h.text); m != nil && string(m[2]) != want.Agent {
			return bad(h.num, "the turn is headed for %s, not %s", m[2], want.Agent)
		}
		return bad(h.num, "heading %q where %q was expected", clip(h.text), heading)
	}
	body := d.Tail[h.end:]
	if len(body) > d.Meta.turnLimit() {
		return bad(h.num, "the turn is %d bytes, over the limit of %d", len(body), d.Meta.turnLimit())
	}
	last := -1
	for _, l := range lines[k+1:] {
		switch {
		case looseHeadingRe.Match(l.text):
			return bad(l.num, "a second heading %q: exactly one turn was expected", clip(l.text))
		case looseMarkerRe.Match(l.text):
			return bad(l.num, "the turn contains a walkie marker; only walkie writes markers")
		}
		if !isBlank(l.text) {
			last = l.num
		}
	}
	if last < 0 {
		return bad(h.num, "the turn has a heading but no text")
	}
	signed := false
	for _, l := range lines[k+1:] {
		m := signOffRe.FindSubmatch(l.text)
		switch {
		case m == nil:
		case string(m[1]) != want.Agent:
			return bad(l.num, "a sign-off of %s in %s's turn", m[1], want.Agent)
		case l.num != last:
			return bad(l.num, "the sign-off is not the turn's last line")
		default:
			signed = true
		}
	}
	return Verdict{Outcome: VerdictAccepted, Signed: signed}
}

func firstDiffLine(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	return bytes.Count(a[:i], []byte("\n")) + 1
}

// Settled is the result of Settle.
type Settled struct {
	Verdict
	Entry    *EntryBrief // the recorded turn, when accepted
	Progress Progress
	Status   string
	Kept     string // where the agent's version was kept, when it was rejected
}

// Settle judges the file against the snapshot taken before the turn and
// makes the record whole under the lock: an accepted turn is stamped; a
// rejected one is moved aside to keep (the agent's version, for
// inspection) and the file is restored byte for byte.
func Settle(file string, snapshot []byte, want Expect, keep string) (Settled, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		meta = Meta{}
		if d, perr := Parse(file, snapshot); perr == nil {
			meta = d.Meta
		} else {
			return Settled{}, perr
		}
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return Settled{}, err
	}
	defer lock.Unlock()
	var before Progress
	if bd, err := Parse(file, snapshot); err == nil {
		// A turn stamped with the wrong number would never verify: that is
		// the caller's mistake, not the agent's, and nothing is touched.
		if before = bd.Progress(); want.Turn != before.NextTurn || want.Agent != before.NextAgent {
			return Settled{}, fmt.Errorf("settle %s: expected turn %d by %s, but the record's next turn is %d by %s", file, want.Turn, want.Agent, before.NextTurn, before.NextAgent)
		}
	}
	after, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Settled{}, err
	}
	v, d := Judge(file, snapshot, after, want)
	st, err := LoadState(dir)
	if err != nil {
		return Settled{}, err
	}
	if v.Outcome != VerdictAccepted {
		return restore(file, dir, snapshot, after, keep, v, st)
	}
	if !v.Stamped {
		if err := stampTail(file, d); err != nil {
			return Settled{}, err
		}
		if d, err = Load(file); err != nil {
			return Settled{}, err
		}
	}
	e := &d.Entries[len(d.Entries)-1]
	prog := d.Progress()
	if err := recordAppended(dir, &d.Meta, st, prog, e.Brief(), DebateStatus(&d.Meta, before, st)); err != nil {
		return Settled{}, err
	}
	return Settled{Verdict: v, Entry: e.Brief(), Progress: prog, Status: DebateStatus(&d.Meta, prog, st)}, nil
}

// stampTail appends the marker for the unstamped turn in d's tail.
func stampTail(file string, d *Doc) error {
	content := bytes.TrimRight(d.Tail, "\r\n\t ")
	content = append(append([]byte(nil), content...), '\n')
	last := d.Progress()
	mk := Marker{Seq: last.Seq + 1, Turn: last.NextTurn, Agent: last.NextAgent, At: time.Now(), Prev: last.Hash}
	line := stamp(content, &mk)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	// Trailing blank lines after the turn are dropped so the sign-off
	// stays the line before the marker. The turn and its marker are
	// written over the tail first and the rest cut after: a crash in
	// between leaves the agent's text in the file (a torn tail at worst),
	// never a file cut short of it.
	rec := append(content, line...)
	if _, err := f.WriteAt(rec, d.TailOffset); err != nil {
		return fmt.Errorf("stamp turn %d: %w", mk.Turn, err)
	}
	if err := f.Truncate(d.TailOffset + int64(len(rec))); err != nil {
		return fmt.Errorf("stamp turn %d: %w", mk.Turn, err)
	}
	return f.Sync()
}

// restore puts the snapshot back, keeps what the agent left (if the file
// existed and differed) for inspection, and makes state.json and the
// doorbell agree with the restored record: a turn the agent posted with
// `walkie post` during a rejected attempt is gone again.
func restore(file, dir string, snapshot, after []byte, keep string, v Verdict, st *State) (Settled, error) {
	out := Settled{Verdict: v}
	if keep != "" && after != nil && !bytes.Equal(snapshot, after) {
		if err := WriteFileAtomic(keep, after, 0o644); err != nil {
			return out, fmt.Errorf("keep the agent's version: %w", err)
		}
		out.Kept = keep
	}
	if after == nil || !bytes.Equal(snapshot, after) {
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(file); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := WriteFileAtomic(file, snapshot, mode); err != nil {
			return out, fmt.Errorf("restore %s: %w", file, err)
		}
	}
	d, err := Parse(file, snapshot)
	if err != nil {
		return out, err
	}
	out.Progress = d.Progress()
	out.Status = DebateStatus(&d.Meta, out.Progress, st)
	if st.LastSeq != out.Progress.Seq || (st.LastHash != "" && st.LastHash != out.Progress.Hash) {
		var last *EntryBrief
		if n := len(d.Entries); n > 0 {
			last = d.Entries[n-1].Brief()
		}
		if err := recordAppended(dir, &d.Meta, st, out.Progress, last, out.Status); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Discard voids an attempt whatever it wrote (the debate was halted, or
// the controller interrupted): under the lock, the file goes back to the
// snapshot byte for byte and the agent's version, if different, is kept.
func Discard(file string, snapshot []byte, keep string) (Settled, error) {
	d, err := Parse(file, snapshot)
	if err != nil {
		return Settled{}, err
	}
	dir := StateDir(file, d.Meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return Settled{}, err
	}
	defer lock.Unlock()
	after, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return Settled{}, err
	}
	st, err := LoadState(dir)
	if err != nil {
		return Settled{}, err
	}
	return restore(file, dir, snapshot, after, keep, Verdict{Outcome: "discarded"}, st)
}

// KeepPath is where a rejected version of turn is kept.
func KeepPath(dir string, turn int, agent string, attempt int) string {
	return filepath.Join(dir, "rejected", fmt.Sprintf("%04d-%s-%d.md", turn, strings.ReplaceAll(agent, "/", "_"), attempt))
}
