package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/review"
	"github.com/walkie-sh/walkie/controller/review/publish"
	"github.com/walkie-sh/walkie/walkie"
)

// The CI runners' own credentials. walkie review reads the token it
// needs, then removes all of them from its environment before any agent
// starts: even a config whose env_allow would pass GITHUB_* cannot hand
// them to an agent.
var ciSecrets = []string{
	"GITHUB_TOKEN", "GH_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_RUNTIME_URL", "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
	"ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_RESULTS_URL", "ACTIONS_CACHE_URL",
	"CI_JOB_TOKEN", "CI_JOB_JWT", "CI_JOB_JWT_V2", "CI_REGISTRY_PASSWORD", "CI_DEPLOY_PASSWORD", "GITLAB_TOKEN",
}

func reviewCommand(f *Factory, runF func(context.Context, *reviewCmdOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "review",
		Usage:     "CI: have agents debate the design documents a change adds or edits, and report the verdict",
		ArgsUsage: "DOC...",
		Description: `For each DOC (a path, or a git glob pattern such as 'docs/design/**/*.md' that
stands for every changed file it matches), walkie makes a copy of the repository
at HEAD, writes a debate whose briefing holds the document with line numbers,
its diff from the merge base with --base and, on a pull_request event, the pull
request's title and description; pins the briefing and records in the record
that CI approved it; and runs the debate to its end. The agents work in the
copy: they cannot change the checkout, and what they change in the copy is
listed and thrown away. GITHUB_TOKEN and the runners' other credentials are
removed from walkie's environment before any agent starts.

The report (OUT/report.md and OUT/report.json, and one of each beside every
record) says whether the reviewers agreed, disagreed or could not finish and
why, each party's final position and sign-off, the open objections with the
document line each cites (written "Objection: … docs/design/x.md:42"), the
rounds, the cost per agent, the record's chain hash, and how to reproduce it.

On GitHub Actions (GITHUB_ACTIONS=true) it also appends the report to the job
summary, sets the step outputs status, rounds, cost, report, report-json, out
and comment-url, annotates each cited line, and posts one pull-request comment,
edited on a re-run (found by a hidden marker), through GITHUB_API_URL with
GITHUB_TOKEN. A run that could not review (failed, or nothing to review)
keeps the last verdict in that comment and says above it what happened. A
missing token or a refused comment is a warning, not a failure. Elsewhere
it writes the report files and says where.

Standard error has a line per attempt, as walkie auto's; standard output the
verdict, once. walkie review never reads
./walkie.yaml by itself (in a pull request it is the pull request's file):
pass --config to use one. See docs/ci.md.

EXIT CODES (review):
   0   agreed (also disagreed, with --fail-on never)
   1   walkie itself failed (I/O, a bug)
   2   bad input: a DOC missing or not in the diff, a base that does not resolve,
       no git repository, an event payload that is not JSON (nothing is posted)
   12  halted by a person
   13  over budget, before the reviewers agreed
   20  disagreed: the reviewers did not all accept a document within the rounds
   21  an agent or its model kept failing (retries spent): not a rejection, re-run
   22  an agent cannot run here (CLI missing, not logged in, blocked): fix the setup
   130 interrupted (SIGINT/SIGTERM, e.g. a newer push cancelled the job)
   With several documents the first of 130, 22, 21, 1, 13, 12, 20 that applies.

EXAMPLES:
   walkie review docs/design/cache.md --base origin/main
   walkie review 'docs/design/**/*.md' --base origin/main --agents claude,codex,gemini --budget 2
   walkie review docs/design/cache.md --base main --mode roundtable --fail-on never`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "base", Usage: "the commit the documents are compared with (default: the pull request's base from $GITHUB_EVENT_PATH)"},
			&cli.StringSliceFlag{Name: "agents", Usage: "configured agents that review, in turn order (default: claude,codex)"},
			&cli.StringFlag{Name: "mode", Value: walkie.ModeDebate, Usage: "debate (reviewers take turns until all sign off) or roundtable (the first agent revises, the others judge)"},
			&cli.IntFlag{Name: "max-rounds", Value: review.DefaultMaxRounds, Usage: "round cap of each document's debate"},
			&cli.Float64Flag{Name: "budget", Usage: "most each document's debate may spend, in USD; 0 is the config's budget_usd (none by default)"},
			&cli.StringFlag{Name: "fail-on", Value: "disagreement", Usage: "disagreement (exit 20 when not accepted) or never (exit 0 unless the review could not finish)"},
			&cli.StringFlag{Name: "out", Usage: "where records and reports go (default: a new directory walkie-review-run-* under $RUNNER_TEMP on GitHub Actions, else under $TMPDIR)"},
			&cli.StringFlag{Name: "config", Usage: "config file (never ./walkie.yaml implicitly: in a pull request it is the pull request's)"},
			&cli.BoolFlag{Name: "json", Usage: "print the JSON report on stdout"},
			logFormatFlag(),
			verboseFlag(),
		},
		Action: func(c *cli.Context) error {
			failOn := c.String("fail-on")
			if failOn != "disagreement" && failOn != "never" {
				return withCode(exitBadInput, fmt.Errorf("--fail-on %q: use disagreement or never", failOn))
			}
			return runWith(c.Context, runF, reviewRun, &reviewCmdOptions{IO: f.IO, Config: f.Config, Logger: f.Logger,
				Docs: c.Args().Slice(), Base: c.String("base"), Agents: c.StringSlice("agents"), Mode: c.String("mode"),
				MaxRounds: c.Int("max-rounds"), MaxRoundsSet: c.IsSet("max-rounds"), BudgetUSD: c.Float64("budget"),
				FailOn: failOn, Out: c.String("out"), ConfigPath: c.String("config"), JSON: c.Bool("json"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose")})
		},
	}
}

// reviewCmdOptions are walkie review's.
type reviewCmdOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)
	Logger func(format string, verbose bool) (*zap.Logger, error)

	Docs         []string
	Base         string
	Agents       []string
	Mode         string
	MaxRounds    int
	MaxRoundsSet bool
	BudgetUSD    float64
	FailOn       string // disagreement or never
	Out          string
	ConfigPath   string // "": the built-in presets, never ./walkie.yaml
	JSON         bool
	LogFormat    string
	Verbose      bool
}

