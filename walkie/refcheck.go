package walkie

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The rules an entry's tags obey (docs/review-threads.md), enforced by the
// writer (Append) and by the judge (Judge for what the text says, Settle
// for what the repository says):
//
//   - tags only in format 3, each type by an author who may give it;
//   - an entry of a type in require_refs (by default a verdict and a
//     fix-report) cites at least one ref;
//   - in a record bound to a repository, every ref resolves there, and a
//     verdict names its branch's current head: a claim about a commit the
//     branch has moved past is stale, and refused with the head it is at.

// A RefResolver answers for the git repository a record is bound to.
// walkie runs no processes: the caller gives one (package gitrepo).
// Each method's error is for a repository that cannot be asked; a ref that
// names nothing is an answer, not an error.
type RefResolver interface {
	// Commit is the full sha of the commit sha (abbreviated or whole)
	// names, or "" when it names none. An abbreviated sha that is the
	// start of more than one commit is an error wrapping ErrAmbiguous.
	Commit(sha string) (string, error)
	// Head is the full sha branch points to now, or "" when there is no
	// such branch.
	Head(branch string) (string, error)
	// Contains reports whether the branch's history holds commit (a full
	// sha).
	Contains(branch, commit string) (bool, error)
	// HasPath reports whether path is in the repository's work tree or
	// in one of commits (full shas).
	HasPath(path string, commits []string) (bool, error)
	// Unchanged reports whether commit to is commit from, or descends
	// from it through commits that change nothing but walkie records
	// (*.walkie.md, .walkie/): with `git: commit` on the branch under
	// review, each entry moves the branch without changing its code.
	Unchanged(from, to string) (bool, error)
}

// ErrAmbiguous is a RefResolver's answer for an abbreviated sha that
// more than one commit starts with: it names none of them.
var ErrAmbiguous = errors.New("ambiguous")

