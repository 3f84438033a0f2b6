package controller

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/walkie-sh/walkie/walkie"
)

// updateState changes the control state as walkie.ChangeState does, in a
// line of the log named op (see changeState).
func (c *controller) updateState(op string, change func(d *walkie.Doc, raw []byte, s *walkie.State) error) (*walkie.State, error) {
	return c.changeState(walkie.StateChange{Op: op}, change)
}

// changeState is walkie.ChangeState with the run's cached parse of the
// record and its open log, ringing the doorbell only when the debate's
// status changed. change gets the record as parsed and its bytes, both
// read under the lock.
func (c *controller) changeState(o walkie.StateChange, change func(d *walkie.Doc, raw []byte, s *walkie.State) error) (*walkie.State, error) {
	o.Load, o.OnlyStatus, o.Log = c.load, true, c.stateLog
	st, _, err := walkie.ChangeState(c.file, c.dir, o, change)
	return st, err
}

// load reads and parses the record. The record is read several times
// between two turns (to decide, to begin) and parsing is the controller's
// main cost, growing with the file, so the last parse is reused while the
// bytes are the same. The Doc must not be changed. Only the run's own
// goroutine may call it.
func (c *controller) load() (*walkie.Doc, []byte, error) {
	raw, err := walkie.ReadRegular(c.file) // the agent may have left a pipe
	if err != nil {
		return nil, nil, err
	}
	if c.parsed != nil && bytes.Equal(raw, c.parsedRaw) {
		return c.parsed, c.parsedRaw, nil
	}
	d, err := walkie.Parse(c.file, raw)
	if err != nil {
		return nil, nil, err
	}
	c.parsed, c.parsedRaw = d, raw
	return d, raw, nil
}

// verify is d.Verify, asked once per parse: load hands back the same
// parse only for the same bytes, and Verify depends on nothing else, so
// a record that did not change between two looks is not hashed again. A
// record that changed by a single byte is parsed and verified whole.
func (c *controller) verify(d *walkie.Doc) error {
	if d == c.verified {
		return nil
	}
	if err := d.Verify(); err != nil {
		return err
	}
	c.verified = d
	return nil
}

// restoreTarget is what the record goes back to after an attempt a
// controller did not live to settle: everything stamped that continues the
// chain the attempt started from (a post or a note that a person made
// while the controller was gone was acknowledged, and stays), without the
// unstamped tail the agent left. When the record itself does not hold
// such a chain (the agent changed it above its turn), the snapshot does.
// cur is the record as readRecovering read it.
func restoreTarget(file string, cur []byte, a *walkie.Attempt, st *walkie.State) ([]byte, error) {
	if d, err := walkie.Parse(file, cur); err == nil && d.Verify() == nil && a.Hash != "" && continues(d, a.Seq, a.Hash) {
		return cur[:d.TailOffset], nil
	}
	return readSnapshot(file, cur, a, st)
}

// MaxRecoverGrowth bounds what recovery reads of a record beyond the size
// it had when the interrupted attempt began: the agent's turn (at most
// max_turn_bytes) and whatever people posted while no controller ran fit
// in it many times over. An agent that left more is not read at all.
const MaxRecoverGrowth = 64 << 20

// readRecovering reads the record a controller died under, at most
// MaxRecoverGrowth bytes beyond the size it had when attempt a began. A
// bigger record is refused whole, touching nothing: what the agent left
// is the person's to look at, not walkie's to cut.
func readRecovering(file string, a *walkie.Attempt) ([]byte, error) {
	// ReadMeta refuses a link or a pipe, as walkie.Load does, and reads
	// only the front matter.
	if _, err := walkie.ReadMeta(file); err != nil {
		return nil, err
	}
	limit := max(a.Size, 0) + MaxRecoverGrowth
	b, size, err := readBounded(file, limit)
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, &walkie.InputError{File: file,
			Msg: fmt.Sprintf("is %d bytes or more: it grew by more than %d bytes (the most recovery reads) during turn %d by %s, which a controller did not live to finish; walkie read none of it and changed nothing",
				size, MaxRecoverGrowth, a.Turn, a.Agent),
			Fix: fmt.Sprintf("keep a copy (cp %s %s.agent), cut it back to the %d bytes it held when the turn began (truncate -s %d %s) or restore it from git, check it with walkie verify, and run again",
				file, file, a.Size, a.Size, file)}
	}
	return b, nil
}

// readBounded reads path when it holds at most limit bytes, and says how
// big it is: more than limit when it was not read (or was cut: the file
// may grow while it is read; the bound holds anyway).
func readBounded(path string, limit int64) ([]byte, int64, error) {
	f, err := walkie.OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if fi.Size() > limit {
		return nil, fi.Size(), nil
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	if size := int64(len(b)); size > limit {
		return b[:limit], size, nil
	}
	return b, int64(len(b)), nil
}

// readHead reads the first n bytes of path, or all of it when shorter.
func readHead(path string, n int64) ([]byte, error) {
	f, err := walkie.OpenRegular(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, n))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// continues reports whether d's chain has hash after entry seq.
func continues(d *walkie.Doc, seq int, hash string) bool {
	switch n := len(d.Entries); {
	case n == seq:
		return d.Progress().Hash == hash
	case n > seq:
		return d.Entries[seq].Marker.Prev == hash
	}
	return false
}

// readSnapshot returns the record as it stood before the interrupted
// attempt a. The snapshot file is written without fsync, so after a
// machine crash it may be short or stale: it is used only if it verifies
// and matches what the state recorded (its size, last sequence number and
// chain hash).
// Otherwise the record's own first a.Size bytes are used if they match:
// an agent that only appended left them as they were.
func readSnapshot(file string, cur []byte, a *walkie.Attempt, st *walkie.State) ([]byte, error) {
	matches := func(b []byte) bool {
		if int64(len(b)) != a.Size {
			return false
		}
		d, err := walkie.Parse(file, b)
		if err != nil || d.Verify() != nil {
			return false
		}
		p := d.Progress()
		if a.Hash != "" {
			return p.Seq == a.Seq && p.Hash == a.Hash
		}
		// Recorded by an older walkie, without the chain hash.
		return p.Seq == a.Seq && (st.LastHash == "" || p.Hash == st.LastHash)
	}
	// The snapshot is walkie's, but it sits in a directory the agent can
	// write: read no more of it than it must hold.
	if b, size, err := readBounded(a.Snapshot, max(a.Size, 0)); err == nil && size == a.Size && matches(b) {
		return b, nil
	}
	if int64(len(cur)) >= a.Size && matches(cur[:a.Size]) {
		return cur[:a.Size], nil
	}
	return nil, fmt.Errorf("the record was changed above the turn that was being written when a controller stopped (turn %d by %s), and the copy taken before it (%s) is gone or damaged: nothing trustworthy to restore it to. "+
		"Run `walkie verify %s` to see where; restore the record from git or a copy of yours, then run again", a.Turn, a.Agent, a.Snapshot, file)
}
