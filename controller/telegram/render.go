package telegram

import (
	"fmt"
	"strings"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// StandingText is a debate's standing as a Telegram message: plain lines
// of what controller.Standing says, nothing worked out here.
func StandingText(s controller.Standing) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.ID, s.Status)
	if s.Reason != "" {
		fmt.Fprintf(&b, " (%s)", s.Reason)
	}
	fmt.Fprintf(&b, "\n%s, round %d of %d", walkie.Count(s.Turns, "turn", "turns"), s.Round, s.RoundCap)
	if s.Whose != "" {
		fmt.Fprintf(&b, "; next: turn %d, %s", s.NextTurn, s.Whose)
	}
	if len(s.Signed) > 0 {
		fmt.Fprintf(&b, "\nsigned off: %s", strings.Join(s.Signed, ", "))
	}
	if !s.Approved {
		b.WriteString("\nbriefing not approved")
	}
	if s.BudgetUSD > 0 {
		fmt.Fprintf(&b, "\ncost %s of %s", walkie.Money(s.CostUSD), walkie.Money(s.BudgetUSD))
	} else if s.CostUSD > 0 {
		fmt.Fprintf(&b, "\ncost %s", walkie.Money(s.CostUSD))
	}
	if r := s.Running; r != nil && !r.Interrupted {
		fmt.Fprintf(&b, "\nrunning: turn %d, %s (attempt %d)", r.Turn, r.Agent, r.Attempt)
	}
	if s.Waiting != "" {
		fmt.Fprintf(&b, "\nwaiting: %s", s.Waiting)
	}
	return b.String()
}
