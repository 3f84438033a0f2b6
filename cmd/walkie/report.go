package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

func reportCommand(f *Factory, runF func(context.Context, *reportOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "how a debate or round table went: rounds, outcome, cost per agent, reviewers against the grader",
		ArgsUsage: "FILE",
		Description: `Reads the record, .walkie/ID/log.jsonl (the state and the attempts) and, for a round table,
each round's results under .walkie/ID/roundtable/. For a round table it sets
every reviewer's verdicts against the hidden grader's: agreed (approved when
the grader passed, blocked when it failed), approved while the grader failed
(a miss), blocked while the grader passed (a bug the tests miss, or noise:
the objection in the record says which).

Costs marked ~ include estimates from the config's pricing table; sessions
whose cost could not be told are listed as unknown, with what the budget
(the debate's budget_usd, else the config's) counts them as. Per agent it
names the models (and reasoning efforts) and CLI versions its sessions ran.

--quorum K decides every recorded round again as if the quorum had been K
(with --reviewers, counting only those reviewers), from the recorded
verdicts and grader results, and says in which round the run would have
stopped and what it would have cost up to there. Nothing runs again: when
the replayed run would have gone on where the real one stopped (or the
implementer answered objections of a reviewer left out), the rounds after
that are unknown, and the report says so. --quorum all gives the table for
every K.

--svg FILE also draws the run into FILE, an SVG that opens in any browser
and reads on a phone: a timeline with a strip per party, each attempt a bar
coloured by its outcome (a bar's tooltip says its turn, attempt, time,
cost and detail), sign-offs and the end marked, the round boundaries, and
the cost climbing toward the budget; for a round table, then, the grid of
each reviewer's verdicts against the grader, round by round, and the quorum
replay (the rules --quorum asks for, else every quorum). The report itself
prints as it would without it.

EXAMPLES:
   walkie report review.walkie.md
   walkie report review.walkie.md --jq .reviewer_scores
   walkie report parser.walkie.md --quorum 1
   walkie report parser.walkie.md --quorum all --reviewers codex,gemini --format json
   walkie report parser.walkie.md --svg parser.svg`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "markdown", Usage: "markdown or json (as --json)"},
			&cli.StringFlag{Name: "quorum", Usage: "replay the recorded rounds at this quorum, or at every one (all)"},
			&cli.StringSliceFlag{Name: "reviewers", Usage: "with --quorum: count only these reviewers, comma separated"},
			&cli.StringFlag{Name: "config", Usage: "config file, for its budget_usd (default: ./walkie.yaml, then the user config dir)"},
			&cli.StringFlag{Name: "svg", Usage: "also draw the run into this SVG file: its timeline, and a round table's verdicts and quorum replay"},
		}, jsonFlags(reportView{})...),
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			format, exp, err := formatFlag(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, reportRun, &reportOptions{IO: f.IO, Config: f.Config, File: file, Format: format, JSON: exp,
				Quorum: c.String("quorum"), Reviewers: c.StringSlice("reviewers"), ConfigPath: c.String("config"), SVG: c.String("svg")})
		},
	}
}

// reportOptions are walkie report's.
type reportOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)

	File       string
	Format     string        // markdown or json
	JSON       *jsonExporter // --json's fields and --jq, with Format json
	Quorum     string        // --quorum: K, all, or "" for the recorded rule only
	Reviewers  []string
	ConfigPath string
	SVG        string // --svg: the file to draw the run into; "" none
}

func reportRun(_ context.Context, o *reportOptions) error {
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	r, at, err := controller.LoadReport(o.File, controller.StandingOptions{Config: cfg})
	if err != nil {
		return err
	}
	if err := replays(r, o.Quorum, o.Reviewers); err != nil {
		return withCode(exitBadInput, err)
	}
	ex, err := loadReportExtras(o.File, &at)
	if err != nil {
		return err
	}
	if o.SVG != "" {
		if err := writeReportSVG(o.SVG, o.File, r, &at); err != nil {
			return err
		}
	}
	if o.Format == "json" {
		return o.JSON.Write(o.IO.Out, reportView{r, ex})
	}
	return writeClean(o.IO.Out, func(w io.Writer) error {
		writeReport(w, r, ex)
		return nil
	})
}

// reportView is walkie report's JSON: the report the markdown renders,
// and what the record adds to it.
type reportView struct {
	*roundtable.Report
	reportExtras
}