func reviewRun(ctx context.Context, o *reviewCmdOptions) error {
	onGitHub := os.Getenv("GITHUB_ACTIONS") == "true"
	stdout := o.IO.Out
	token := cmp.Or(os.Getenv("GITHUB_TOKEN"), os.Getenv("GH_TOKEN"))
	for _, name := range ciSecrets {
		_ = os.Unsetenv(name)
	}
	opts, err := reviewOptions(o)
	if err != nil {
		return inputFailed(stdout, onGitHub, err)
	}
	// auto's output: a line per attempt on standard error (the live
	// lines on a terminal), warnings between them, the verdict once.
	out, err := newRunOutput(o.IO, o.Logger, o.LogFormat, o.Verbose)
	if err != nil {
		return err
	}
	defer out.stop()
	defer func() { _ = out.log.Sync() }()
	opts.Log, opts.Observe = out.log, out.observe
	ctx, stop := interruptible(ctx, o.IO.ErrOut)
	defer stop()
	res, err := review.Run(ctx, opts)
	out.stop()
	var ie *walkie.InputError
	switch {
	case errors.As(err, &ie):
		return inputFailed(stdout, onGitHub, err)
	case err != nil:
		return err
	}
	var pub publish.Published
	if onGitHub {
		gh := &publish.GitHub{Getenv: os.Getenv, Token: token, Commands: stdout, DisagreementOK: o.FailOn == "never"}
		pub = gh.Publish(context.WithoutCancel(ctx), res, opts.Event)
		if err := review.WriteReports(res); err != nil {
			return err
		}
	}
	if o.JSON {
		b, err := review.JSON(res)
		if err != nil {
			return err
		}
		_, _ = stdout.Write(b)
	} else {
		_ = writeClean(stdout, func(w io.Writer) error {
			printReview(w, res, pub, onGitHub)
			return nil
		})
	}
	code := reviewExitCode(res, o.FailOn == "never")
	if code == exitOK {
		return nil
	}
	// Said above, once: the exit code is what is left to give.
	return withCode(code, said(fmt.Errorf("review %s: %s", res.Verdict, res.Reason)))
}

// reviewOptions reads the flags, the config and the CI's event into
// review options.
func reviewOptions(in *reviewCmdOptions) (review.Options, error) {
	o := review.Options{Docs: in.Docs, Base: in.Base, Mode: in.Mode,
		MaxRounds: in.MaxRounds, BudgetUSD: in.BudgetUSD, Out: in.Out, ConfigPath: in.ConfigPath}
	for _, a := range in.Agents {
		o.Agents = append(o.Agents, strings.TrimSpace(a))
	}
	if in.MaxRoundsSet && o.MaxRounds <= 0 {
		return o, &walkie.InputError{File: "--max-rounds", Msg: fmt.Sprintf("%d is not a round cap", o.MaxRounds), Fix: "give a positive number"}
	}
	if tmp := os.Getenv("RUNNER_TEMP"); tmp != "" && os.Getenv("GITHUB_ACTIONS") == "true" {
		o.TempDir = tmp // the runner's, removed with the job
	}
	cfg := config.Default()
	if path := in.ConfigPath; path != "" {
		var err error
		if cfg, err = in.Config(path); err != nil {
			return o, err
		}
	}
	o.Config = cfg
	if path := os.Getenv("GITHUB_EVENT_PATH"); path != "" {
		ev, err := review.ReadEvent(path, os.Getenv("GITHUB_EVENT_NAME"))
		if err != nil {
			return o, err
		}
		o.Event = ev
	}
	o.ApprovedBy = approvedBy()
	return o, nil
}

