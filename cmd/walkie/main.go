// Command walkie runs structured debates and reviews between AI coding
// agents through a shared, tamper-evident markdown file.
//
// Each command is built as gh builds its own: an options struct, a
// constructor that declares the flags and fills the options from them,
// and a run function that takes the options and no *cli.Context, so a
// test can parse real arguments into the options, or call run with a fake
// Factory (factory.go). Exit codes are decided here, in one place.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Exit codes, documented in `walkie --help` and docs/controller.md ("Exit
// codes").
const (
	exitOK         = 0
	exitError      = 1  // anything unexpected (I/O, a bug)
	exitBadInput   = 2  // bad flags, bad file, bad config
	exitRefused    = 3  // a post, or a change of state, was refused
	exitUnverified = 4  // the record does not verify (edited, reordered, truncated, torn)
	exitMaxRounds  = 10 // the debate reached its round cap
	exitFailed     = 11 // retries spent
	exitHalted     = 12 // a person halted it
	exitOverBudget = 13
	exitDeadlocked = 14
	exitOpen       = 15 // the debate is still open where it should have ended
	exitWaiting    = 16 // gave up waiting for a person (--wait-for-people)
	exitSignal     = 130
)

// Exit codes of walkie review (docs/ci.md): a rejected design and a review
// that could not finish never share a code.
const (
	exitDisagreed    = 20 // the reviewers did not all accept a document
	exitAgentsFailed = 21 // an agent or its model kept failing: not a rejection
	exitCannotRun    = 22 // an agent cannot run here (missing CLI, no key, blocked)
)

const exitCodesHelp = `EXIT CODES:
   0   success; for auto: the debate converged, or the review thread was closed
       (walkie gate says whether its work may be merged)
   1   unexpected error
   2   bad input: flags, walkie file, config (the message names file, line and fix)
   3   refused: a post out of turn or against the rules, or a change the debate's
       state forbids (the message says why and whose turn it is)
   4   the record does not verify, or has a torn tail
   10  max-rounds: the round cap was reached
   11  failed: retries were spent on a turn
   12  halted by a person (walkie halt)
   13  over-budget
   14  deadlocked
   15  still open (reserved: walkie turn exits 0 after an accepted turn)
   16  gave up waiting for a person's post after --wait-for-people (the default
       off a terminal or under CI is 30m); the supervisor is notified, and the
       same command goes on once the post is in
   20  review: disagreed (a document was not accepted; not with --fail-on never)
   21  review: an agent or its model kept failing; not a rejection, run it again
   22  review: an agent cannot run here (CLI missing, not logged in, blocked)
   130 interrupted (SIGINT)`

// codedError carries an exit code up to main, the one place that exits.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// saidError is an error the command has already told the person, in its
// own output: main exits with its code and prints it no second time.
type saidError struct{ err error }

func (e *saidError) Error() string { return e.err.Error() }
func (e *saidError) Unwrap() error { return e.err }

func said(err error) error { return &saidError{err} }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

// exitCode maps an error to the documented exit codes.
func exitCode(err error) int {
	var ce *codedError
	var ie *walkie.InputError
	var re *walkie.RefusedError
	var che *walkie.ChainError
	var te *walkie.TornTailError
	var cfe *config.Error
	var ue cli.ExitCoder
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ie), errors.As(err, &cfe):
		return exitBadInput
	case errors.As(err, &re):
		return exitRefused
	case errors.As(err, &che), errors.As(err, &te):
		return exitUnverified
	case errors.As(err, &ue):
		// urfave's own refusals ("No help topic for 'x'") are usage
		// errors.
		return exitBadInput
	}
	return exitError
}

func main() {
	if err := takeHandoff(); err != nil {
		fmt.Fprintln(os.Stderr, "walkie:", err)
		os.Exit(exitCode(err))
	}
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(newFactory(stdin, stdout, stderr))
	switch {
	case len(args) > 2 && args[len(args)-1] == completeFlag && isFlag(args[len(args)-2]):
		completeFlags(app, args[1:len(args)-2], args[len(args)-2], stdout)
		return exitOK
	case len(args) == 0 || args[len(args)-1] != completeFlag:
		// A completion asks with the words as typed, the flag last.
		args = interspersed(app, args)
	}
	err := app.Run(args)
	if err != nil && !errors.As(err, new(*saidError)) {
		// An error may quote a reason, a note or an agent's detail.
		fmt.Fprintln(stderr, "walkie:", term.Clean(err.Error()))
	}
	return exitCode(err)
}

