package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func runFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir; none needed for the built-in presets)"},
		&cli.StringSliceFlag{Name: "agents", Usage: "configured agents that play the participants, in turn order (a,b) or by name (alice=claude,bob=codex)"},
		&cli.IntFlag{Name: "max-rounds", Usage: "replace the file's max_rounds for this run"},
		&cli.BoolFlag{Name: "approve", Usage: "approve an unapproved briefing without asking (for CI); the log says so"},
		&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
		&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (human on a terminal, JSON otherwise), console or json"},
		&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"},
	}, notifyFlags()...)
}

func autoCommand() *cli.Command {
	return &cli.Command{
		Name:      "auto",
		Usage:     "run the debate to its end: one agent session per turn",
		ArgsUsage: "FILE",
		Description: `Runs the controller loop: each turn, the next participant's agent CLI starts in
a fresh pseudo-terminal with the pinned prompt, appends one turn to FILE and
is ended; walkie judges the turn, stamps it, logs the attempt in
.walkie/ID/turns.jsonl and moves on, until every participant signs off, the
round cap or budget is reached, retries are spent, or a person runs
walkie halt. A bad turn is undone byte for byte and retried.

A participant with no agent in the config (a person, or a live session that
answers with walkie post) is never run: at its turn auto says whose post it
waits for (walkie post FILE --from NAME), tells the notify sinks, and goes on
when the post lands, woken by the doorbell.

Before the first turn auto says which agents' cost cannot be told (no usage
report, a model missing from the pricing table) and what to add to
walkie.yaml. With a budget, an attempt of unknown cost counts as the
costliest known one, and at least a tenth of the budget.

Events go to the config's notify sinks, as from walkie serve (--no-notify
sends nothing); at exit the queue gets --notify-timeout to drain.

On a terminal a live status line shows the running turn; elsewhere one log
line per event. Ctrl-C ends the running turn cleanly and records it; a second
Ctrl-C exits at once. Started again after a crash, auto cleans up the
interrupted attempt and continues.

EXAMPLES:
   walkie auto api.walkie.md
   walkie auto api.walkie.md --agents claude,codex --max-rounds 4
   walkie auto design.walkie.md --approve --log-format json   # in CI
`,
		Flags:  runFlags(),
		Action: func(c *cli.Context) error { return runController(c, false) },
	}
}

func turnCommand() *cli.Command {
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
		Flags:  runFlags(),
		Action: func(c *cli.Context) error { return runController(c, true) },
	}
}

func runController(c *cli.Context, once bool) error {
	file, err := fileArg(c)
	if err != nil {
		return err
	}
	cfg, err := config.Load(c.String("config"))
	if err != nil {
		return withCode(exitBadInput, err)
	}
	cast, err := castFlag(file, c.StringSlice("agents"))
	if err != nil {
		return withCode(exitBadInput, err)
	}
	stderr := c.App.ErrWriter
	tty := isTerminal(stderr)
	log, err := newLogger(stderr, c.String("log-format"), c.Bool("verbose"), tty)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	defer func() { _ = log.Sync() }()
	var disp *display
	if tty && c.String("log-format") == "auto" && !c.Bool("verbose") {
		disp = newDisplay(stderr)
		defer disp.stop()
		log = zap.NewNop() // the display speaks for the log on a terminal
	}
	n, stopNotify, err := startNotifier(c, cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := interruptible(c.Context, stderr)
	defer stop()
	opts := controller.Options{File: file, Config: cfg, Cast: cast, MaxRounds: c.Int("max-rounds"), Once: once, Approve: c.Bool("approve"), Log: log,
		Wait: true, CheckPricing: true}
	observers := []func(controller.Event){notifyObserver(file, n)}
	if disp != nil {
		observers = append(observers, disp.observe)
	}
	opts.Observe = func(e controller.Event) {
		for _, o := range observers {
			o(e)
		}
	}
	sum, err := controller.Run(ctx, opts)
	if disp != nil {
		disp.stop()
	}
	stopNotify()
	if err != nil {
		return withCode(runErrorCode(err), err)
	}
	printSummary(c.App.Writer, file, sum, c.Bool("json"))
	return runResult(sum, once)
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
	case errors.Is(err, controller.ErrBadInput), errors.Is(err, walkie.ErrLocked):
		return exitBadInput
	}
	return exitCode(err)
}

// errorForStatus is the message for a run that did not converge.
func errorForStatus(sum controller.Summary) error {
	switch {
	case sum.Interrupted:
		return errors.New("interrupted; run the same command again to continue")
	case sum.Status == walkie.StatusConverged:
		return nil
	case sum.Status == walkie.StatusOpen:
		return fmt.Errorf("the debate is still open after %d turns", sum.Turns)
	case sum.Reason != "":
		return fmt.Errorf("debate ended %s: %s", sum.Status, sum.Reason)
	}
	return fmt.Errorf("debate ended %s", sum.Status)
}

func runExitCode(sum controller.Summary, once bool) int {
	if sum.Interrupted {
		return exitSignal
	}
	switch sum.Status {
	case walkie.StatusConverged:
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
// by the i-th agent) or named (alice=claude).
func castFlag(file string, list []string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return nil, err
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

func printSummary(w io.Writer, file string, sum controller.Summary, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			File        string                  `json:"file"`
			Status      string                  `json:"status"`
			Reason      string                  `json:"reason,omitempty"`
			Interrupted bool                    `json:"interrupted,omitempty"`
			Turns       int                     `json:"turns"`
			CostUSD     float64                 `json:"cost_usd"`
			Unknown     int                     `json:"unknown_costs,omitempty"`
			UnknownUSD  float64                 `json:"unknown_cost_estimate_usd,omitempty"`
			BudgetUSD   float64                 `json:"budget_usd,omitempty"`
			Waiting     string                  `json:"waiting,omitempty"`
			Attempts    []controller.TurnRecord `json:"attempts"`
		}{file, sum.Status, sum.Reason, sum.Interrupted, sum.Turns, sum.CostUSD, sum.UnknownCosts, sum.UnknownUSD, sum.BudgetUSD, sum.Waiting, nonNil(sum.Attempts)})
		return
	}
	if len(sum.Attempts) > 0 {
		writeLogTable(w, sum.Attempts)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s: %s after %d turns", file, sum.Status, sum.Turns)
	if sum.Reason != "" {
		fmt.Fprintf(w, " (%s)", sum.Reason)
	}
	if sum.CostUSD > 0 || sum.UnknownCosts > 0 {
		fmt.Fprintf(w, ", %s", controller.Money(sum.CostUSD))
	}
	if s := unknownCosts(sum.UnknownCosts, sum.UnknownUSD, sum.BudgetUSD); s != "" {
		fmt.Fprintf(w, " %s", s)
	}
	fmt.Fprintln(w)
}

// unknownCosts says how much of a debate's cost is unknown, and what a
// budget counts it as; "" when none is.
func unknownCosts(n int, estimate, budget float64) string {
	if n == 0 {
		return ""
	}
	s := fmt.Sprintf("+ %d attempt(s) of unknown cost", n)
	if budget > 0 {
		s += fmt.Sprintf(", counted as %s against the %s budget", controller.Money(estimate), controller.Money(budget))
	}
	return s
}

func nonNil(r []controller.TurnRecord) []controller.TurnRecord {
	if r == nil {
		return []controller.TurnRecord{}
	}
	return r
}
