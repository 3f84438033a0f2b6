package review

import "github.com/walkie-sh/walkie/controller/roundtable"

// Verdicts of a review. A failure is never a disagreement: a model that
// returned errors, a key that is missing or a cancelled job says nothing
// about the design.
const (
	VerdictAgreed    = "agreed"    // every reviewer accepted the document as written
	VerdictDisagreed = "disagreed" // not accepted within the rounds: objections stand
	VerdictFailed    = "failed"    // the review could not finish; not a rejection
	VerdictNone      = "none"      // no document to review (a pattern matched no changed file)
)

// Failures say why a review could not finish.
const (
	// FailureAgents: an agent or its model kept failing (crashed, timed
	// out, stalled, wrote no valid turn) until its retries were spent.
	// Re-running may well succeed.
	FailureAgents = "agents"
	// FailureSetup: an agent cannot run here at all: its CLI is missing
	// or cannot start, it is not logged in (no API key), or a prompt
	// blocks it. Re-running will not help; the job's setup must change.
	FailureSetup = "setup"
	// FailureBudget: the budget was spent before the reviewers agreed.
	FailureBudget = "budget"
	// FailureHalted: a person halted the debate (walkie halt).
	FailureHalted = "halted"
	// FailureInterrupted: the run was cancelled (SIGINT or SIGTERM, as
	// when a newer push cancels the job).
	FailureInterrupted = "interrupted"
	// FailureWalkie: walkie itself failed (I/O, a bug).
	FailureWalkie = "walkie"
)

// ReportVersion is the version of the JSON report's layout.
const ReportVersion = 1

// Result is a whole review: every document's debate.
type Result struct {
	Version     int          `json:"walkie_review"`
	Verdict     string       `json:"verdict"`
	Reason      string       `json:"reason"`
	Failure     string       `json:"failure,omitempty"` // the first document's failure, when the verdict is failed
	Mode        string       `json:"mode"`
	Agents      []string     `json:"agents"`
	Head        string       `json:"head"`
	Base        string       `json:"base"`
	BaseSHA     string       `json:"base_sha"`
	MergeBase   string       `json:"merge_base"`
	PullRequest *PullRequest `json:"pull_request,omitempty"`
	Docs        []DocResult  `json:"docs"`
	Rounds      int          `json:"rounds"` // over every document
	CostUSD     float64      `json:"cost_usd"`
	Out         string       `json:"out"` // the directory holding the records and reports
	Warnings    []string     `json:"warnings"`
	Reproduce   []string     `json:"reproduce"` // shell commands
	// Patterns lists DOC arguments that were patterns, for the report of
	// a review that found nothing to do.
	Patterns []string `json:"patterns,omitempty"`
}

// DocResult is one document's debate.
type DocResult struct {
	Doc         string      `json:"doc"`
	ID          string      `json:"id"`
	Record      string      `json:"record"` // the walkie file
	Verdict     string      `json:"verdict"`
	Reason      string      `json:"reason"`
	Failure     string      `json:"failure,omitempty"`
	Status      string      `json:"status"` // the debate's status (walkie.Status*)
	Rounds      int         `json:"rounds"`
	MaxRounds   int         `json:"max_rounds"`
	Turns       int         `json:"turns"`
	Parties     []Party     `json:"parties"`
	Objections  []Objection `json:"objections"` // open at the end
	Costs       []AgentCost `json:"costs"`
	CostUSD     float64     `json:"cost_usd"`
	BudgetUSD   float64     `json:"budget_usd,omitempty"`
	ChainHash   string      `json:"chain_hash"`
	Verified    bool        `json:"verified"`
	VerifyError string      `json:"verify_error,omitempty"`
	// Failures are the attempts that did not leave a valid turn, each
	// "turn N · AGENT, attempt K: OUTCOME (DETAIL)".
	Failures []string `json:"failures"`
	// Discarded are the changes the agents made in their copy of the
	// repository ("modified PATH"), thrown away with the copy.
	Discarded []string `json:"discarded"`
	// LeftOut are the paths of the head commit kept out of the agents'
	// copy (the agent CLIs' project settings).
	LeftOut []string `json:"left_out"`
	// Revision is, in a round table, the implementer's change to the
	// document as a unified diff; "" when it changed nothing.
	Revision string `json:"revision,omitempty"`
}

// Party is one reviewer's standing at the end.
type Party struct {
	Agent string `json:"agent"`
	Role  string `json:"role"` // "reviewer", or a round table's "implementer"
	// Signed: the party's last turn signed off (a debate), or its last
	// verdict approved (a round table's reviewer).
	Signed   bool   `json:"signed"`
	Position string `json:"position"` // its last turn, without the sign-off
	Turns    int    `json:"turns"`
}

// AgentCost is what one agent's sessions cost.
type AgentCost = roundtable.AgentCost

// failureOf orders failures: the first document's in this order is the
// whole review's, so a setup problem that fails every document is named
// first.
var failureOrder = []string{FailureInterrupted, FailureSetup, FailureAgents, FailureWalkie, FailureBudget, FailureHalted}

// summarize sets the review's verdict from its documents': failed if any
// could not finish, else disagreed if any was not accepted, else agreed.
func (r *Result) summarize() {
	r.Rounds, r.CostUSD = 0, 0
	failed, disagreed := 0, 0
	for _, d := range r.Docs {
		r.Rounds += d.Rounds
		r.CostUSD += d.CostUSD
		switch d.Verdict {
		case VerdictFailed:
			failed++
		case VerdictDisagreed:
			disagreed++
		}
	}
	r.Failure = ""
	switch {
	case len(r.Docs) == 0:
		r.Verdict, r.Reason = VerdictNone, "no document matching "+quoteList(r.Patterns)+" changed: nothing to review"
	case failed > 0:
		r.Verdict = VerdictFailed
		for _, f := range failureOrder {
			for _, d := range r.Docs {
				if d.Failure == f && r.Failure == "" {
					r.Failure, r.Reason = f, d.Doc+": "+d.Reason
				}
			}
		}
	case disagreed > 0:
		r.Verdict = VerdictDisagreed
		for _, d := range r.Docs {
			if d.Verdict == VerdictDisagreed {
				r.Reason = d.Doc + ": " + d.Reason
				break
			}
		}
	default:
		r.Verdict, r.Reason = VerdictAgreed, "every reviewer accepted "+plural(len(r.Docs), "the document", "every document")+" as written"
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoteList(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += "`" + x + "`"
	}
	return out
}
