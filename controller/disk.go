package controller

import (
	"bytes"
	"fmt"
	"os"

	"github.com/walkie-sh/walkie/walkie"
)

// updateState changes the control state under the record lock, as
// walkie.UpdateState does, but rings the doorbell only when the debate's
// status changed. The doorbell shows whose turn it is and the status;
// the controller's own bookkeeping (the running attempt, retry counts,
// cost) is not on it, and each ring is two synced writes in the time
// between one agent's exit and the next one's start. change gets the
// record as parsed and its bytes, both read under the lock.
func (c *controller) updateState(change func(d *walkie.Doc, raw []byte, s *walkie.State) error) (*walkie.State, error) {
	lock, err := walkie.LockRecord(c.dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", c.file, err)
	}
	defer lock.Unlock()
	d, raw, err := c.load()
	if err != nil {
		return nil, err
	}
	st, err := walkie.LoadState(c.dir)
	if err != nil {
		return nil, err
	}
	p := d.Progress()
	before := walkie.DebateStatus(&d.Meta, p, st)
	if err := change(d, raw, st); err != nil {
		return nil, err
	}
	st.Settle(&d.Meta, p, before)
	if err := walkie.SaveState(c.dir, st); err != nil {
		return nil, err
	}
	if walkie.DebateStatus(&d.Meta, p, st) != before {
		var last *walkie.EntryBrief
		if n := len(d.Entries); n > 0 {
			last = d.Entries[n-1].Brief()
		}
		if err := walkie.Ring(c.dir, &d.Meta, p, st, last); err != nil {
			return st, err
		}
	}
	return st, nil
}

// load reads and parses the record. The record is read several times
// between two turns (to decide, to begin) and parsing is the controller's
// main cost, growing with the file, so the last parse is reused while the
// bytes are the same. The Doc must not be changed. Only the run's own
// goroutine may call it.
func (c *controller) load() (*walkie.Doc, []byte, error) {
	raw, err := os.ReadFile(c.file)
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
func restoreTarget(file string, a *walkie.Attempt, st *walkie.State) ([]byte, error) {
	cur, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if d, err := walkie.Parse(file, cur); err == nil && d.Verify() == nil && a.Hash != "" && continues(d, a.Seq, a.Hash) {
		return cur[:d.TailOffset], nil
	}
	return readSnapshot(file, cur, a, st)
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
	if b, err := os.ReadFile(a.Snapshot); err == nil && matches(b) {
		return b, nil
	}
	if int64(len(cur)) >= a.Size && matches(cur[:a.Size]) {
		return cur[:a.Size], nil
	}
	return nil, fmt.Errorf("the record was changed above the turn that was being written when a controller stopped (turn %d by %s), and the copy taken before it (%s) is gone or damaged: nothing trustworthy to restore it to. "+
		"Run `walkie verify %s` to see where; restore the record from git or a copy of yours, then run again", a.Turn, a.Agent, a.Snapshot, file)
}
