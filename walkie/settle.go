package walkie

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Settled is the result of Settle.
type Settled struct {
	Verdict
	Entry    *EntryBrief // the recorded turn, when accepted
	Progress Progress
	Status   string
	// Before is the debate's status before the attempt. Settle and
	// Discard do not log: the caller logs the attempt's end with the
	// record as they left it (StateChange.Settled), in one line.
	Before string
	Kept   string // where the agent's version was kept, when it was rejected
	// Raw and Doc are the record as Settle left it, and its parse: a
	// caller that reads the same bytes next need not parse them again.
	Raw []byte
	Doc *Doc
}

// Settle judges the file against the snapshot taken before the turn and
// makes the record whole under the lock: an accepted turn is stamped (and
// the doorbell rung); a rejected one is moved aside to keep (the agent's
// version, for inspection) and the file is restored byte for byte. It
// logs nothing: the caller logs the attempt's end with the Settled it
// returns (StateChange.Settled), one synced line for the record as it
// stands, the attempt's record and its outcome. Until then the log is
// behind the record by the stamped entry, which Reconcile, or recovery
// of the attempt, catches up after a crash.
func Settle(file string, snapshot []byte, want Expect, keep string) (Settled, error) {
	// The snapshot, not what the agent left, says which debate this is
	// and how big a turn may be: an agent could edit the front matter.
	bd, perr := want.Before, error(nil)
	if bd == nil {
		bd, perr = Parse(file, snapshot)
	}
	var meta Meta
	var err error
	if perr == nil {
		meta = bd.Meta
	} else if meta, err = ReadMeta(file); err != nil {
		return Settled{}, perr
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return Settled{}, err
	}
	defer lock.Unlock()
	var before Progress
	if perr == nil {
		// A turn stamped with the wrong number would never verify: that is
		// the caller's mistake, not the agent's, and nothing is touched.
		if before = bd.Progress(); want.Turn != before.NextTurn || want.Agent != before.NextAgent {
			return Settled{}, fmt.Errorf("settle %s: expected turn %d by %s, but the record's next turn is %d by %s", file, want.Turn, want.Agent, before.NextTurn, before.NextAgent)
		}
	}
	av, err := readAgentVersion(file, JudgeLimit(&meta, snapshot))
	if err != nil {
		return Settled{}, err
	}
	l := OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return Settled{}, err
	}
	v, d := judgeVersion(file, bd, snapshot, av, want)
	if v.Stamped {
		// walkie post logs every entry it appends; one
		// it never recorded was stamped by the agent, with a valid hash.
		if e := &d.Entries[len(d.Entries)-1]; e.Marker.Seq != st.LastSeq || (st.LastHash != "" && st.LastHash != e.Marker.Hash) {
			v = Verdict{Outcome: VerdictMalformed, Line: e.MarkLine, Detail: forgedDetail(e.MarkLine, "walkie post never recorded it")}
		}
	}
	if v.Outcome == VerdictAccepted {
		v = checkTurnRefs(&meta, v, want.Refs)
	}
	// After the refs are resolved (a bound record names commits in full):
	// an agent's abbreviation of the branch's head left unresolved (an
	// unbound record) is still the same ref.
	if v.Outcome == VerdictAccepted && !v.Stamped && want.Extra != nil && meta.IsTyped() {
		v.Tags.Refs = withCommitRef(v.Tags.Refs, *want.Extra)
	}
	if want.Tampered != "" && v.Outcome != VerdictTampered {
		v = Verdict{Outcome: VerdictTampered, Detail: want.Tampered}
	}
	if want.Refuse != "" && v.Outcome == VerdictAccepted {
		v = Verdict{Outcome: VerdictMalformed, Detail: want.Refuse}
	}
	if v.Outcome != VerdictAccepted {
		return restore(file, l, snapshot, av, keep, v, st)
	}
	raw := av.data // posted with walkie post: the file as the judge read it
	if !v.Stamped {
		if err := stampTail(file, d, v.Tags); err != nil {
			return Settled{}, err
		}
		if raw, err = readRecord(file); err != nil {
			return Settled{}, err
		}
		if d, err = Parse(file, raw); err != nil {
			return Settled{}, err
		}
	}
	e := &d.Entries[len(d.Entries)-1]
	prog := d.Progress()
	out := Settled{Verdict: v, Entry: e.Brief(), Progress: prog, Before: DebateStatus(&d.Meta, before, st), Raw: raw, Doc: d}
	st.Settle(&d.Meta, prog, out.Before)
	out.Status = DebateStatus(&d.Meta, prog, st)
	if err := Ring(dir, &d.Meta, prog, st, e.Brief()); err != nil {
		return Settled{}, fmt.Errorf("entry %d is recorded but the doorbell was not rung: %w", prog.Seq, err)
	}
	return out, nil
}