// newApp is walkie's command line, every command built with f.
func newApp(f *Factory) *cli.App {
	app := &cli.App{
		Name:  "walkie",
		Usage: "make AI coding agents debate and review each other's work, one turn at a time",
		Description: `walkie keeps a debate in one markdown file (NAME.walkie.md): a briefing, then
every turn so far. A controller boots one agent CLI at a time in a fresh
pseudo-terminal; the agent reads the file, appends exactly one turn and is
ended; walkie checks the turn, stamps it into a tamper-evident chain, and
starts the next agent, until every participant signs off, a cap is hit or
a person halts it. See docs/ for the file format and configuration.`,
		Reader:                 f.IO.In,
		Writer:                 f.IO.Out,
		ErrWriter:              f.IO.ErrOut,
		CustomAppHelpTemplate:  cli.AppHelpTemplate + "\n" + exitCodesHelp + "\n",
		UseShortOptionHandling: true,
		// walkie completion's scripts ask through completeFlag.
		EnableBashCompletion: true,
		// "Did you mean" for walkie help TOPIC; the rest is walkie's own
		// (suggest.go).
		Suggest: true,
		// Exit codes are decided in one place (run); urfave must not exit.
		ExitErrHandler: func(*cli.Context, error) {},
		// --version is ours (version.go): urfave's prints a bare line
		// from a global printer.
		HideVersion: true,
		Flags: []cli.Flag{
			colorFlag(),
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version, commit and Go version, and exit"},
		},
		Before: func(c *cli.Context) error {
			f.IO.Color = c.String("color")
			return checkColor(f.IO.Color)
		},
		Action: rootAction,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return withCode(exitBadInput, sayUsage(err, c.App.Flags, "walkie"))
		},
		Commands: commands(f),
	}
	usageErrorsAreBadInput(app.Commands)
	groupsSayWhatIsUnknown(app.Commands)
	guardPersonOnly(app.Commands, "")
	return app
}

// rootAction is `walkie` without a command: the version with --version,
// the help without arguments, and an unknown command is bad input.
func rootAction(c *cli.Context) error {
	switch {
	case c.Bool("version"):
		return printVersion(c.App.Writer, nil)
	case c.NArg() > 0:
		typed := c.Args().First()
		return withCode(exitBadInput, errors.New(withHint(fmt.Sprintf("%q is not a walkie command", typed), didYouMean(typed, commandNames(c.App.Commands)), "walkie")))
	}
	return cli.ShowAppHelp(c)
}

// commands lists every command, in the order --help shows them.
func commands(f *Factory) []*cli.Command {
	return []*cli.Command{
		newCommand(f, nil), initCommand(f, nil), briefCommand(f), phaseCommand(f), postCommand(f, nil), readCommand(f, nil), statusCommand(f, nil), showCommand(f, nil), followCommand(f, nil), verifyCommand(f, nil),
		threadCommand(f, nil), gateCommand(f, nil),
		haltCommand(f, nil), resumeCommand(f, nil), extendCommand(f, nil), repairCommand(f, nil),
		autoCommand(f, nil), turnCommand(f, nil), trialsCommand(f, nil), logCommand(f, nil), reportCommand(f, nil), doctorCommand(f, nil),
		serveCommand(f, nil), workerCommand(f, nil), watchCommand(f, nil), notifyCommand(f, nil), reviewCommand(f, nil), skillCommand(f), mcpCommand(f, nil), completionCommand(f, nil), versionCommand(f, nil),
	}
}

// usageErrorsAreBadInput makes a flag the command does not know, or a bad
// flag value, exit with the bad-input code like every other input error.
func usageErrorsAreBadInput(cmds []*cli.Command) {
	for _, c := range cmds {
		if c.OnUsageError == nil {
			c.OnUsageError = badUsage
		}
		usageErrorsAreBadInput(c.Subcommands)
	}
}
