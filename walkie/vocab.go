package walkie

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The entry vocabulary of format 3 (docs/format.md, "Entry types and
// refs"): an entry may say what it is (its type; a verdict also says which
// way it goes) and which commits and paths it is about (its refs). Both are
// written twice, as trailer lines at the end of the entry's text, which a
// person reads, and as marker fields, which the chain covers and walkie
// reads; Verify checks that the two agree.

// FormatTyped is the format that adds entry types and refs, and the front
// matter keys of review threads (repo, require_refs, fresh_verdicts, git,
// workspace: worktree, base). It reads every record of formats 1 and 2 as
// they are; a file that uses any of it says `walkie: 3`, so an older
// walkie refuses it by its version instead of misreading its markers.
const FormatTyped = 3

// Entry types.
const (
	TypeReviewRequest = "review-request" // please review this commit
	TypeVerdict       = "verdict"        // approve, or changes-requested
	TypeFixReport     = "fix-report"     // the changes asked for are in this commit
	TypeQuestion      = "question"
	TypeInfo          = "info"
	TypeClose         = "close" // ends the thread as closed; its text is the outcome
	TypeAck           = "ack"   // a person has read the verdict (supervisor entries only)
)

// EntryTypes lists the types in the order the docs give them.
var EntryTypes = []string{TypeReviewRequest, TypeVerdict, TypeFixReport, TypeQuestion, TypeInfo, TypeClose, TypeAck}

// The two ways a review's verdict goes (not to be confused with the
// judge's Verdict on an agent's turn).
const (
	VerdictApprove          = "approve"
	VerdictChangesRequested = "changes-requested"
)

// Verdicts lists them.
var Verdicts = []string{VerdictApprove, VerdictChangesRequested}

// participantTypes and supervisorTypes are the types each kind of author
// may give: a person acknowledges and asks, the parties review and close.
var (
	participantTypes = []string{TypeReviewRequest, TypeVerdict, TypeFixReport, TypeQuestion, TypeInfo, TypeClose}
	supervisorTypes  = []string{TypeQuestion, TypeInfo, TypeAck}
)

// DefaultRequireRefs are the types that must carry a ref unless the front
// matter's require_refs says otherwise.
var DefaultRequireRefs = []string{TypeVerdict, TypeFixReport}

// maxRefs bounds the refs of one entry: the marker is one line.
const maxRefs = 16

// Tags are what an entry says it is: its type, a verdict's direction, and
// the refs it cites. The zero value is an untyped entry.
type Tags struct {
	Type    string
	Verdict string // set only when Type is verdict
	Refs    []Ref
}

// IsZero reports an untyped entry without refs.
func (t Tags) IsZero() bool { return t.Type == "" && t.Verdict == "" && len(t.Refs) == 0 }

// Equal reports whether two entries say the same.
func (t Tags) Equal(o Tags) bool {
	return t.Type == o.Type && t.Verdict == o.Verdict && slices.Equal(t.Refs, o.Refs)
}

// Kind names the tags as a person reads them: "verdict changes-requested",
// "fix-report", "" for an untyped entry.
func (t Tags) Kind() string {
	if t.Verdict != "" {
		return t.Type + " " + t.Verdict
	}
	return t.Type
}

// Commits are the refs that name commits, in the order given.
func (t Tags) Commits() []Ref {
	var out []Ref
	for _, r := range t.Refs {
		if r.IsCommit() {
			out = append(out, r)
		}
	}
	return out
}

// RefStrings are the refs as written.
func (t Tags) RefStrings() []string {
	out := make([]string, len(t.Refs))
	for i, r := range t.Refs {
		out[i] = r.String()
	}
	return out
}

// Ref names something in the repository a record is about: a commit on a
// branch (`main@abc1234`), a commit (`abc1234`), or a path (`docs/api.md`).
type Ref struct {
	Branch string // with SHA: the branch the commit is on
	SHA    string // lower-case hex, 7 to 64 digits (abbreviated, SHA-1 or SHA-256)
	Path   string // relative to the repository's top; set alone
}

// IsCommit reports whether r names a commit (with or without its branch).
func (r Ref) IsCommit() bool { return r.SHA != "" }

// String is the ref as it is written in a marker and a trailer.
func (r Ref) String() string {
	switch {
	case r.Branch != "":
		return r.Branch + "@" + r.SHA
	case r.SHA != "":
		return r.SHA
	}
	return r.Path
}

var (
	shaRe     = regexp.MustCompile(`^[0-9a-f]{7,64}$`)
	refCharRe = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)
)

// maxRefLen bounds one ref.
const maxRefLen = 200

// ParseRef reads one ref. A word of 7 to 64 lower-case hex digits is a
// commit; BRANCH@HEX a commit on a branch; anything else a path, which
// must be relative and stay inside the repository (write `./abc1234` for
// a file whose name looks like a commit). Refs hold no spaces or commas,
// so a marker and a trailer can list them.
func ParseRef(s string) (Ref, error) {
	switch {
	case s == "":
		return Ref{}, fmt.Errorf("an empty ref")
	case len(s) > maxRefLen:
		return Ref{}, fmt.Errorf("ref %q is longer than %d bytes", Clip(s, 40), maxRefLen)
	case shaRe.MatchString(s):
		return Ref{SHA: s}, nil
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		branch, sha := s[:i], s[i+1:]
		if !shaRe.MatchString(sha) {
			return Ref{}, fmt.Errorf("ref %q: after the @ comes the commit, 7 to 64 lower-case hex digits (e.g. main@3f2a9c1)", s)
		}
		if err := checkBranchName(branch); err != nil {
			return Ref{}, fmt.Errorf("ref %q: %w", s, err)
		}
		return Ref{Branch: branch, SHA: sha}, nil
	}
	if err := checkPath(s); err != nil {
		return Ref{}, fmt.Errorf("ref %q: %w", s, err)
	}
	return Ref{Path: s}, nil
}

