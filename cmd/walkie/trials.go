package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/charts"
	"github.com/walkie-sh/walkie/controller/trials"
	"github.com/walkie-sh/walkie/walkie"
)

func trialsCommand(f *Factory, runF func(context.Context, *trialsOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "trials",
		Usage:     "run N independent copies of a debate or round table and report the distribution",
		ArgsUsage: "FILE",
		Description: `Multi-agent behaviour is a distribution, not a number: the same task may take
three rounds, then two, then one. walkie trials makes N copies of FILE, each
in DIR/K/ (default: FILE's directory/ID.trials/): the record as ID-K.walkie.md
with the same front matter and briefing, a copy of the workspace at the same
relative path, and the approved research and plan phases, pinned again. Each
copy is an ordinary debate: walkie show, report, verify and auto work on it.
In a copy's grader, {dir} is the source's directory, so hidden tests next to
FILE are found; in the agents' commands it is the copy's own directory
(DIR/K/), which holds only the record and a round table's workspace: a
command naming a file beside FILE through {dir} is refused (exit 2) before
any copy is made; name it by its absolute path. FILE must not have begun
(no turns): its workspace is then where the task starts.

The copies run --parallel at a time, under the config's limits; then the
distribution is printed: outcomes, rounds to converge, cost and time, per
reviewer the approve rate, agreement with the hidden grader, and which of
its blocking objections a later grader failure or fix confirmed, and each
copy's outcome with why it did not converge (a run that stopped on an
error says why, kept in DIR/K/stopped.txt). Every figure comes from the copies' own files: walkie trials report DIR prints it
again at any time, and running trials again on FILE adds copies to DIR.

Under the tables, the distribution is drawn: the outcomes, the rounds each
trial ran to its end and what each cost, as bars split by outcome (coloured
on a terminal unless NO_COLOR or --color never; plain ASCII text in a
pipe, within 80 columns). --svg FILE draws the same charts into an SVG.

EXAMPLES:
   walkie trials eval.walkie.md -n 5 --parallel 2
   walkie trials eval.walkie.md -n 10 --approve --format json > dist.json
   walkie trials report eval.trials
   walkie trials report eval.trials --svg eval.svg`,
		Flags: append(trialsRunFlags(),
			&cli.IntFlag{Name: "n", Value: 3, Usage: "how many copies to make and run"},
			&cli.IntFlag{Name: "parallel", Value: 1, Usage: "how many copies run at once"},
			&cli.StringFlag{Name: "dir", Usage: "where the copies go (default: FILE's directory/ID.trials)"},
			&cli.StringFlag{Name: "format", Value: "markdown", Usage: "markdown or json"},
			svgFlag(),
		),
		Subcommands: []*cli.Command{trialsReportCommand(f, nil)},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			format, _, err := formatFlag(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, trialsRun, &trialsOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Ledger: f.Ledger,
				File: file, N: c.Int("n"), Parallel: c.Int("parallel"), Dir: c.String("dir"), Format: format,
				ConfigPath: c.String("config"), Agents: c.StringSlice("agents"), Approve: c.Bool("approve"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), SVG: c.String("svg")})
		},
	}
}

// trialsOptions are walkie trials's: the copies to make and run.
type trialsOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)
	Logger func(format string, verbose bool) (*zap.Logger, error)
	Ledger func(log *zap.Logger) string

	File        string
	N, Parallel int
	Dir         string // where the copies go; "": beside File
	Format      string // markdown or json
	ConfigPath  string
	Agents      []string
	Approve     bool
	LogFormat   string
	Verbose     bool
	SVG         string // --svg: the file to draw the distribution into
}

// trialsRunFlags are auto's flags that mean the same for every copy (the
// copies keep FILE's max_rounds, and the summary has --format).
func trialsRunFlags() []cli.Flag {
	var out []cli.Flag
	for _, f := range runFlags() {
		if n := f.Names()[0]; n != "max-rounds" && n != "json" {
			out = append(out, f)
		}
	}
	return out
}

