package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func runFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir; none needed for the built-in presets)"},
		&cli.StringSliceFlag{Name: "agents", Usage: "configured agents that play the participants, in turn order (a,b) or by name (alice=claude,bob=codex)"},
		&cli.IntFlag{Name: "max-rounds", Usage: "replace the file's max_rounds for this run"},
		&cli.BoolFlag{Name: "approve", Usage: "approve an unapproved briefing, and a round table's phases, without asking (for CI); the log says so"},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
		&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (live lines on a terminal, one progress line per event elsewhere), console or json (log lines)"},
		verboseFlag(),
		waitForPeopleFlag(),
	}, notifyFlags()...)
}

// defaultWaitForPeople is how long a run off a terminal, or under CI,
// waits for a person's post before it exits 16: long enough for a person
// told by a notification to answer, short enough that a CI job or a cron
// run that nobody will answer does not hang until its own timeout.
const defaultWaitForPeople = 30 * time.Minute

// waitForPeopleFlag is --wait-for-people of every form that waits for a
// person (auto, turn, new).
func waitForPeopleFlag() cli.Flag {
	return &cli.DurationFlag{Name: "wait-for-people", Usage: "how long to wait for a person's post before exiting 16, with a notification (0: as long as it takes)", DefaultText: "no limit on a terminal, " + defaultWaitForPeople.String() + " off one or under CI"}
}

// waitForPeopleValue is --wait-for-people, nil when not given.
func waitForPeopleValue(c *cli.Context) *time.Duration {
	if !c.IsSet("wait-for-people") {
		return nil
	}
	d := c.Duration("wait-for-people")
	return &d
}

// waitLimit is how long a run waits for a person: as given, else none
// where a person is at the terminal, and defaultWaitForPeople where no
// one may be (standard input is not a terminal, or CI is set).
func waitLimit(streams *IOStreams, given *time.Duration) time.Duration {
	switch {
	case given != nil:
		return *given
	case streams.IsStdinTTY() && os.Getenv("CI") == "":
		return 0
	}
	return defaultWaitForPeople
}

// takeOverFlag takes a debate back from a walkie serve --engine temporal
// home that is gone for good (docs/scale-out.md).
func takeOverFlag() cli.Flag {
	return &cli.BoolFlag{Name: "take-over", Usage: "run a debate a walkie serve --engine temporal home ran, once that home is gone for good and its workflow terminated: " +
		"its mark (.walkie/ID/" + controller.HomeFile + ") is removed and a turn it left running is recovered as interrupted"}
}

func autoCommand(f *Factory, runF func(context.Context, *runOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "auto",
		Usage:     "run the debate to its end: one agent session per turn",
		ArgsUsage: "FILE",
		Description: `Runs the controller loop: each turn, the next participant's agent CLI starts in
a fresh pseudo-terminal with the pinned prompt, appends one turn to FILE and
is ended; walkie judges the turn, stamps it, logs the attempt in
.walkie/ID/log.jsonl and moves on, until every participant signs off, the
round cap or budget is reached, retries are spent, or a person runs
walkie halt. A bad turn is undone byte for byte and retried.

A participant declared a person (people: in the front matter or in
walkie.yaml; a live session that answers with walkie post is one too) is
never run: at its turn auto says whose post it waits for (walkie post FILE
--from NAME), tells the notify sinks, and goes on when the post lands, woken
by the doorbell; with Telegram both ways (people with chats with the bot),
the person's reply there is the post, and the supervisor's /halt, /extend
and /note reach the run. Off a terminal or under CI that wait has a limit
(--wait-for-people, 30m by default): then auto tells the sinks and exits 16.
A participant that is neither an agent nor a declared person is refused
before anything runs (exit 2), with the name most likely meant.

Before the first turn auto says which agents' cost cannot be told (no usage
report, a model missing from the pricing table) and what to add to
walkie.yaml. With a budget, an attempt of unknown cost counts as the
costliest known one, and at least a tenth of the budget.

Events go to the config's notify sinks, as from walkie serve (--no-notify
sends nothing); at exit the queue gets --notify-timeout to drain.

On a terminal a live line per running session shows its turn, its clock and
what the agent is doing, and each recorded attempt leaves a line; elsewhere
(a pipe, a CI log) one readable line per event; --log-format json gives JSON
log lines. At the end: the outcome, the agreement or where each party
stands, the cost and where the record is (--json: one JSON object).
walkie follow FILE shows the same from another terminal. Ctrl-C ends the
running turn cleanly and records it; a second Ctrl-C exits at once. Started
again after a crash, auto cleans up the interrupted attempt and continues.

A debate walkie serve --engine temporal runs is refused (exit 3): its turns
run on remote workers, and one may be out with no lock held here. Halt it
with walkie halt, or let the home run it; --take-over takes it back once
that home is gone for good (docs/scale-out.md).

EXAMPLES:
   walkie auto api.walkie.md
   walkie auto api.walkie.md --agents claude,codex --max-rounds 4
   walkie auto design.walkie.md --approve --log-format json   # in CI
`,
		Flags:  append(runFlags(), takeOverFlag()),
		Action: func(c *cli.Context) error { return runController(c, f, runF, false) },
	}
}

