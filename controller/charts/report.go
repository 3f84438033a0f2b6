package charts

import (
	"io"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Report draws what walkie report --svg writes, one chart under another:
// the debate's timeline, then for a round table the grid of verdicts
// against the grader and the quorum replay (the rules r was replayed
// under, or every quorum when it was not, so the picture answers "what if
// the gate were stricter" without a flag). s is the debate's standing, d
// its record and recs its turn log, drawn at now.
func Report(w io.Writer, r *roundtable.Report, s *controller.Standing, d *walkie.Doc, recs []controller.TurnRecord, now time.Time) error {
	rp := r
	if len(r.Replays) == 0 && len(r.Reviewers) > 1 && len(r.RoundList) > 0 {
		cp := *r // replays for the picture; the report printed stays as asked
		if err := cp.ReplayAll(nil); err == nil {
			rp = &cp
		}
	}
	return Stack(w, "How "+s.ID+" went", NewTimeline(HeadOf(s), d, recs, now), NewAgreement(r), NewQuorum(rp))
}
