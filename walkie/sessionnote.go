package walkie

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
)

// SessionNote names the process that leads the running attempt's session
// (its pid and start time), for the next controller to end the whole
// session should this one die. It is a file of its own, session.json,
// rather than a field of the state (a line of the log): it is written once the agent runs,
// and a third durable state write a turn cost more than the note is
// worth. It is never synced (RewriteUnsynced): a process identity means
// nothing after a reboot, and a controller killed at any moment leaves the
// old note or the new one, whole. Without one for the attempt (a
// controller killed before it could write it), recovery still finds the
// session's processes by the session id the attempt recorded before it
// started.
type SessionNote struct {
	Session    string `json:"session"` // the attempt's Session
	Pid        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// sessionNoteFile is the note's name in the state directory.
const sessionNoteFile = "session.json"

// maxSessionNote bounds what is read of the note, which sits in a
// directory an agent can write.
const maxSessionNote = 4 << 10

// NoteSession writes the running session's note.
func NoteSession(dir string, n SessionNote) error {
	b, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return RewriteUnsynced(filepath.Join(dir, sessionNoteFile), append(b, '\n'), 0o600)
}

// LoadSessionNote returns the note of the session with id session, or
// nil when there is none for it: none written yet, another attempt's, or
// one that cannot be read.
func LoadSessionNote(dir, session string) *SessionNote {
	if session == "" {
		return nil
	}
	f, err := os.Open(filepath.Join(dir, sessionNoteFile))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSessionNote+1))
	var n SessionNote
	if err != nil || len(b) > maxSessionNote || json.Unmarshal(b, &n) != nil || n.Session != session || n.Pid <= 0 {
		return nil
	}
	return &n
}