// postTags reads the trailer lines at the end of a post's text (lines,
// without the sign-off), lays the post's own tags over them, checks the
// result, and returns the text the writer records: the text, then the
// trailers in their canonical form. It sets p.Tags.
func postTags(meta *Meta, p *Post, lines []string) ([]byte, error) {
	if !meta.IsTyped() {
		if !p.Tags.IsZero() {
			return nil, fmt.Errorf("a type or refs need format %d, and this file says walkie: %d: start a review thread with walkie thread new, or create the file with walkie init --typed", FormatTyped, meta.Walkie)
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	}
	text, bt, _, pr := splitTrailers(lines)
	if pr != nil {
		return nil, fmt.Errorf("body %s", pr)
	}
	tags, err := mergeTags(p.Tags, bt)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(meta, tags, p.Supervisor); err != nil {
		return nil, err
	}
	if len(text) == 0 {
		return nil, fmt.Errorf("the body is empty (trailer lines alone are not an entry: say what the %s is)", orWord(tags.Type, "entry"))
	}
	if p.resolved != nil {
		tags = *p.resolved // the same, with the full ids checkPostRefs found
	}
	p.Tags = tags
	out := []byte(strings.Join(text, "\n") + "\n")
	if !tags.IsZero() {
		out = append(append(out, '\n'), renderTrailers(tags)...)
	}
	return out, nil
}

// checkStatic applies the rules that need no repository.
func checkStatic(meta *Meta, t Tags, supervisor bool) error {
	if err := checkTagAuthor(t, supervisor); err != nil {
		return err
	}
	if meta.RefsRequired(t.Type) && len(t.Refs) == 0 {
		return fmt.Errorf("a %s cites what it is about: give a ref (--refs BRANCH@SHA, or a Refs: line), e.g. Refs: main@3f2a9c1 (require_refs)", t.Type)
	}
	if t.Type == TypeVerdict && meta.FreshVerdictsRequired() && !hasBranchRef(t) {
		return fmt.Errorf("a verdict names the commit it judged as BRANCH@SHA, the head of the branch it reviewed (e.g. Refs: main@3f2a9c1), so a stale claim can be told from a fresh one (fresh_verdicts)")
	}
	return nil
}

func hasBranchRef(t Tags) bool {
	for _, r := range t.Refs {
		if r.Branch != "" {
			return true
		}
	}
	return false
}

func orWord(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// checkPostRefs checks a post's refs against the repository, when the
// post carries a resolver and the record is bound: before the record
// lock, since asking git takes a while and the lock guards only the
// record. The full ids it finds are what the post records (p.resolved).
func checkPostRefs(meta *Meta, p *Post) error {
	if p.Resolver == nil || !meta.Bound() {
		return nil
	}
	probe := *p
	if _, err := checkBody(meta, &probe, ""); err != nil {
		return nil // refused for its text: appendLocked says why, with whose turn it is
	}
	full, reason, err := ResolveRefs(meta, probe.Tags, p.Resolver)
	if err != nil {
		return err
	}
	if reason != "" {
		return &RefusedError{Reason: reason}
	}
	p.resolved = &full
	return nil
}

// ResolveRefs checks tags against the repository the record is bound
// to: every ref resolves (an abbreviated sha to exactly one commit), and
// a verdict's branch refs are their branches' heads. It returns the tags
// with every commit named by its full id, as the record keeps it, and
// why they do not hold, or "" when they do; the error is for a
// repository that cannot be asked.
func ResolveRefs(meta *Meta, t Tags, r RefResolver) (Tags, string, error) {
	if r == nil || !meta.Bound() {
		return t, "", nil
	}
	out := t
	out.Refs = slices.Clone(t.Refs)
	var commits []string
	for i, ref := range t.Refs {
		if !ref.IsCommit() {
			continue
		}
		full, reason, err := resolveCommitRef(meta, t, ref, r)
		if err != nil || reason != "" {
			return t, reason, err
		}
		commits = append(commits, full)
		out.Refs[i].SHA = full
	}
	for _, ref := range t.Refs {
		if ref.Path == "" {
			continue
		}
		ok, err := r.HasPath(ref.Path, commits)
		if err != nil {
			return t, "", err
		}
		if !ok {
			return t, fmt.Sprintf("ref %s: no such path in the repository's work tree or in the commits the entry cites (repo: %s)", ref, meta.Repo), nil
		}
	}
	if hasDuplicate(out.Refs) {
		return t, fmt.Sprintf("refs %s name one commit twice", strings.Join(t.RefStrings(), ", ")), nil
	}
	return out, "", nil
}

// resolveCommitRef is the full id of the commit ref names, or why it
// names none (or not the one the rules allow).
func resolveCommitRef(meta *Meta, t Tags, ref Ref, r RefResolver) (string, string, error) {
	full, err := r.Commit(ref.SHA)
	if errors.Is(err, ErrAmbiguous) {
		return "", fmt.Sprintf("ref %s: %v in the repository the record is bound to (repo: %s); cite the commit by its full id", ref, err, meta.Repo), nil
	}
	if err != nil {
		return "", "", err
	}
	if full == "" {
		return "", fmt.Sprintf("ref %s: %s names no commit in the repository the record is bound to (repo: %s)", ref, ref.SHA, meta.Repo), nil
	}
	if ref.Branch == "" {
		return full, "", nil
	}
	head, err := r.Head(ref.Branch)
	if err != nil {
		return "", "", err
	}
	if head == "" {
		return "", fmt.Sprintf("ref %s: there is no branch %s in the repository (repo: %s)", ref, ref.Branch, meta.Repo), nil
	}
	if t.Type == TypeVerdict && meta.FreshVerdictsRequired() && head != full {
		same, err := r.Unchanged(full, head)
		if err != nil {
			return "", "", err
		}
		if !same {
			return "", fmt.Sprintf("the verdict's ref %s is stale: %s is at %s now, not %s; review %s and cite %s@%s",
				ref, ref.Branch, short(head), ref.SHA, short(head), ref.Branch, short(head)), nil
		}
	}
	on, err := r.Contains(ref.Branch, full)
	if err != nil {
		return "", "", err
	}
	if !on {
		return "", fmt.Sprintf("ref %s: commit %s is not on %s (its head is %s)", ref, ref.SHA, ref.Branch, short(head)), nil
	}
	return full, "", nil
}

// hasDuplicate reports whether refs name one thing twice (two
// abbreviations of one commit, once resolved).
func hasDuplicate(refs []Ref) bool {
	for i := range refs {
		if slices.Contains(refs[i+1:], refs[i]) {
			return true
		}
	}
	return false
}

// short is a commit's sha as people write it.
func short(sha string) string { return sha[:min(len(sha), 12)] }