func turnCommand(f *Factory, runF func(context.Context, *runOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "turn",
		Usage:     "run exactly one turn (with its retries) and stop",
		ArgsUsage: "FILE",
		Description: `Like walkie auto, but stops after one accepted turn, before it looks at who
plays the next one. At the turn of a participant walkie does not run (a
person), it waits for that post: the post is the one turn. Exit 0 when the
turn was accepted and the debate goes on (or converged); otherwise the
status's code.

EXAMPLES:
   walkie turn api.walkie.md && walkie status api.walkie.md`,
		Flags:  append(runFlags(), takeOverFlag()),
		Action: func(c *cli.Context) error { return runController(c, f, runF, true) },
	}
}

// runOptions are walkie auto's and turn's, and what walkie new runs its
// debate with.
type runOptions struct {
	IO       *IOStreams
	Config   func(path string) (*config.Config, error)
	Logger   func(format string, verbose bool) (*zap.Logger, error)
	Registry func(log *zap.Logger) string
	Ledger   func(log *zap.Logger) string

	File       string
	ConfigPath string
	Agents     []string // --agents, as given
	// By is who runs it, for the registry: "walkie auto".
	By        string
	Once      bool // walkie turn
	MaxRounds int  // replaces the file's max_rounds; 0 keeps it
	Approve   bool
	JSON      bool
	TakeOver  bool
	LogFormat string
	Verbose   bool
	Notify    notifyOptions
	// WaitForPeople is --wait-for-people; nil when not given (waitLimit).
	WaitForPeople *time.Duration
}

// runController reads auto's and turn's flags into runOptions.
func runController(c *cli.Context, f *Factory, runF func(context.Context, *runOptions) error, once bool) error {
	file, err := recordArg(c)
	if err != nil {
		return err
	}
	opts := &runOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger,
		File: file, ConfigPath: c.String("config"), Agents: c.StringSlice("agents"), By: "walkie " + c.Command.Name,
		Once: once, MaxRounds: c.Int("max-rounds"), Approve: c.Bool("approve"), JSON: c.Bool("json"), TakeOver: c.Bool("take-over"),
		LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), Notify: notifyFlagValues(c), WaitForPeople: waitForPeopleValue(c)}
	return runWith(c.Context, runF, autoRun, opts)
}

func autoRun(ctx context.Context, o *runOptions) error {
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	// The front matter is read once, here, for all that follows: who
	// plays whom, the run, the notifications and who holds the debate.
	meta, err := walkie.ReadMeta(o.File)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	cast, err := castFlag(o.File, &meta, o.Agents)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	return runDebate(ctx, o, &meta, cfg, cast)
}

