package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

func phaseCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "phase",
		Usage: "show, approve or redo a round table's research and plan phases",
		Description: `A round table may declare phases before its first round in the front matter
(walkie: 2, phases: [{research: gemini}, {plan: claude}]). walkie auto runs
each in a fresh session with its pinned prompt; the agent writes one file,
kept as .walkie/ID/phases/KIND.md, and the run stops until a person approves
it (or walkie auto --approve approves it, in CI). Approving appends a
supervisor entry that pins the file's sha256 into the record: the
implementer and every reviewer read it, a reviewer may cite its sections as
the rule an input breaks, and walkie checks it against the pin before every
step. See docs/roundtable.md.

EXAMPLES:
   walkie phase show eval.walkie.md
   walkie phase show eval.walkie.md plan > spec.md
   walkie phase approve eval.walkie.md research
   walkie phase redo eval.walkie.md plan`,
		Subcommands: []*cli.Command{phaseShowCommand(f, nil), phaseApproveCommand(f, nil), phaseRedoCommand(f, nil)},
	}
}

// phaseOptions are walkie phase show's, approve's and redo's: the round
// table and the phase.
type phaseOptions struct {
	IO   *IOStreams
	File string
	Kind string        // "": every phase (phase show)
	JSON *jsonExporter // phase show's --json and --jq
	Yes  bool          // phase approve: without asking
}

// phaseArgs reads FILE and, when kindRequired, KIND.
func phaseArgs(c *cli.Context, kindRequired bool) (file, kind string, err error) {
	n := c.NArg()
	if n < 1 || n > 2 || kindRequired && n != 2 {
		usage := "FILE [KIND]"
		if kindRequired {
			usage = "FILE KIND"
		}
		return "", "", withCode(exitBadInput, fmt.Errorf("phase %s takes %s (got %s); see `walkie phase %s --help`", c.Command.Name, usage, argCount(n), c.Command.Name))
	}
	return c.Args().Get(0), c.Args().Get(1), nil
}

// phaseOf is the phase of kind in the round table in file, or a
// bad-input error that lists its phases.
func phaseOf(file, kind string) (roundtable.PhaseBrief, error) {
	phases, err := roundtable.ListPhases(file)
	if err != nil {
		return roundtable.PhaseBrief{}, err
	}
	return findPhase(file, phases, kind)
}

// findPhase returns the phase of kind among phases, or a bad-input error
// that lists them.
func findPhase(file string, phases []roundtable.PhaseBrief, kind string) (roundtable.PhaseBrief, error) {
	var kinds []string
	for _, p := range phases {
		if p.Phase == kind {
			return p, nil
		}
		kinds = append(kinds, p.Phase)
	}
	if len(kinds) == 0 {
		return roundtable.PhaseBrief{}, withCode(exitBadInput, fmt.Errorf("%s declares no phases (phases: in a round table's front matter, format 2)", file))
	}
	return roundtable.PhaseBrief{}, withCode(exitBadInput, fmt.Errorf("%s has no %q phase; its phases: %s", file, kind, strings.Join(kinds, ", ")))
}

func phaseShowCommand(f *Factory, runF func(context.Context, *phaseOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "list the phases, or print one phase's file",
		ArgsUsage: "FILE [KIND]",
		Description: `Without KIND, lists each phase: its agent, its state (not run, failed,
awaiting approval, approved), attempts, time, cost and sha256. With KIND,
prints the phase's file on standard output and its state on standard error.`,
		Flags: jsonFlags(roundtable.PhaseBrief{}),
		Action: func(c *cli.Context) error {
			file, kind, err := phaseArgs(c, false)
			if err != nil {
				return err
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, phaseShowRun, &phaseOptions{IO: f.IO, File: file, Kind: kind, JSON: exp})
		},
	}
}

func phaseShowRun(_ context.Context, o *phaseOptions) error {
	file, kind, w := o.File, o.Kind, o.IO.Out
	phases, err := roundtable.ListPhases(file)
	if err != nil {
		return err
	}
	if kind == "" {
		if o.JSON != nil {
			return o.JSON.Write(w, nonNilPhases(phases))
		}
		if len(phases) == 0 {
			fmt.Fprintf(w, "%s declares no phases\n", file)
			return nil
		}
		return writeClean(w, func(w io.Writer) error {
			fmt.Fprintf(w, "| phase | agent | state | attempts | time | cost | sha256 |\n|---|---|---|---|---|---|---|\n")
			for _, p := range phases {
				fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s |\n", p.Phase, p.Agent, phaseState(p), p.Attempts, ms(p.DurationMS), term.Money(p.CostUSD, false), orDash(shortHash(p.SHA256)))
			}
			return nil
		})
	}
	p, err := findPhase(file, phases, kind)
	if err != nil {
		return err
	}
	if o.JSON != nil {
		return o.JSON.Write(w, p)
	}
	if p.Output == "" {
		return withCode(exitRefused, fmt.Errorf("the %s phase of %s has no file yet (%s)", kind, file, phaseState(p)))
	}
	text, err := os.ReadFile(p.Output)
	if err != nil {
		return err
	}
	// An agent wrote the file: on a terminal it is shown cleaned, into a
	// pipe or a file it goes as it is.
	if o.IO.IsStdoutTTY() {
		text = []byte(term.Clean(string(text)))
	}
	fmt.Fprint(w, string(text))
	fmt.Fprintf(o.IO.ErrOut, "— the %s phase by %s: %s, %d words, %s\n", kind, p.Agent, term.Clean(phaseState(p)), len(strings.Fields(string(text))), p.Output)
	return nil
}

