package walkie

import (
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
}

func (e *InputError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Fix == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s (%s)", loc, e.Msg, e.Fix)
}

// RefusedError is a post the enforced writer would not accept. It says why
// and, where it helps, whose turn it is.
type RefusedError struct {
	Reason string
	Whose  string // the agent whose turn it is, if any
}

func (e *RefusedError) Error() string {
	if e.Whose == "" {
		return "post refused: " + e.Reason
	}
	return fmt.Sprintf("post refused: %s (it is %s's turn)", e.Reason, e.Whose)
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
	return fmt.Sprintf("%s:%d: %d unstamped bytes after the last recorded entry (a write cut short, or a turn never recorded); run `walkie repair %s` to move them to a side file",
		e.File, e.Line, e.Bytes, e.File)
}

// ChainError is the first entry whose marker does not match the bytes of
// the record: an edit, a reorder, a removal or a truncation.
type ChainError struct {
	File string
	Line int
	Seq  int
	Msg  string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("%s:%d: entry %d: %s", e.File, e.Line, e.Seq, e.Msg)
}

// ErrLocked is returned when a lock is held by another process and the
// caller asked not to wait.
var ErrLocked = errors.New("locked by another process")