// runDebate runs the controller on o.File, whose front matter is meta
// (nil: read it), showing it on standard error as it goes and how it
// ended on standard output (walkie auto, turn, new).
func runDebate(ctx context.Context, o *runOptions, meta *walkie.Meta, cfg *config.Config, cast map[string]string) error {
	file := o.File
	if meta == nil {
		m, err := walkie.ReadMeta(file)
		if err != nil {
			return withCode(exitBadInput, err)
		}
		meta = &m
	}
	out, err := newRunOutput(o.IO, o.Logger, o.LogFormat, o.Verbose)
	if err != nil {
		return err
	}
	defer out.stop()
	defer func() { _ = out.log.Sync() }()
	n, stopNotify, err := startNotifier(o.IO, o.Notify, cfg, out.log)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(ctx, o.IO.ErrOut)
	defer stop()
	limits, err := newLimiter(cfg, o.Ledger(out.log), out.log)
	if err != nil {
		return err
	}
	defer limits.Close()
	opts := controller.Options{File: file, Meta: meta, Config: cfg, Cast: cast, Once: o.Once, Log: out.log, Acquire: limits.Acquire,
		Registry: o.Registry(out.log), By: o.By, Wait: true, CheckPricing: true, TakeOver: o.TakeOver,
		MaxRounds: o.MaxRounds, Approve: o.Approve, WaitLimit: waitLimit(o.IO, o.WaitForPeople)}
	toSinks, show := notifyObserver(file, walkie.StateDir(file, meta.ID), n), out.observe
	// While a person's turn is open, their reply on Telegram is the post.
	poll, stopPoll := func(controller.Event) {}, func() {}
	if !o.Notify.Off {
		abs, _ := filepath.Abs(file)
		if poll, stopPoll, err = pollWhileWaiting(ctx, cfg, abs, opts.Registry, out.log); err != nil {
			return err
		}
	}
	opts.Observe = func(e controller.Event) {
		toSinks(e)
		poll(e)
		if show != nil { // nil when the log speaks alone
			show(e)
		}
	}
	sum, err := controller.Run(ctx, opts)
	stopPoll()
	out.stop()
	stopNotify()
	if errors.Is(err, walkie.ErrLocked) {
		return withCode(exitRefused, heldBy(file, meta))
	}
	if err != nil {
		return withCode(runErrorCode(err), err)
	}
	if err := printSummary(o, sum); err != nil {
		return err
	}
	return runResult(sum, o.Once)
}

// heldBy says which controller runs a debate already, and what to do
// instead of starting a second.
func heldBy(file string, meta *walkie.Meta) error {
	who := "another controller"
	if b, err := os.ReadFile(filepath.Join(walkie.StateDir(file, meta.ID), "run.lock")); err == nil && len(bytes.TrimSpace(b)) > 0 {
		who += " (pid " + string(bytes.TrimSpace(b)) + ")"
	}
	return fmt.Errorf("%s is already being run by %s: watch it with walkie follow %s, stop it with walkie halt %s", file, who, file, file)
}

// runResult is how a run that went as far as it could ends: nil for exit
// 0, else an error carrying the status's exit code.
func runResult(sum controller.Summary, once bool) error {
	code := runExitCode(sum, once)
	if code == exitOK {
		return nil
	}
	return withCode(code, errorForStatus(sum))
}

// runErrorCode is the exit code of a run that could not go on. A record
// that does not verify has its own code, ahead of bad input in general,
// so a script can tell "someone edited the file" from "fix your flags".
func runErrorCode(err error) int {
	var che *walkie.ChainError
	var te *walkie.TornTailError
	switch {
	case errors.As(err, &che), errors.As(err, &te):
		return exitUnverified
	case errors.As(err, new(*controller.HomedError)):
		return exitRefused // a remote home runs it: not the caller's input
	case errors.Is(err, walkie.ErrLocked):
		return exitRefused // another controller runs it: not the caller's input
	case errors.Is(err, controller.ErrBadInput):
		return exitBadInput
	}
	return exitCode(err)
}