// phaseState says a phase's state in words, with what to do about it.
func phaseState(p roundtable.PhaseBrief) string {
	switch p.State {
	case roundtable.PhaseFailed:
		return fmt.Sprintf("failed (%s: %s)", p.Outcome, p.Detail)
	case roundtable.PhaseApproved:
		return "approved by " + p.ApprovedBy
	}
	return p.State
}

func ms(n int64) string {
	if n == 0 {
		return "—"
	}
	return (time.Duration(n) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func nonNilPhases(p []roundtable.PhaseBrief) []roundtable.PhaseBrief {
	if p == nil {
		return []roundtable.PhaseBrief{}
	}
	return p
}

func phaseApproveCommand(f *Factory, runF func(context.Context, *phaseOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "show a phase's file and pin its sha256 into the record",
		ArgsUsage: "FILE KIND",
		Description: `Shows the phase's file (you may correct it first: what is there when you
approve is what is pinned), then on a terminal asks for confirmation; --yes
skips the question. Approving appends a supervisor entry with the file's
sha256; the next walkie auto goes on from there. An approved phase cannot be
approved again or redone: the record is append-only.

EXAMPLES:
   walkie phase approve eval.walkie.md research
   walkie phase approve eval.walkie.md plan --yes`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "approve without asking"}},
		Action: func(c *cli.Context) error {
			file, kind, err := phaseArgs(c, true)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, phaseApproveRun, &phaseOptions{IO: f.IO, File: file, Kind: kind, Yes: c.Bool("yes")})
		},
	}
}

func phaseApproveRun(_ context.Context, o *phaseOptions) error {
	file, kind, w := o.File, o.Kind, o.IO.Out
	p, err := phaseOf(file, kind)
	if err != nil {
		return err
	}
	switch p.State {
	case roundtable.PhaseApproved:
		fmt.Fprintf(w, "%s: the %s phase is already approved (sha256 %s)\n", file, kind, shortHash(p.SHA256))
		return nil
	case roundtable.PhaseNotRun, roundtable.PhaseFailed:
		return withCode(exitRefused, fmt.Errorf("the %s phase of %s has no file to approve (%s): run walkie auto %s", kind, file, phaseState(p), file))
	}
	shown, err := os.ReadFile(p.Output)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# The %s phase of %s, by %s\n\n%s\n— %d words, %s\n", kind, file, p.Agent, bytes.TrimRight(shown, "\n"), len(strings.Fields(string(shown))), p.Output)
	if !o.Yes {
		if !o.IO.CanPrompt() {
			return withCode(exitBadInput, errors.New("not approved: standard input is not a terminal, so nobody can confirm; pass --yes to approve without the question"))
		}
		if !o.IO.Confirm(fmt.Sprintf("\nApprove the %s phase's file? [y/N] ", kind)) {
			return withCode(exitError, errors.New("not approved; nothing changed"))
		}
	}
	if now, err := os.ReadFile(p.Output); err != nil || !bytes.Equal(now, shown) {
		return withCode(exitRefused, fmt.Errorf("%s changed while it was shown: run walkie phase approve again", p.Output))
	}
	hash, err := roundtable.ApprovePhase(file, kind, roundtable.ApprovedByPerson)
	switch {
	case errors.Is(err, roundtable.ErrPhaseApproved), errors.Is(err, roundtable.ErrPhaseNotWritten):
		return withCode(exitRefused, err)
	case err != nil:
		return err
	}
	fmt.Fprintf(w, "%s: the %s phase is approved, sha256 %s; walkie auto %s goes on\n", file, kind, hash, file)
	return nil
}

func phaseRedoCommand(f *Factory, runF func(context.Context, *phaseOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "redo",
		Usage:     "throw away a phase's unapproved file so the next run writes it again",
		ArgsUsage: "FILE KIND",
		Description: `Removes .walkie/ID/phases/KIND.md and its result; the next walkie auto runs the
phase again (its transcripts and earlier attempts' files stay). Refused once
the phase is approved: the record is append-only.`,
		Action: func(c *cli.Context) error {
			file, kind, err := phaseArgs(c, true)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, phaseRedoRun, &phaseOptions{IO: f.IO, File: file, Kind: kind})
		},
	}
}

func phaseRedoRun(_ context.Context, o *phaseOptions) error {
	file, kind := o.File, o.Kind
	if _, err := phaseOf(file, kind); err != nil {
		return err
	}
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return err
	}
	if walkie.ControllerRunning(walkie.StateDir(file, meta.ID)) {
		return withCode(exitRefused, errors.New("a controller is running this round table: its phases cannot change under it"))
	}
	if err := roundtable.RedoPhase(file, kind); err != nil {
		if errors.Is(err, roundtable.ErrPhaseApproved) {
			return withCode(exitRefused, err)
		}
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s: the %s phase will run again at the next walkie auto\n", file, kind)
	return nil
}