// approvedBy names the CI run that approved the briefing, for the record.
func approvedBy() string {
	if os.Getenv("GITHUB_ACTIONS") == "true" {
		run := fmt.Sprintf("%s/%s/actions/runs/%s", cmp.Or(os.Getenv("GITHUB_SERVER_URL"), "https://github.com"), os.Getenv("GITHUB_REPOSITORY"), os.Getenv("GITHUB_RUN_ID"))
		if a := os.Getenv("GITHUB_RUN_ATTEMPT"); a != "" {
			run += "/attempts/" + a
		}
		return fmt.Sprintf("GitHub Actions run %s (workflow %q, actor %s)", run, os.Getenv("GITHUB_WORKFLOW"), os.Getenv("GITHUB_ACTOR"))
	}
	if os.Getenv("GITLAB_CI") == "true" {
		return fmt.Sprintf("GitLab CI job %s (pipeline %s, user %s)", os.Getenv("CI_JOB_URL"), os.Getenv("CI_PIPELINE_ID"), os.Getenv("GITLAB_USER_LOGIN"))
	}
	if os.Getenv("CI") != "" {
		return "a CI job (CI is set)"
	}
	return ""
}

// inputFailed is bad input: exit 2, and on GitHub an error annotation so
// the check's page shows it. Nothing is posted on the pull request.
func inputFailed(stdout io.Writer, onGitHub bool, err error) error {
	if onGitHub {
		publish.Annotate(stdout, "error", "walkie review: bad input", err.Error())
	}
	return withCode(exitBadInput, err)
}

// reviewExitCode is the documented code of a finished review.
func reviewExitCode(res *review.Result, disagreementOK bool) int {
	codes := map[string]int{
		review.FailureInterrupted: exitSignal, review.FailureSetup: exitCannotRun, review.FailureAgents: exitAgentsFailed,
		review.FailureWalkie: exitError, review.FailureBudget: exitOverBudget, review.FailureHalted: exitHalted,
	}
	switch res.Verdict {
	case review.VerdictFailed:
		return codes[res.Failure]
	case review.VerdictDisagreed:
		if !disagreementOK {
			return exitDisagreed
		}
	}
	return exitOK
}

// printReview is the plain summary on stdout: the verdict once, a line
// per document when there are several, each open objection, the
// warnings, and where the report is.
func printReview(w io.Writer, res *review.Result, pub publish.Published, onGitHub bool) {
	if len(res.Docs) == 1 {
		d := res.Docs[0]
		fmt.Fprintf(w, "walkie review: %s: %s after %s, %s: %s\n", d.Doc, d.Verdict, walkie.Count(d.Rounds, "round", "rounds"), walkie.Money(d.CostUSD), d.Reason)
	} else {
		for _, d := range res.Docs {
			fmt.Fprintf(w, "%s: %s after %s, %s: %s\n", d.Doc, d.Verdict, walkie.Count(d.Rounds, "round", "rounds"), walkie.Money(d.CostUSD), d.Reason)
		}
	}
	for _, d := range res.Docs {
		for _, o := range d.Objections {
			where := ""
			if o.Line > 0 {
				where = fmt.Sprintf(" (%s:%d)", o.File, o.Line)
			}
			fmt.Fprintf(w, "  objection by %s%s: %s\n", o.Agent, where, o.Text)
		}
	}
	switch n := len(res.Docs); n {
	case 0:
		fmt.Fprintf(w, "walkie review: %s: %s\n", res.Verdict, res.Reason)
	case 1:
	default:
		fmt.Fprintf(w, "walkie review: %s: %s documents, %s, %s\n", res.Verdict, fmt.Sprint(n), walkie.Count(res.Rounds, "round", "rounds"), walkie.Money(res.CostUSD))
	}
	for _, warn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if pub.CommentURL != "" {
		verb := "posted"
		if pub.Edited {
			verb = "updated"
		}
		if pub.Kept != "" {
			verb += fmt.Sprintf(", still showing the verdict of commit %.12s", pub.Kept)
		}
		fmt.Fprintf(w, "comment %s: %s\n", verb, pub.CommentURL)
	}
	md, js := review.ReportPaths(res)
	where := "not on GitHub Actions: the report is"
	if onGitHub {
		where = "the report is also"
	}
	fmt.Fprintf(w, "%s in %s and %s\n", where, md, js)
}
