package walkie

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The merge gate (docs/review-threads.md, "The merge gate" and "Who may
// say approved"): the record anyone can append to says what was
// approved; the signatures beside it, checked against signers the
// record's side cannot name, say who stands behind it.

// Gate is the merge gate's finding for a commit.
type Gate struct {
	Open    bool
	Why     string
	Verdict *Entry // the last verdict, when there is one
	Ack     *Entry // the supervisor's ack of it, when one counts
	// VerdictBy and AckBy are who stands behind them: the principals
	// whose signatures verify, or a platform approver ("github:LOGIN").
	VerdictBy, AckBy []string
}

// Trust tells the gate who stands behind an entry. walkie runs no
// processes: the caller verifies (package sshsig, a platform's API).
type Trust interface {
	// Signers are the principals of the allowed signers whose signatures
	// of e verify; none for an entry no allowed signer signed.
	Signers(e *Entry) ([]string, error)
	// Approval is a person's approval of sha on the platform the change
	// is merged on (a GitHub review), given after after by none of
	// exclude: who gave it ("github:LOGIN"), or "" when none did.
	Approval(sha string, after time.Time, exclude []string, same SameCommit) (string, error)
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

// MergeGate decides whether sha may be merged: the record's last verdict,
// by a participant other than the builder, approves exactly that commit
// (every commit it cites is sha) and is signed by an allowed signer (the
// controller that stamped it, or a listed person); after it, someone
// else acknowledges it for sha: a supervisor entry of type ack signed by
// another allowed signer, or the platform's approval by a listed person.
// Verdict and ack must name the commit by its full id: an abbreviation
// that is the approved commit's today may be another's tomorrow. same
// compares commits (through the bound repository, else SamePrefix).
func (d *Doc) MergeGate(sha string, same SameCommit, trust Trust) (Gate, error) {
	var g Gate
	at := d.lastVerdict()
	if at < 0 {
		g.Why = "no verdict is recorded"
		return g, nil
	}
	g.Verdict = &d.Entries[at]
	who, why, err := d.verdictCounts(&g, sha, same, trust)
	if err != nil || why != "" {
		g.Why = why
		return g, err
	}
	if err := d.findAck(&g, at, sha, same, trust); err != nil {
		return g, err
	}
	switch {
	case g.Ack != nil:
		g.Open = true
		g.Why = fmt.Sprintf("%s approves %s, signed by %s, acknowledged by the supervisor (seq %d), signed by %s", who, sha, strings.Join(g.VerdictBy, ", "), g.Ack.Marker.Seq, strings.Join(g.AckBy, ", "))
		return g, nil
	case len(g.AckBy) > 0:
		g.Open = true
		g.Why = fmt.Sprintf("%s approves %s, signed by %s, approved on the platform by %s", who, sha, strings.Join(g.VerdictBy, ", "), g.AckBy[0])
		return g, nil
	}
	g.Why = fmt.Sprintf("%s approves %s, signed by %s, but no person has acknowledged it: %s", who, sha, strings.Join(g.VerdictBy, ", "), d.whyNoAck(at, sha, same, trust, g.VerdictBy))
	return g, nil
}

// lastVerdict is the index of the last verdict, -1 when there is none.
func (d *Doc) lastVerdict() int {
	for i := len(d.Entries) - 1; i >= 0; i-- {
		if e := &d.Entries[i]; e.Kind == KindTurn && e.Marker.Tags.Type == TypeVerdict {
			return i
		}
	}
	return -1
}

// verdictCounts says the verdict as the gate names it, and why it does
// not count ("" when it does), setting g.VerdictBy.
func (d *Doc) verdictCounts(g *Gate, sha string, same SameCommit, trust Trust) (who, why string, err error) {
	v := g.Verdict
	who = fmt.Sprintf("the last verdict (turn %d by %s, seq %d)", v.Turn, v.Agent, v.Marker.Seq)
	if v.Marker.Tags.Verdict != VerdictApprove {
		return who, fmt.Sprintf("%s requests changes", who), nil
	}
	if len(d.Meta.Participants) > 1 && v.Agent == d.Meta.Participants[0] {
		return who, fmt.Sprintf("%s is by %s, the thread's builder: the approval of one's own work does not count; the reviewer's verdict does", who, v.Agent), nil
	}
	if r := abbreviated(v.Marker.Tags); r != nil {
		return who, fmt.Sprintf("%s names %s by an abbreviated id, which another commit can come to share: the gate counts only a verdict that names the commit by its full id (walkie records the full id in a record bound to a repository, repo:)", who, r), nil
	}
	ok, err := citesOnly(v.Marker.Tags, sha, same)
	if err != nil || !ok {
		return who, fmt.Sprintf("%s approves %s, not %s", who, orWord(strings.Join(refList(v.Marker.Tags.Commits()), ", "), "no commit"), sha), err
	}
	if g.VerdictBy, err = trust.Signers(v); err != nil {
		return who, "", err
	}
	if len(g.VerdictBy) == 0 {
		return who, fmt.Sprintf("%s approves %s, but no allowed signer signed it: the gate counts a verdict the controller stamped and signed with its key (%s), or one a listed person signed, by the allowed signers at the base", who, sha, "WALKIE_SIGNING_KEY"), nil
	}
	return who, "", nil
}

// findAck sets g.Ack and g.AckBy to the last ack after the verdict (at)
// that counts, else to the platform's approval.
func (d *Doc) findAck(g *Gate, at int, sha string, same SameCommit, trust Trust) error {
	for i := len(d.Entries) - 1; i > at; i-- {
		e := &d.Entries[i]
		ok, err := ackFor(e, sha, same)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		by, err := trust.Signers(e)
		if err != nil {
			return err
		}
		if others := without(by, g.VerdictBy); len(by) > 0 && len(others) == len(by) {
			g.Ack, g.AckBy = e, by
			return nil
		}
	}
	who, err := trust.Approval(sha, g.Verdict.Marker.At, g.VerdictBy, same)
	if err == nil && who != "" {
		g.AckBy = []string{who}
	}
	return err
}

// ackFor reports whether e is a supervisor's ack naming exactly sha by
// its full id.
func ackFor(e *Entry, sha string, same SameCommit) (bool, error) {
	if e.Kind != KindSupervisor || e.Marker.Tags.Type != TypeAck || abbreviated(e.Marker.Tags) != nil {
		return false, nil
	}
	return citesOnly(e.Marker.Tags, sha, same)
}

// whyNoAck says why no ack after the verdict counts: the one nearest to
// counting, or that there is none.
func (d *Doc) whyNoAck(at int, sha string, same SameCommit, trust Trust, verdictBy []string) string {
	hint := fmt.Sprintf("a supervisor entry of type ack citing %s, signed by a listed person other than the verdict's signer, must follow it (walkie post FILE --supervisor --type ack --refs %s --signing-key KEY), or a listed person's approval on the platform", sha, sha)
	for i := len(d.Entries) - 1; i > at; i-- {
		e := &d.Entries[i]
		if e.Kind != KindSupervisor || e.Marker.Tags.Type != TypeAck {
			continue
		}
		if r := abbreviated(e.Marker.Tags); r != nil {
			return fmt.Sprintf("the supervisor's ack (seq %d) names %s by an abbreviated id, which another commit can come to share; %s", e.Marker.Seq, r, hint)
		}
		if ok, _ := citesOnly(e.Marker.Tags, sha, same); !ok {
			continue
		}
		by, _ := trust.Signers(e)
		if len(by) == 0 {
			return fmt.Sprintf("the supervisor's ack (seq %d) is signed by no allowed signer (anyone, an agent included, can post one); %s", e.Marker.Seq, hint)
		}
		return fmt.Sprintf("the supervisor's ack (seq %d) is signed by %s, who signed the verdict: an ack is someone else's; %s", e.Marker.Seq, strings.Join(by, ", "), hint)
	}
	return hint
}

// without is a less what b holds.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
