// Package gate is walkie's merge gate (walkie gate): it decides, from a
// review thread's record, whether a commit may be merged, and checks who
// stands behind what the record says. The record is the pull request's,
// so anyone can write into it; what counts is what an allowed signer
// signed, by the allowed-signers file of the base revision (never the
// pull request's), and a listed person's approval on the platform
// (docs/review-threads.md, "Who may say approved").
package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/gitrepo/sshsig"
	"github.com/walkie-sh/walkie/walkie"
)

// DefaultSigners is where, from the repository's top, the base revision
// keeps the allowed signers: an ssh-keygen allowed_signers file.
const DefaultSigners = ".walkie-signers"

// ErrBadInput marks a gate that cannot be asked as given.
var ErrBadInput = errors.New("bad input")

// badInput is an error that is ErrBadInput.
type badInput struct{ error }

func (e badInput) Is(target error) bool { return target == ErrBadInput }
func (e badInput) Unwrap() error        { return e.error }

func bad(format string, args ...any) error { return badInput{fmt.Errorf(format, args...)} }

// Options is what the gate is asked.
type Options struct {
	File string // the record
	// Ref is the commit to be merged, Base the revision whose allowed
	// signers count (the branch merged into).
	Ref, Base string
	// Signers is the allowed-signers file's path from the repository's
	// top ("": DefaultSigners).
	Signers string
	// GitHub, when set, lets a listed person's approving review count as
	// the ack.
	GitHub *GitHub
}

// Check decides whether o.Ref may be merged by the verified record d.
func Check(ctx context.Context, d *walkie.Doc, o Options) (walkie.Gate, error) {
	repo, err := openRepo(ctx, d, o.File)
	if err != nil {
		return walkie.Gate{}, err
	}
	sha, same, why, err := compare(ctx, repo, &d.Meta, o.Ref)
	if err != nil || why != "" {
		return walkie.Gate{Why: why}, err
	}
	if o.Base == "" {
		return walkie.Gate{}, bad("the gate needs --base, the revision merged into: its allowed signers (%s) say whose signatures count", cmpOr(o.Signers, DefaultSigners))
	}
	path := cmpOr(o.Signers, DefaultSigners)
	allowed, err := repo.FileAt(ctx, o.Base, path)
	if errors.Is(err, fs.ErrNotExist) {
		return walkie.Gate{Why: fmt.Sprintf("the base %s holds no allowed signers (%s): nobody's signature can count; add the file on the base branch first", o.Base, path)}, nil
	}
	if err != nil {
		return walkie.Gate{}, bad("--base %s: %v", o.Base, err)
	}
	sigs, err := walkie.ReadSignatures(o.File)
	if err != nil {
		return walkie.Gate{}, err
	}
	t := &trust{ctx: ctx, id: d.Meta.ID, allowed: allowed, sigs: sigs, github: o.GitHub, seen: map[int][]string{}}
	return d.MergeGate(sha, same, t)
}

// openRepo is the repository the gate asks: the one the record is bound
// to, else the one it lies in.
func openRepo(ctx context.Context, d *walkie.Doc, file string) (*gitrepo.Repo, error) {
	dir, what := filepath.Dir(file), "the repository that holds it"
	if d.Meta.Bound() {
		dir, what = d.Meta.RepoDir(file), "repo: "+d.Meta.Repo
	}
	repo, err := gitrepo.Open(ctx, dir)
	if err != nil {
		return nil, bad("%s: the gate reads the allowed signers from %s, which walkie cannot read: %v", file, what, err)
	}
	return repo, nil
}

// compare resolves the commit to merge and says how the gate tells two
// commits apart: through the bound repository, else by their full ids.
// why is set when the gate is shut before it looks at the record.
func compare(ctx context.Context, repo *gitrepo.Repo, m *walkie.Meta, sha string) (string, walkie.SameCommit, string, error) {
	if !m.Bound() {
		if !walkie.IsFullID(sha) {
			return "", nil, "", bad("--ref %s is abbreviated, and the record is bound to no repository to tell which commit it names: give the full id (git rev-parse %s)", sha, sha)
		}
		return sha, walkie.SamePrefix, "", nil
	}
	full, err := repo.Commit(ctx, sha)
	if errors.Is(err, walkie.ErrAmbiguous) {
		return "", nil, fmt.Sprintf("%v in the repository the record is bound to (repo: %s); give the full id", err, m.Repo), nil
	}
	if err != nil {
		return "", nil, "", err
	}
	if full == "" {
		return "", nil, fmt.Sprintf("it names no commit in the repository the record is bound to (repo: %s)", m.Repo), nil
	}
	// A commit of the record itself (git: commit) changes no code: the
	// approved commit and one that only adds entries on top (or the other
	// way round: a verdict citing the branch's head, which was such a
	// commit) are the same to the gate, as to a verdict's freshness.
	return sha, func(refSHA, _ string) (bool, error) {
		got, err := repo.Commit(ctx, refSHA)
		if err != nil || got == "" {
			return false, err
		}
		if same, err := repo.Unchanged(ctx, got, full); same || err != nil {
			return same, err
		}
		return repo.Unchanged(ctx, full, got)
	}, "", nil
}

// trust is walkie.Trust for one gate: signatures verified with
// ssh-keygen against the base's allowed signers, approvals read from the
// platform.
type trust struct {
	ctx     context.Context
	id      string
	allowed []byte
	sigs    []walkie.Signature
	github  *GitHub
	seen    map[int][]string // principals by seq, once verified
}

// Signers implements walkie.Trust.
func (t *trust) Signers(e *walkie.Entry) ([]string, error) {
	if p, ok := t.seen[e.Marker.Seq]; ok {
		return p, nil
	}
	var all []string
	for _, s := range walkie.Of(t.sigs, e) {
		p, err := sshsig.Verify(t.ctx, t.allowed, s.Signature, walkie.SignedMessage(t.id, e))
		if err != nil {
			return nil, fmt.Errorf("verify the signature of entry %d: %w", e.Marker.Seq, err)
		}
		for _, x := range p {
			if !slices.Contains(all, x) {
				all = append(all, x)
			}
		}
	}
	t.seen[e.Marker.Seq] = all
	return all, nil
}

// Approval implements walkie.Trust.
func (t *trust) Approval(sha string, after time.Time, exclude []string, same walkie.SameCommit) (string, error) {
	if t.github == nil {
		return "", nil
	}
	return t.github.approval(t.ctx, logins(t.allowed), sha, after, exclude, same)
}

// logins are the GitHub logins the allowed signers name, as principals
// github:LOGIN.
func logins(allowed []byte) []string {
	var out []string
	for _, l := range strings.Split(string(allowed), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		for _, p := range strings.Split(f[0], ",") {
			if login, ok := strings.CutPrefix(p, "github:"); ok && login != "" {
				out = append(out, login)
			}
		}
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
