package briefing

import (
	"bytes"
	"errors"

	"github.com/walkie-sh/walkie/walkie"
)

// ErrPlaceholder is Approve's refusal of a briefing that is still empty
// or the bare template: nobody has written it yet.
var ErrPlaceholder = errors.New("the briefing is still empty or the bare template")

// ErrChanged is Approve's refusal of a briefing that is no longer the one
// shown: what is pinned must be what was read.
var ErrChanged = errors.New("the briefing changed while it was shown")

// Approval is what Approve did.
type Approval struct {
	// Hash is the briefing's sha256, pinned as briefing_sha256.
	Hash string
	// NotKept says why the copy a later approval is compared with
	// (WriteApproved) was not kept; the approval stands without it, and
	// the caller says so where it reports.
	NotKept error
}

// Approve pins the briefing of the walkie file, which must still be
// shown: the text the person (or the CI job) read. Every approval of a
// briefing goes through it, whoever asks (walkie brief approve, walkie
// new, walkie auto --approve, walkie review): a briefing still the
// template is refused, the pin is set (walkie.Approve, which refuses
// once the debate has an entry), and the approved text is kept in the
// debate's state directory.
func Approve(file string, shown []byte) (Approval, error) {
	if IsPlaceholder(shown) {
		return Approval{}, ErrPlaceholder
	}
	d, err := walkie.Load(file)
	if err != nil {
		return Approval{}, err
	}
	if !bytes.Equal(d.Briefing, shown) {
		return Approval{}, ErrChanged
	}
	hash, err := walkie.Approve(file)
	if err != nil {
		return Approval{}, err
	}
	return Approval{Hash: hash, NotKept: WriteApproved(walkie.StateDir(file, d.Meta.ID), shown)}, nil
}