// checkBranchName holds a branch to the part of git's rules a marker
// needs: no spaces, commas or control characters (refCharRe), and none of
// the forms git refuses for a branch.
func checkBranchName(b string) error {
	switch {
	case b == "":
		return fmt.Errorf("no branch before the @")
	case !refCharRe.MatchString(b):
		return fmt.Errorf("the branch may hold only letters, digits and . _ / + -")
	case strings.HasPrefix(b, "-"), strings.HasPrefix(b, "/"), strings.HasSuffix(b, "/"), strings.HasSuffix(b, "."),
		strings.HasSuffix(b, ".lock"), strings.Contains(b, ".."), strings.Contains(b, "//"), strings.Contains(b, "/."), strings.HasPrefix(b, "."):
		return fmt.Errorf("%q is not a branch name git accepts", b)
	}
	return nil
}

// checkPath keeps a path ref relative and inside the repository.
func checkPath(p string) error {
	if !refCharRe.MatchString(p) {
		return fmt.Errorf("a path ref may hold only letters, digits and . _ / + - (no spaces)")
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("a path ref is relative to the repository's top, not absolute")
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("a path ref stays inside the repository (no ..)")
		}
	}
	return nil
}

// parseRefList reads refs separated by commas and/or spaces, as a
// trailer or --refs gives them.
func parseRefList(s string) ([]Ref, error) {
	var out []Ref
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		r, err := ParseRef(f)
		if err != nil {
			return nil, err
		}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("ref %s is given twice", f)
		}
		out = append(out, r)
	}
	if len(out) > maxRefs {
		return nil, fmt.Errorf("%d refs, more than the %d an entry may cite", len(out), maxRefs)
	}
	return out, nil
}

// ParseRefs reads a list of refs separated by commas or spaces (walkie
// post --refs).
func ParseRefs(s string) ([]Ref, error) { return parseRefList(s) }

// checkTagValues checks the values of tags, whoever wrote them: a known
// type, a verdict exactly when the type is verdict.
func checkTagValues(t Tags) error {
	switch {
	case t.Type == "" && t.Verdict != "":
		return fmt.Errorf("a verdict (%s) needs the type verdict", t.Verdict)
	case t.Type != "" && !slices.Contains(EntryTypes, t.Type):
		return fmt.Errorf("%q is not an entry type (types: %s)", t.Type, strings.Join(EntryTypes, ", "))
	case t.Type == TypeVerdict && t.Verdict == "":
		return fmt.Errorf("a verdict says which way it goes: %s", strings.Join(Verdicts, " or "))
	case t.Type != TypeVerdict && t.Verdict != "":
		return fmt.Errorf("only a verdict says %s", t.Verdict)
	case t.Verdict != "" && !slices.Contains(Verdicts, t.Verdict):
		return fmt.Errorf("%q is not a verdict (%s)", t.Verdict, strings.Join(Verdicts, " or "))
	case len(t.Refs) > maxRefs:
		return fmt.Errorf("%d refs, more than the %d an entry may cite", len(t.Refs), maxRefs)
	}
	return nil
}

// checkTagAuthor checks that the author may give the type: ack is a
// person's, the review types the parties'.
func checkTagAuthor(t Tags, supervisor bool) error {
	switch {
	case t.Type == "":
	case supervisor && !slices.Contains(supervisorTypes, t.Type):
		return fmt.Errorf("a supervisor entry cannot be of type %s (a person's types: %s; a person stops a thread with walkie halt)", t.Type, strings.Join(supervisorTypes, ", "))
	case !supervisor && !slices.Contains(participantTypes, t.Type):
		return fmt.Errorf("only a supervisor entry is of type %s: a participant's types are %s", t.Type, strings.Join(participantTypes, ", "))
	}
	return nil
}

// appendMarkerFields writes the tags' marker fields, in their one order:
// ` type=T verdict=V refs=R1,R2`, each only when set.
func (t Tags) appendMarkerFields(b []byte) []byte {
	if t.Type != "" {
		b = append(b, " type="...)
		b = append(b, t.Type...)
	}
	if t.Verdict != "" {
		b = append(b, " verdict="...)
		b = append(b, t.Verdict...)
	}
	if len(t.Refs) > 0 {
		b = append(b, " refs="...)
		for i, r := range t.Refs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, r.String()...)
		}
	}
	return b
}

// setMarkerField reads one tag field of a marker. A marker is rebuilt
// from its fields for hashing, so each value must be exactly the form
// walkie writes.
func (t *Tags) setMarkerField(key, v string) error {
	if v == "" {
		return fmt.Errorf("no value")
	}
	switch key {
	case "type":
		t.Type = v
	case "verdict":
		t.Verdict = v
	case "refs":
		refs := strings.Split(v, ",")
		seen := map[string]bool{}
		for _, s := range refs {
			r, err := ParseRef(s)
			if err != nil {
				return err
			}
			if seen[s] {
				return fmt.Errorf("ref %s is given twice", s)
			}
			seen[s] = true
			t.Refs = append(t.Refs, r)
		}
	}
	return nil
}
