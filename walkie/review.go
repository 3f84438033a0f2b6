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
	s := strings.TrimRight(string(e.Body), "\r\n\t ")
	lines := strings.Split(s, "\n")
	if n := len(lines); n > 0 && signOffRe.MatchString(strings.TrimSuffix(lines[n-1], "\r")) {
		lines = lines[:n-1]
	}
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

// Gate is the merge gate's finding for a commit.
type Gate struct {
	Open    bool
	Why     string
	Verdict *Entry // the last verdict, when there is one
	Ack     *Entry // the supervisor's ack of it, when there is one
}

// SameCommit tells whether a ref's sha and the gate's sha name one commit.
type SameCommit func(refSHA, sha string) (bool, error)

// SamePrefix compares two shas as written: one is the start of the
// other (both at least 7 hex digits). Without a repository to ask, an
// abbreviated sha is all there is to go on.
func SamePrefix(a, b string) (bool, error) {
	if !shaRe.MatchString(a) || !shaRe.MatchString(b) {
		return false, nil
	}
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a), nil
}

// MergeGate decides whether sha may be merged: the record's last verdict
// approves exactly that commit (every commit it cites is sha), and after
// it a supervisor entry of type ack cites sha too: a person read the
// verdict. Both must name the commit by its full id: an abbreviation
// that is the approved commit's today may be another's tomorrow. same
// compares commits (through the bound repository, else SamePrefix).
func (d *Doc) MergeGate(sha string, same SameCommit) (Gate, error) {
	var g Gate
	at := -1
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if e := &d.Entries[i]; e.Kind == KindTurn && e.Marker.Tags.Type == TypeVerdict {
			g.Verdict, at = e, i
			break
		}
	}
	if g.Verdict == nil {
		g.Why = "no verdict is recorded"
		return g, nil
	}
	v := g.Verdict
	who := fmt.Sprintf("the last verdict (turn %d by %s, seq %d)", v.Turn, v.Agent, v.Marker.Seq)
	if v.Marker.Tags.Verdict != VerdictApprove {
		g.Why = fmt.Sprintf("%s requests changes", who)
		return g, nil
	}
	if r := abbreviated(v.Marker.Tags); r != nil {
		g.Why = fmt.Sprintf("%s names %s by an abbreviated id, which another commit can come to share: the gate counts only a verdict that names the commit by its full id (walkie records the full id in a record bound to a repository, repo:)", who, r)
		return g, nil
	}
	ok, err := citesOnly(v.Marker.Tags, sha, same)
	if err != nil || !ok {
		g.Why = fmt.Sprintf("%s approves %s, not %s", who, orWord(strings.Join(refList(v.Marker.Tags.Commits()), ", "), "no commit"), sha)
		return g, err
	}
	var short *Entry // an ack that would count but for an abbreviated id
	for i := at + 1; i < len(d.Entries); i++ {
		e := &d.Entries[i]
		if e.Kind != KindSupervisor || e.Marker.Tags.Type != TypeAck {
			continue
		}
		if ok, err := citesOnly(e.Marker.Tags, sha, same); err != nil {
			return g, err
		} else if ok && abbreviated(e.Marker.Tags) != nil {
			short = e
		} else if ok {
			g.Ack = e
		}
	}
	if g.Ack == nil && short != nil {
		g.Why = fmt.Sprintf("%s approves %s, but the supervisor's ack (seq %d) names %s by an abbreviated id, which another commit can come to share: post the ack again citing the full id (walkie post FILE --supervisor --type ack --refs %s)", who, sha, short.Marker.Seq, abbreviated(short.Marker.Tags), sha)
		return g, nil
	}
	if g.Ack == nil {
		g.Why = fmt.Sprintf("%s approves %s, but no person has acknowledged it: a supervisor entry of type ack citing %s must follow it (walkie post FILE --supervisor --type ack --refs %s)", who, sha, sha, sha)
		return g, nil
	}
	g.Open = true
	g.Why = fmt.Sprintf("%s approves %s, acknowledged by the supervisor (seq %d)", who, sha, g.Ack.Marker.Seq)
	return g, nil
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
