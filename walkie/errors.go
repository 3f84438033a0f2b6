package walkie

import (
	"cmp"
	"errors"
	"fmt"
)

// InputError is bad input in a walkie file: it names the file, the line
// and what to do about it. Nothing on disk is changed when one is returned.
type InputError struct {
	File string
	Line int // 1-based; 0 when the problem is not tied to a line
	Msg  string
	Fix  string // what the user should do; may be empty
	// marker: the line is a marker line walkie cannot read, which in a
	// turn an agent appended means a marker it wrote itself.
	marker bool
}

func (e *InputError) Error() string {
	if e.Fix == "" {
		return fmt.Sprintf("%s: %s", where(e.File, e.Line), e.Msg)
	}
	return fmt.Sprintf("%s: %s (%s)", where(e.File, e.Line), e.Msg, e.Fix)
}

// where is "file:line", or "file" when the line is not known.
func where(file string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", file, line)
	}
	return file
}

// RefusedError is a post the enforced writer would not accept. It says why
// and, where it helps, whose turn it is.
type RefusedError struct {
	// Op is what was refused: "post" when empty, else "halt", "extend",
	// "approve"… The message names it, so a refused halt does not read
	// as a refused post.
	Op     string
	Reason string
	Whose  string // the agent whose turn it is, if the debate is open
	// OutOfTurn is set when the post would be accepted in its author's
	// turn, and Busy when an agent's attempt is running: the refusals that
	// waiting can cure.
	OutOfTurn, Busy bool
}

func (e *RefusedError) Error() string {
	op := cmp.Or(e.Op, "post")
	if e.Whose == "" {
		return op + " refused: " + e.Reason
	}
	return fmt.Sprintf("%s refused: %s (it is %s's turn)", op, e.Reason, e.Whose)
}

// TornTailError reports bytes after the last stamped entry that are not a
// complete entry: a write cut short by a crash, or an agent's turn that was
// never recorded. They are left alone until the user asks for a repair.
type TornTailError struct {
	File  string
	Line  int
	Bytes int
}

func (e *TornTailError) Error() string {
	return fmt.Sprintf("%s: %d unstamped bytes after the last recorded entry (a write cut short, or a turn never recorded); run `walkie repair %s` to move them to a side file",
		where(e.File, e.Line), e.Bytes, e.File)
}

// ChainError is the first entry whose marker does not match the bytes of
// the record: an edit, a reorder, a removal or a truncation.
type ChainError struct {
	File string
	Line int // the entry's heading; 0 when the entry is missing from the file
	Seq  int
	Msg  string
	Fix  string
}

func (e *ChainError) Error() string {
	s := fmt.Sprintf("%s: entry %d: %s", where(e.File, e.Line), e.Seq, e.Msg)
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	return s
}

// fixRestore is what to do about a record changed behind walkie's back.
const fixRestore = "the record was changed by hand: restore it from git, or from the copies under .walkie/; corrections are new entries, never edits"

// ErrLocked is returned when a lock is held by another process and the
// caller asked not to wait.
var ErrLocked = errors.New("locked by another process")
