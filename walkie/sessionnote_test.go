package walkie

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A note is read back only for the session it names, and one that an
// agent replaced with garbage, an endless file or a link is no note.
func TestSessionNote(t *testing.T) {
	dir := t.TempDir()
	want := SessionNote{Session: "abc123", Pid: 4242, StartTicks: 99}
	must(t, NoteSession(dir, want))
	if got := LoadSessionNote(dir, "abc123"); got == nil || *got != want {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	if got := LoadSessionNote(dir, "other"); got != nil {
		t.Errorf("another session's read gave %+v", got)
	}
	if got := LoadSessionNote(dir, ""); got != nil {
		t.Errorf("an attempt without a session id gave %+v", got)
	}
	path := filepath.Join(dir, sessionNoteFile)
	for name, content := range map[string][]byte{
		"garbage":  []byte("{not json"),
		"too long": append([]byte(`{"session":"abc123","pid":4242,"start_ticks":99}`), bytes.Repeat([]byte(" "), maxSessionNote)...),
		"no pid":   []byte(`{"session":"abc123","pid":0}`),
	} {
		must(t, os.WriteFile(path, content, 0o600))
		if got := LoadSessionNote(dir, "abc123"); got != nil {
			t.Errorf("%s: read as %+v", name, got)
		}
	}
}