// errorForStatus is the message for a run that did not converge.
func errorForStatus(sum controller.Summary) error {
	switch {
	case sum.Interrupted:
		return errors.New("interrupted; run the same command again to continue")
	case sum.WaitExpired:
		return fmt.Errorf("gave up waiting (--wait-for-people): %s; the supervisor was notified, and the same command goes on once the post is in", sum.Waiting)
	case sum.Status == walkie.StatusConverged, sum.Status == walkie.StatusClosed:
		return nil
	case sum.Status == walkie.StatusOpen:
		return fmt.Errorf("the debate is still open after %s", walkie.Count(sum.Turns, "turn", "turns"))
	}
	return errors.New(term.EndLine(sum.Status, sum.Reason))
}

func runExitCode(sum controller.Summary, once bool) int {
	switch {
	case sum.Interrupted:
		return exitSignal
	case sum.WaitExpired:
		return exitWaiting
	}
	switch sum.Status {
	case walkie.StatusConverged, walkie.StatusClosed:
		// A closed review thread ended as its parties decided; whether
		// its work may be merged is walkie gate's to say.
		return exitOK
	case walkie.StatusOpen:
		if once {
			return exitOK
		}
		return exitOpen
	case walkie.StatusMaxRounds:
		return exitMaxRounds
	case walkie.StatusFailed:
		return exitFailed
	case walkie.StatusHalted:
		return exitHalted
	case walkie.StatusOverBudget:
		return exitOverBudget
	case walkie.StatusDeadlocked:
		return exitDeadlocked
	}
	return exitError
}

// castFlag reads --agents: positional (a,b: the i-th participant is played
// by the i-th agent) or named (alice=claude), for file, whose front matter
// is meta (nil: read it, if there are agents to cast).
func castFlag(file string, meta *walkie.Meta, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	if meta == nil {
		m, err := walkie.ReadMeta(file)
		if err != nil {
			return nil, err
		}
		meta = &m
	}
	cast := map[string]string{}
	for i, item := range list {
		item = strings.TrimSpace(item)
		if p, a, ok := strings.Cut(item, "="); ok {
			p, a = strings.TrimSpace(p), strings.TrimSpace(a)
			if p == "" || a == "" {
				return nil, fmt.Errorf("--agents: %q: write PARTICIPANT=AGENT", item)
			}
			if prev, dup := cast[p]; dup && prev != a {
				return nil, fmt.Errorf("--agents: %s is cast twice (%s and %s)", p, prev, a)
			}
			cast[p] = a
			continue
		}
		if item == "" {
			return nil, fmt.Errorf("--agents: agent %d is empty", i+1)
		}
		if i >= len(meta.Participants) {
			return nil, fmt.Errorf("--agents names %d agents but %s has %d participants (%s)", len(list), file, len(meta.Participants), strings.Join(meta.Participants, ", "))
		}
		cast[meta.Participants[i]] = item
	}
	for p := range cast {
		if !contains(meta.Participants, p) {
			return nil, fmt.Errorf("--agents: %q is not a participant of %s (participants: %s)", p, file, strings.Join(meta.Participants, ", "))
		}
	}
	return cast, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// interruptible cancels the context on the first SIGINT or SIGTERM, so
// the running turn ends cleanly and is recorded; a second SIGINT exits at
// once.
func interruptible(parent context.Context, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-ch:
				n++
				if n == 1 {
					fmt.Fprintln(stderr, "\nwalkie: ending the running turn (Ctrl-C again to exit at once)")
					cancel()
					continue
				}
				os.Exit(exitSignal)
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// printSummary prints how the run ended on standard output (see term.End).
func printSummary(o *runOptions, sum controller.Summary) error {
	w, file := o.IO.Out, o.File
	d, _ := walkie.Load(file) // the summary without the record's text is still worth printing
	if o.JSON {
		return term.EndJSON(w, file, d, sum)
	}
	r := term.NewRenderer(o.IO.OutPalette(), o.IO.OutWidth(), time.Local)
	term.End(w, r, file, term.Where(file), d, sum)
	return nil
}
