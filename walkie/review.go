package walkie

import (
	"fmt"
	"strings"
)

// What a review thread's record says: its close, its last verdict, what
// the last commit it names is, and the merge gate.

// Text is an entry's text as a person reads it in a list: the body
// without its trailer lines and sign-off, blank lines at both ends
// removed.
func (e *Entry) Text() string {
	unsigned, _ := SplitSignOff(e.Body)
	lines := strings.Split(strings.TrimRight(string(unsigned), "\r\n\t "), "\n")
	if text, _, _, pr := splitTrailers(lines); pr == nil && !e.Marker.Tags.IsZero() {
		lines = text
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// FirstLine is the first line of the entry's text.
func FirstLine(e *Entry) string {
	t := e.Text()
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[:i]
	}
	return strings.TrimSpace(strings.TrimSuffix(t, "\r"))
}

// Closing is the turn that closed the thread, or nil.
func (d *Doc) Closing() *Entry {
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if e := &d.Entries[i]; e.Kind == KindTurn {
			if e.Marker.Tags.Type == TypeClose {
				return e
			}
			return nil
		}
	}
	return nil
}

// ClosedWhy is a closed thread's outcome as a status line gives it
// after the status: "by codex in turn 5: merged as def4567".
func (d *Doc) ClosedWhy() string {
	e := d.Closing()
	if e == nil {
		return ""
	}
	why := fmt.Sprintf("by %s in turn %d", e.Agent, e.Turn)
	if first := FirstLine(e); first != "" {
		why += ": " + Clip(first, 120)
	}
	return why
}

// LastCommitRef is the newest commit a recorded entry cites (its first
// commit ref), or nil: where the next worktree of a review thread starts.
func (d *Doc) LastCommitRef() *Ref {
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if c := d.Entries[i].Marker.Tags.Commits(); len(c) > 0 {
			return &c[0]
		}
	}
	return nil
}

// IsFullID reports whether sha is a whole object id (SHA-1 or SHA-256),
// not an abbreviation another commit can come to share.
func IsFullID(sha string) bool { return shaRe.MatchString(sha) && (len(sha) == 40 || len(sha) == 64) }

// abbreviated is the first commit t cites by an abbreviated id, or nil.
func abbreviated(t Tags) *Ref {
	for _, r := range t.Commits() {
		if !IsFullID(r.SHA) {
			return &r
		}
	}
	return nil
}

// citesOnly reports whether t cites commits and every one of them is sha.
func citesOnly(t Tags, sha string, same SameCommit) (bool, error) {
	commits := t.Commits()
	if len(commits) == 0 {
		return false, nil
	}
	for _, c := range commits {
		ok, err := same(c.SHA, sha)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func refList(refs []Ref) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.String()
	}
	return out
}