func trialsReportCommand(f *Factory, runF func(context.Context, *trialsReportOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "the distribution of the trials in DIR, from the copies alone",
		ArgsUsage: "DIR",
		Description: `Prints the distribution of the copies in DIR (outcomes, rounds to converge,
cost and time, reviewers against the grader, each trial), then draws it:
bars of the outcomes, of the rounds each trial ran and of what each cost,
split by outcome. --svg FILE draws the same charts into an SVG file.`,
		Flags: append([]cli.Flag{&cli.StringFlag{Name: "format", Value: "markdown", Usage: "markdown or json (as --json)"}, svgFlag()}, jsonFlags(trials.Summary{})...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitBadInput, fmt.Errorf("trials report needs exactly one DIR argument (got %s): the directory walkie trials wrote", argCount(c.NArg())))
			}
			format, exp, err := formatFlag(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, trialsReportRun, &trialsReportOptions{IO: f.IO, Dir: c.Args().First(), Format: format, JSON: exp, SVG: c.String("svg")})
		},
	}
}

// trialsReportOptions are walkie trials report's.
type trialsReportOptions struct {
	IO     *IOStreams
	Dir    string
	Format string        // markdown or json
	JSON   *jsonExporter // --json's fields and --jq, with Format json
	SVG    string        // --svg: the file to draw the distribution into
}

func trialsReportRun(_ context.Context, o *trialsReportOptions) error {
	s, err := trials.Summarize(o.Dir)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	return writeSummary(o.IO, s, o.Format, o.JSON, o.SVG)
}

// svgFlag is --svg for the trials' distribution.
func svgFlag() cli.Flag {
	return &cli.StringFlag{Name: "svg", Usage: "also draw the distribution into this SVG file"}
}

// formatFlag is --format, and --json and --jq where the command has
// them: either of those is --format json, cut or queried as they ask.
func formatFlag(c *cli.Context) (string, *jsonExporter, error) {
	f := c.String("format")
	if f != "markdown" && f != "json" {
		return "", nil, withCode(exitBadInput, fmt.Errorf("--format %q: use markdown or json", f))
	}
	exp, err := exporterOf(c)
	if err != nil {
		return "", nil, err
	}
	if exp != nil {
		if c.IsSet("format") && f != "json" {
			return "", nil, withCode(exitBadInput, fmt.Errorf("--format %s and --json (or --jq) ask for two outputs: give one", f))
		}
		f = "json"
	}
	return f, exp, nil
}

// writeSummary prints the trials' summary as format asks (with its
// histograms under the markdown) and draws it into svg, when given.
func writeSummary(streams *IOStreams, s *trials.Summary, format string, exp *jsonExporter, svg string) error {
	if svg != "" {
		if err := writeSVGFile(svg, charts.NewDistribution(s).SVG); err != nil {
			return err
		}
	}
	if format == "json" {
		return exp.Write(streams.Out, s)
	}
	if err := writeClean(streams.Out, func(w io.Writer) error {
		s.Markdown(w)
		return nil
	}); err != nil {
		return err
	}
	return writeHistograms(streams, s)
}

func trialsRun(ctx context.Context, o *trialsOptions) error {
	file := o.File
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	cast, err := castFlag(file, nil, o.Agents)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	log, err := o.Logger(o.LogFormat, o.Verbose)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := interruptible(ctx, o.IO.ErrOut)
	defer stop()
	limiter, err := newLimiter(cfg, o.Ledger(log), log)
	if err != nil {
		return err
	}
	defer limiter.Close()
	var mu sync.Mutex
	s, err := trials.Run(ctx, trials.Options{File: file, N: o.N, Parallel: o.Parallel, Dir: o.Dir, Config: cfg, Cast: cast,
		Approve: o.Approve, Log: log, Acquire: limiter.Acquire,
		Done: func(t trials.Trial) {
			mu.Lock()
			defer mu.Unlock()
			log.Info("trial ended", zap.String("file", filepath.Base(t.File)), zap.String("status", t.Status), zap.Int("rounds", t.Rounds), zap.Float64("cost_usd", t.CostUSD))
		}})
	var ie *walkie.InputError
	switch {
	case errors.Is(err, trials.ErrSource), errors.As(err, &ie):
		return withCode(exitBadInput, err)
	case ctx.Err() != nil:
		return withCode(exitSignal, err)
	case err != nil:
		return err
	}
	return writeSummary(o.IO, s, o.Format, nil, o.SVG)
}