// checkTurnRefs asks the repository about an accepted turn's refs: a
// ref that does not resolve, or a stale verdict, makes it malformed, and
// so does a repository that cannot be asked (the turn cannot be shown to
// obey the rules; the detail says why, and a retry may find git working).
func checkTurnRefs(meta *Meta, v Verdict, r RefResolver) Verdict {
	full, reason, err := ResolveRefs(meta, v.Tags, r)
	switch {
	case err != nil:
		return Verdict{Outcome: VerdictMalformed, Detail: "the turn's refs could not be checked: " + err.Error()}
	case reason != "":
		return Verdict{Outcome: VerdictMalformed, Detail: reason}
	}
	if !v.Stamped {
		v.Tags = full // stamped with the full ids, in its text too
	}
	return v
}

// stampTail appends the marker for the unstamped turn in d's tail, with
// the tags the judge read from its trailer lines.
func stampTail(file string, d *Doc, tags Tags) error {
	content := stampedText(d.Tail)
	if d.Meta.IsTyped() {
		if bt, _, _ := bodyTags(content); !bt.Equal(tags) {
			content = retrail(content, tags)
		}
	}
	last := d.Progress()
	mk := Marker{Seq: last.Seq + 1, Turn: last.NextTurn, Agent: last.NextAgent, At: time.Now(), Prev: last.Hash, Tags: tags}
	line := stamp(content, &mk, d.Meta.Walkie)
	f, err := openRecord(file, os.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Close()
	// The turn and its marker are
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

// stampedText is an accepted tail as it is stamped: trailing blank lines
// dropped, so the sign-off stays the line before the marker.
func stampedText(tail []byte) []byte {
	content := bytes.TrimRight(tail, "\r\n\t ")
	return append(append([]byte(nil), content...), '\n')
}

// agentVersion is what an attempt left at the record's path, read within
// a bound so a huge turn costs no more memory than a valid one.
type agentVersion struct {
	data    []byte      // the file's bytes; only the first limit when over
	size    int64       // the file's whole size
	over    bool        // bigger than the bound
	mode    fs.FileMode // its permission bits
	swapped string      // what stands there instead of a regular file ("a symbolic link to X")
	missing bool
}

// growthSlack is what a turn may add to the record besides its body: the
// blank lines and heading before it, a sign-off and a marker after it.
const growthSlack = 64 << 10

// JudgeLimit is the most the judge reads of what an attempt left (and a
// remote worker sends of it): the record before it, and one turn of the
// largest size the record allows.
func JudgeLimit(m *Meta, snapshot []byte) int64 {
	return int64(len(snapshot)) + int64(m.TurnLimit()) + growthSlack
}

// readAgentVersion reads what stands at file after an attempt, at most
// limit bytes of it, without following a link or blocking on a pipe.
func readAgentVersion(file string, limit int64) (agentVersion, error) {
	f, err := openRecord(file, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return agentVersion{missing: true}, nil
	}
	var ie *InputError
	if errors.As(err, &ie) {
		fi, lerr := os.Lstat(file)
		if lerr != nil {
			return agentVersion{missing: true}, nil
		}
		what := fileKind(fi.Mode())
		if target, lerr := os.Readlink(file); lerr == nil {
			what += " to " + target
		}
		return agentVersion{swapped: what}, nil
	}
	if err != nil {
		return agentVersion{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return agentVersion{}, fmt.Errorf("stat %s: %w", file, err)
	}
	av := agentVersion{size: fi.Size(), mode: fi.Mode().Perm()}
	// The file may still grow while it is read: the bound holds anyway.
	if av.data, err = io.ReadAll(io.LimitReader(f, limit+1)); err != nil {
		return agentVersion{}, fmt.Errorf("read %s: %w", file, err)
	}
	if int64(len(av.data)) > limit {
		av.data, av.over = av.data[:limit], true
		av.size = max(av.size, limit+1)
	}
	return av, nil
}

// judgeVersion is Judge for what readAgentVersion found; bd is the
// snapshot's parse, nil when it did not parse.
func judgeVersion(file string, bd *Doc, snapshot []byte, av agentVersion, want Expect) (Verdict, *Doc) {
	judge := func(after []byte) (Verdict, *Doc) {
		if bd == nil {
			return Judge(file, snapshot, after, want) // and its verdict on a snapshot that does not parse
		}
		return judgeParsed(file, bd, snapshot, after, want)
	}
	switch {
	case av.swapped != "":
		return Verdict{Outcome: VerdictTampered, Detail: fmt.Sprintf("the record was replaced by %s", av.swapped)}, nil
	case av.missing:
		return judge(nil)
	}
	v, d := judge(av.data)
	if av.over && v.Outcome != VerdictTampered {
		// Never judged whole: all that matters is that it is too big.
		line := bytes.Count(snapshot, []byte("\n")) + 1
		v, d = Verdict{Outcome: VerdictMalformed, Line: line, Detail: fmt.Sprintf("the turn added %d bytes to the file, more than one turn may (a body of at most %d bytes, max_turn_bytes); walkie did not read it all",
			av.size-int64(len(snapshot)), int64(len(av.data))-int64(len(snapshot))-growthSlack)}, nil
	}
	return v, d
}

// privateMode is the mode a record is restored with when walkie cannot
// know its own (the agent removed or replaced it): private, never wider.
const privateMode = 0o600

// restore puts the snapshot back, keeps what the agent left (if the file
// existed and differed) for inspection, and makes the log and the doorbell
// agree with the restored record: a turn the agent posted with `walkie
// post` during a rejected attempt is gone again (a rare line of its own;
// the caller's line for the attempt's end records the same). The kept
// copy and the restored record have the record's mode.
func restore(file string, l *Log, snapshot []byte, av agentVersion, keep string, v Verdict, st *State) (Settled, error) {
	out := Settled{Verdict: v}
	mode := av.mode
	if av.missing || av.swapped != "" {
		mode = privateMode
	}
	if err := keepVersion(file, snapshot, av, keep, mode); err != nil {
		return out, err
	} else if keep != "" && (av.swapped != "" || (!av.missing && !bytes.Equal(snapshot, av.data))) {
		out.Kept = keep
	}
	if av.missing || av.swapped != "" || av.over || !bytes.Equal(snapshot, av.data) {
		if err := WriteFileAtomic(file, snapshot, mode); err != nil {
			return out, fmt.Errorf("restore %s: %w", file, err)
		}
	}
	d, err := Parse(file, snapshot)
	if err != nil {
		return out, err
	}
	out.Raw, out.Doc = snapshot, d
	out.Progress = d.Progress()
	out.Status = DebateStatus(&d.Meta, out.Progress, st)
	out.Before = out.Status
	if st.LastSeq != out.Progress.Seq || (st.LastHash != "" && st.LastHash != out.Progress.Hash) {
		var last *EntryBrief
		if n := len(d.Entries); n > 0 {
			last = d.Entries[n-1].Brief()
		}
		if err := recordAppended(l.dir, l, &d.Meta, st, out.Progress, last, out.Status); err != nil {
			return out, err
		}
	}
	return out, nil
}

// keepVersion keeps what the agent left at keep: the bytes (only the
// first part of an oversized file, with a line saying what was cut), or
// whatever replaced the record, moved there as it is (a link stays a
// link, a directory a directory), so restoring never reads through it.
func keepVersion(file string, snapshot []byte, av agentVersion, keep string, mode fs.FileMode) error {
	switch {
	case av.missing:
		return nil
	case keep == "" && av.swapped != "":
		// Nowhere to keep it: a link or a pipe goes, so the restore can
		// rename the record into its place.
		_ = os.Remove(file)
		return nil
	case keep == "":
		return nil
	case av.swapped != "":
		if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
			return fmt.Errorf("keep the agent's version: %w", err)
		}
		if err := os.Rename(file, keep); err != nil {
			return fmt.Errorf("keep the agent's version (%s): %w", av.swapped, err)
		}
		return nil
	case bytes.Equal(snapshot, av.data) && !av.over:
		return nil
	}
	data := av.data
	if av.over {
		note := fmt.Sprintf("\n\n[walkie: the agent's version was %d bytes or more; only its first %d are kept here]\n", av.size, len(av.data))
		data = append(append([]byte(nil), av.data...), note...)
	}
	if err := WriteFileAtomic(keep, data, mode); err != nil {
		return fmt.Errorf("keep the agent's version: %w", err)
	}
	return nil
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
	av, err := readAgentVersion(file, JudgeLimit(&d.Meta, snapshot))
	if err != nil {
		return Settled{}, err
	}
	l := OpenLog(dir)
	defer l.Close()
	st, err := l.State()
	if err != nil {
		return Settled{}, err
	}
	return restore(file, l, snapshot, av, keep, Verdict{Outcome: "discarded"}, st)
}

// KeepPath is where a rejected version of turn is kept.
func KeepPath(dir string, turn int, agent string, attempt int) string {
	return filepath.Join(dir, "rejected", fmt.Sprintf("%04d-%s-%d.md", turn, strings.ReplaceAll(agent, "/", "_"), attempt))
}

// TurnIsIn reports whether the file holds a valid turn want on top of
// snapshot, reading no more of it than the judge would: the controller
// asks while the agent runs, on every quiet moment of the file.
func TurnIsIn(file string, snapshot []byte, want Expect) bool {
	d, err := Parse(file, snapshot)
	if err != nil {
		return false
	}
	av, err := readAgentVersion(file, JudgeLimit(&d.Meta, snapshot))
	if err != nil {
		return false
	}
	v, _ := judgeVersion(file, d, snapshot, av, want)
	return v.Outcome == VerdictAccepted
}

// withCommitRef is refs with the commit ref r added, unless a ref there
// names the same commit on the same branch, abbreviated or in full: then
// the longer of the two stands in its place, so the record names the
// commit once (issue 32 item 23: the agent's branch@abc1234 and walkie's
// branch@abc1234def56 were both kept, and a reviewer copying that Refs
// line was refused). Past maxRefs nothing is added.
func withCommitRef(refs []Ref, r Ref) []Ref {
	for i, have := range refs {
		if have.Branch != r.Branch || !have.IsCommit() {
			continue
		}
		switch {
		case strings.HasPrefix(r.SHA, have.SHA):
			out := slices.Clone(refs)
			out[i] = r
			return out
		case strings.HasPrefix(have.SHA, r.SHA):
			return refs
		}
	}
	if len(refs) >= maxRefs {
		return refs
	}
	return append(slices.Clone(refs), r)
}