// replays adds what --quorum and --reviewers ask for to r.
func replays(r *roundtable.Report, quorum string, only []string) error {
	q := strings.TrimSpace(quorum)
	var reviewers []string
	for _, name := range only {
		reviewers = append(reviewers, strings.TrimSpace(name))
	}
	switch {
	case q == "" && reviewers != nil:
		return errors.New("--reviewers goes with --quorum K (or --quorum all)")
	case q == "":
		return nil
	case q == "all":
		return r.ReplayAll(reviewers)
	}
	k, err := strconv.Atoi(q)
	if err != nil || k < 1 {
		return fmt.Errorf("--quorum %q: give a number of approvals (1, 2, …) or all", q)
	}
	_, err = r.Replay(k, reviewers)
	return err
}

// writeReplays prints the replayed rules: one sentence for one rule, a
// table for several.
func writeReplays(w io.Writer, r *roundtable.Report) {
	if len(r.Replays) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Under another rule\n\nEach recorded round decided again from its recorded verdicts and grader result; nothing was run again.\n\n")
	fmt.Fprintf(w, "| quorum | reviewers | stops in round | as | cost up to there | time up to there |\n|---|---|---|---|---|---|\n")
	for _, rp := range r.Replays {
		q := fmt.Sprintf("%d of %d", rp.Quorum, len(rp.Reviewers))
		if rp.Recorded {
			q += " (the run's)"
		}
		round := strconv.Itoa(rp.Round)
		if !rp.Known {
			round = "after " + round + ": unknown"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", q, strings.Join(rp.Reviewers, ", "), round, rp.Decision, term.Money(rp.CostUSD, false), ms(rp.DurationMS))
	}
	fmt.Fprintln(w)
	for _, rp := range r.Replays {
		fmt.Fprintf(w, "- quorum %d of %s: %s.\n", rp.Quorum, strings.Join(rp.Reviewers, ", "), rp.Note)
	}
}

// reportExtras are what walkie report adds to the round table's report:
// what ran, and the cost that is not known.
type reportExtras struct {
	Ran          []agentRan `json:"ran"`
	UnknownCosts int        `json:"unknown_costs"`
	UnknownUSD   float64    `json:"unknown_cost_estimate_usd,omitempty"` // what the budget counts them as
	BudgetUSD    float64    `json:"budget_usd,omitempty"`
}

// agentRan is the models and CLI versions an agent's sessions ran, in the
// order they first appear in the turn log.
type agentRan struct {
	Agent    string   `json:"agent"`
	Models   []string `json:"models"`
	Versions []string `json:"cli_versions"`
}

func loadReportExtras(file string, s *controller.Standing) (reportExtras, error) {
	recs, err := controller.ReadTurnLog(walkie.StateDir(file, s.ID))
	if err != nil {
		return reportExtras{}, err
	}
	ex := reportExtras{Ran: []agentRan{}, UnknownCosts: s.UnknownCosts, BudgetUSD: s.BudgetUSD, UnknownUSD: s.UnknownUSD}
	at := map[string]int{}
	for _, rec := range recs {
		i, ok := at[rec.Agent]
		if !ok {
			i = len(ex.Ran)
			at[rec.Agent] = i
			ex.Ran = append(ex.Ran, agentRan{Agent: rec.Agent, Models: []string{}, Versions: []string{}})
		}
		a := &ex.Ran[i]
		model := rec.Model
		if model != "" && rec.Effort != "" {
			model += " (" + rec.Effort + ")"
		}
		if model != "" && !slices.Contains(a.Models, model) {
			a.Models = append(a.Models, model)
		}
		if v := rec.CLIVersion; v != "" && !slices.Contains(a.Versions, v) {
			a.Versions = append(a.Versions, v)
		}
	}
	return ex, nil
}

// writeReport prints a report as markdown: readable as it is in a
// terminal, and renders as tables where markdown is shown.
func writeReport(w io.Writer, r *roundtable.Report, ex reportExtras) {
	what := "Debate"
	if r.Mode == "roundtable" {
		what = "Round table"
	}
	fmt.Fprintf(w, "# %s %s\n\n", what, r.ID)
	fmt.Fprintf(w, "- outcome: **%s**", r.Status)
	if r.Reason != "" {
		fmt.Fprintf(w, " (%s)", r.Reason)
	}
	fmt.Fprintf(w, "\n- rounds: %d of at most %d, %s\n", r.Rounds, r.MaxRounds, walkie.Count(r.Turns, "turn", "turns"))
	if r.Mode == "roundtable" {
		fmt.Fprintf(w, "- implementer: %s; reviewers: %s; quorum %d of %d\n", r.Implementer, strings.Join(r.Reviewers, ", "), r.Quorum, len(r.Reviewers))
	}
	fmt.Fprintf(w, "- cost: %s", term.Money(r.CostUSD, estimatedAny(r.Agents)))
	if s := term.UnknownCosts(ex.UnknownCosts, ex.UnknownUSD, ex.BudgetUSD); s != "" {
		fmt.Fprintf(w, " %s", s)
	}
	fmt.Fprintln(w)

	if len(r.Phases) > 0 {
		fmt.Fprintf(w, "\n## Phases\n\n| phase | agent | state | attempts | time | cost | sha256 |\n|---|---|---|---|---|---|---|\n")
		for _, p := range r.Phases {
			fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s |\n", p.Phase, p.Agent, phaseState(p), p.Attempts, ms(p.DurationMS), term.Money(p.CostUSD, false), orDash(shortHash(p.SHA256)))
		}
	}

	if len(r.RoundList) > 0 {
		fmt.Fprintf(w, "\n## Rounds\n\n| round | workspace | grader | %s | decision |\n|---|---|---|%s---|\n",
			strings.Join(r.Reviewers, " | "), strings.Repeat("---|", len(r.Reviewers)))
		for _, rb := range r.RoundList {
			cells := make([]string, len(r.Reviewers))
			for i, name := range r.Reviewers {
				v := rb.Verdicts[name]
				if n := rb.Blockers[name]; n > 0 {
					v = fmt.Sprintf("%s (%d)", v, n)
				}
				cells[i] = orDash(v)
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s |\n", rb.Round, shortHash(rb.Workspace), rb.Grader, strings.Join(cells, " | "), rb.Decision)
		}
	}

	ran := map[string]agentRan{}
	for _, a := range ex.Ran {
		ran[a.Agent] = a
	}
	fmt.Fprintf(w, "\n## Cost per agent\n\n| agent | role | sessions | cost | tokens | model | CLI |\n|---|---|---|---|---|---|---|\n")
	sessions := 0
	var total controller.Usage
	var sent int64
	for _, a := range r.Agents {
		note := ""
		if a.Unknown > 0 {
			note = fmt.Sprintf(" (%d unknown)", a.Unknown)
		}
		u := controller.Usage{InputTokens: a.InputTokens, CachedInputTokens: a.CachedInputTokens, OutputTokens: a.OutputTokens}
		fmt.Fprintf(w, "| %s | %s | %d | %s%s | %s | %s | %s |\n", a.Agent, orDash(a.Role), a.Sessions, term.Money(a.CostUSD, a.Estimated > 0), note,
			term.TokensCell(&u, a.SentBytes), orDash(strings.Join(ran[a.Agent].Models, ", ")), orDash(strings.Join(ran[a.Agent].Versions, ", ")))
		sessions += a.Sessions
		total.AddTokens(&u)
		sent += a.SentBytes
	}
	fmt.Fprintf(w, "| total | | %d | %s | %s | | |\n", sessions, term.Money(r.CostUSD, estimatedAny(r.Agents)), term.TokensCell(&total, sent))

	if len(r.Scores) > 0 {
		fmt.Fprintf(w, "\n## Reviewers against the grader\n\n| reviewer | rounds | agreed | approved, grader failed | blocked, grader passed | no verdict | grader unknown | objections | confirmed by grader | confirmed by fix |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Scores {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", s.Reviewer, s.Rounds, s.Agreed, s.ApprovedGraderFailed, s.BlockedGraderPassed, s.NoVerdict, s.GraderUnknown,
				s.Blocking, s.ConfirmedByGrader, s.ConfirmedByFix)
		}
		fmt.Fprintf(w, "\nAgreed: approved when the hidden grader passed, or blocked when it failed. Blocked while it passed is a bug the tests miss or noise; the objection in the record says which. An objection (one input blocked on, however many rounds) is confirmed by the grader when it failed while the objection stood, by a fix when the reviewer stopped blocking on changed work and nobody raised the input again.\n")
	}
	if d := r.Deadlock; d != nil {
		fmt.Fprintf(w, "\n## Deadlock\n\nThe contested question: what must the work do on %s?\n\n%s.\n\nEvidence and what to do: .walkie/%s/roundtable/deadlock.md\n", d.InputWords(), d.Summary, r.ID)
	}
	writeReplays(w, r)
}

func estimatedAny(as []roundtable.AgentCost) bool {
	for _, a := range as {
		if a.Estimated > 0 {
			return true
		}
	}
	return false
}

func shortHash(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	return h[:min(12, len(h))]
}
