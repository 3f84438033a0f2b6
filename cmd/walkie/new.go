package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/distill"
	"github.com/walkie-sh/walkie/session/activity"
	"github.com/walkie-sh/walkie/walkie"
)

func newCommand(f *Factory, runF func(context.Context, *newOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "new",
		Usage:     "start a debate in one go: create the file, draft the briefing, approve it, run the debate",
		ArgsUsage: `"QUESTION"`,
		Description: `Does what walkie init, walkie brief distill, walkie brief approve and walkie
auto do one after the other:

1. creates a walkie file named after the question (or --file), with the
   participants of --agents, or a round table (--implementer, --reviewers,
   --grader, --workspace, as for walkie init);
2. has an agent draft the briefing from the question and, with --from, the
   conversation it came from: a Claude Code session log
   (~/.claude/projects/DIR/SESSION.jsonl), a Codex one
   (~/.codex/sessions/…/rollout-*.jsonl), or text. --briefing FILE (or -
   for standard input) gives the briefing instead, and no agent drafts;
3. shows the briefing and asks: approve it, edit it in $EDITOR (then it is
   shown again), or quit, leaving the file for the single commands;
4. pins it and runs the debate to its end, as walkie auto does.

On a terminal it asks; off a terminal it needs --yes, which approves the
briefing as it is (read it first: the skills do, with the person). Nothing
is created before that is settled. Every step stays available on its own:
after a quit, walkie brief edit, walkie brief approve and walkie auto take
over where it stopped. A walkie new whose draft failed leaves the file with
the bare template; the same walkie new again uses that file again. A name
taken by another debate gets the next free one (NAME-2), said on stderr.

EXAMPLES:
   walkie new "Should the API paginate with cursors or offsets?" --agents claude,codex
   walkie new "Cursor or offset pagination?" --agents claude,codex \
       --from ~/.claude/projects/-home-me-api/SESSION.jsonl
   walkie new "Fix the flaky retry test" --implementer claude --reviewers codex,gemini \
       --grader "go test ./..." --workspace .
   walkie new "Cursor or offset?" --agents claude,codex --briefing brief.md --yes   # in a script`,
		Flags: append(debateFlags(),
			&cli.StringFlag{Name: "file", Usage: "the walkie file to create (default: named after the question, in this directory)"},
			&cli.StringFlag{Name: "from", Usage: "the conversation to distill with the question: text, or a Claude Code or Codex session log"},
			&cli.StringFlag{Name: "briefing", Usage: "use this briefing (a file, or - for standard input) instead of distilling one"},
			&cli.StringFlag{Name: "distiller", Usage: "configured agent that drafts the briefing (default: the first participant's)"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "approve the briefing without asking (needed off a terminal)"},
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"},
			&cli.BoolFlag{Name: "json", Usage: "print the summary as JSON"},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (live lines on a terminal, one progress line per event elsewhere), console or json (log lines)"},
			verboseFlag(),
			waitForPeopleFlag(),
		),
		Action: func(c *cli.Context) error {
			switch {
			case c.NArg() != 1:
				return withCode(exitBadInput, fmt.Errorf(`new needs the question, quoted, as its one argument (got %s); see `+"`walkie new --help`", argCount(c.NArg())))
			case strings.TrimSpace(c.Args().First()) == "":
				return withCode(exitBadInput, errors.New(`new needs the question, and it was empty: walkie new "Cursor or offset pagination?"; see `+"`walkie new --help`"))
			}
			opts := &newOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry, Ledger: f.Ledger,
				Question: strings.TrimSpace(c.Args().First()), File: c.String("file"),
				From: c.String("from"), FromSet: c.IsSet("from"), Briefing: c.String("briefing"), BriefingSet: c.IsSet("briefing"),
				Distiller: c.String("distiller"), Yes: c.Bool("yes"), ConfigPath: c.String("config"), JSON: c.Bool("json"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose"), WaitForPeople: waitForPeopleValue(c)}
			var err error
			if opts.Init, err = debateInit(c); err != nil {
				return err
			}
			return runWith(c.Context, runF, newRun, opts)
		},
	}
}

// newOptions are walkie new's: the question, the debate to create, and
// where its briefing comes from.
type newOptions struct {
	IO       *IOStreams
	Config   func(path string) (*config.Config, error)
	Logger   func(format string, verbose bool) (*zap.Logger, error)
	Registry func(log *zap.Logger) string
	Ledger   func(log *zap.Logger) string

	Question    string
	Init        walkie.InitOptions
	File        string // "": named after the question
	From        string // the conversation to distill
	FromSet     bool
	Briefing    string // the briefing itself: a file, or - for standard input
	BriefingSet bool
	Distiller   string // "": the first participant's agent
	Yes         bool
	ConfigPath  string
	JSON        bool
	LogFormat   string
	Verbose     bool
	// WaitForPeople is --wait-for-people; nil when not given.
	WaitForPeople *time.Duration
}

func newRun(ctx context.Context, opts *newOptions) error {
	question, o := opts.Question, opts.Init
	// Settle everything that can refuse before anything is created or an
	// agent is paid to draft.
	if !opts.IO.CanPrompt() && !opts.Yes {
		return withCode(exitBadInput, errors.New("standard input is not a terminal, so nobody can approve the briefing: pass --yes to approve it as drafted, or run walkie init, walkie brief distill, walkie brief approve and walkie auto one by one"))
	}
	if opts.FromSet && opts.BriefingSet {
		return withCode(exitBadInput, errors.New("give --from (a conversation to distill) or --briefing (the text itself), not both"))
	}
	cfg, err := opts.Config(opts.ConfigPath)
	if err != nil {
		return err
	}
	var given []byte
	if p := opts.Briefing; p != "" {
		if given, err = readBriefing(opts.IO.In, p); err != nil {
			return err
		}
	}
	chat, err := distill.QuestionChat(question, opts.From)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	// The participants are checked as the file is made (and as a file
	// left over is recognised: one that fails the check is not one).
	o.Check = participantsCheck(cmp.Or(opts.File, walkie.Slug(question)+walkie.FileSuffix), cfg)
	file, again, err := newFile(opts.File, walkie.Slug(question), o, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	w := opts.IO.Out
	if again {
		fmt.Fprintf(w, "using %s again: an earlier walkie new left it unfinished, as this one would create it (the bare template, no turns)\n", file)
		if given != nil {
			if _, err := walkie.SetBriefing(file, given); err != nil {
				return err
			}
		}
	} else {
		o.Briefing = given
		if given == nil {
			o.Briefing = []byte(briefing.Template())
		}
		if err := walkie.Init(file, o); err != nil {
			return err
		}
		fmt.Fprintln(w, created(file, o))
	}
	if given == nil {
		if err := newDistill(ctx, opts, cfg, file, chat); err != nil {
			return fmt.Errorf("%w\nthe file stays: walkie brief distill %s --from CHAT tries again, walkie brief edit %s writes it yourself", err, file, file)
		}
	}
	if !opts.Yes {
		ok, err := askApproval(bufio.NewReader(opts.IO.In), w, file)
		if err != nil || !ok {
			return err
		}
	}
	if err := approveShown(opts.IO, file); err != nil {
		return err
	}
	return runDebate(ctx, opts.debate(file), nil, cfg, nil)
}

// debate is how walkie new runs the debate in file once its briefing is
// approved: as walkie auto would, with no --max-rounds (new's made the
// file) and nothing left to --approve. new has no notify flags: its
// queued notifications get auto's default time to go out.
func (opts *newOptions) debate(file string) *runOptions {
	return &runOptions{IO: opts.IO, Config: opts.Config, Logger: opts.Logger, Registry: opts.Registry, Ledger: opts.Ledger,
		File: file, ConfigPath: opts.ConfigPath, By: "walkie new", JSON: opts.JSON, LogFormat: opts.LogFormat, Verbose: opts.Verbose,
		Notify: notifyOptions{Timeout: defaultNotifyTimeout}, WaitForPeople: opts.WaitForPeople}
}

// newDistill drafts the briefing with controller.Distill and shows it.
func newDistill(ctx context.Context, o *newOptions, cfg *config.Config, file, chat string) error {
	out, err := newRunOutput(o.IO, o.Logger, o.LogFormat, o.Verbose)
	if err != nil {
		return err
	}
	defer out.stop()
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return err
	}
	name := cmp.Or(o.Distiller, meta.Participants[0])
	opts := distill.Options{File: file, ChatText: chat, Agent: name, Config: cfg, Log: out.log}
	stderr := o.IO.ErrOut
	if out.disp != nil {
		// The live line says what the distilling agent does, read from
		// its output as a turn's is.
		show, done := out.disp.Task("drafting the briefing · " + out.disp.Palette().Bold(term.Clean(name)))
		defer done()
		kind := ""
		if a, err := cfg.Agent(name); err == nil {
			kind = a.Usage
		}
		tr := activity.New(kind)
		opts.Output = func(line string) {
			if a, changed := tr.Feed([]byte(line + "\n")); changed {
				show(a.String())
			}
		}
	} else {
		fmt.Fprintf(stderr, "drafting the briefing with %s\n", name)
	}
	ctx, stop := interruptible(ctx, stderr)
	defer stop()
	res, err := runDistill(ctx, opts)
	out.stop()
	if err != nil {
		return err
	}
	tries := ""
	if n := len(res.Attempts); n > 1 {
		tries = fmt.Sprintf(" in %d attempts", n)
	}
	fmt.Fprintf(stderr, "drafted by %s: %d words%s\n", res.Agent, res.Report.Words, tries)
	if res.Warning != "" {
		fmt.Fprintf(stderr, "walkie: warning: the draft still has problems after a retry: %s\n", res.Warning)
	}
	return nil
}

// askApproval shows the briefing and asks until the person approves it
// (true), quits (false), or the input ends.
func askApproval(in *bufio.Reader, w io.Writer, file string) (bool, error) {
	for {
		d, err := walkie.Load(file)
		if err != nil {
			return false, err
		}
		showBriefing(w, file, d.Briefing)
		fmt.Fprint(w, "\n[a]pprove and run the debate, [e]dit in $EDITOR, [q]uit? ")
		line, err := in.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve", "y", "yes":
			return true, nil
		case "e", "edit":
			if err := editBriefing(w, file, d.Briefing); err != nil {
				fmt.Fprintf(w, "walkie: %v\n", err)
			}
			continue
		case "q", "quit", "n", "no":
			fmt.Fprintf(w, "not approved; %s stays: walkie brief edit %s, walkie brief approve %s, then walkie auto %s\n", file, file, file, file)
			return false, withCode(exitError, errors.New("the briefing was not approved"))
		}
		if err != nil {
			return false, withCode(exitError, fmt.Errorf("no answer (%v); %s stays unapproved", err, file))
		}
	}
}

// showBriefing prints a briefing with its length and what it lacks.
func showBriefing(w io.Writer, file string, text []byte) {
	fmt.Fprintf(w, "\n# Briefing of %s\n\n%s\n", file, term.Clean(string(bytes.TrimSpace(text))))
	rep := briefing.Check(text)
	fmt.Fprintf(w, "\n— %d words (aim %d-%d)\n", rep.Words, briefing.MinWords, briefing.MaxWords)
	for _, p := range rep.Problems() {
		fmt.Fprintf(w, "note: %s\n", p)
	}
}

// editBriefing opens the briefing alone in $EDITOR and writes back what
// was saved.
func editBriefing(w io.Writer, file string, text []byte) error {
	edited, err := editText(text)
	if err != nil {
		return err
	}
	if bytes.Equal(walkie.BriefingText(edited), text) {
		fmt.Fprintln(w, "no change")
		return nil
	}
	_, err = walkie.SetBriefing(file, edited)
	return err
}

// approveShown pins the briefing now in file, as brief approve --yes.
func approveShown(streams *IOStreams, file string) error {
	d, err := walkie.Load(file)
	if err != nil {
		return err
	}
	a, err := approveBriefing(streams, file, d.Briefing,
		withCode(exitBadInput, fmt.Errorf("%s: the briefing is still the bare template: write it (walkie brief edit %s), then walkie brief approve %s", file, file, file)))
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "%s: briefing approved, briefing_sha256 %s\n", file, a.Hash[:12])
	return nil
}

// newFile is the file walkie new writes: explicit (--file), else
// ./NAME.walkie.md, or NAME-2, NAME-3… when that is another debate
// (said on errOut): walkie new never writes over a debate, nor shares its
// state directory. A file an earlier walkie new left unfinished, exactly
// as this one would create it (the bare template and nothing after), is
// used again (again is true), so a retry leaves no second file beside it.
func newFile(explicit, name string, o walkie.InitOptions, errOut io.Writer) (file string, again bool, err error) {
	if explicit != "" {
		return explicit, leftOver(explicit, o), nil
	}
	taken := ""
	for n := 1; ; n++ {
		base := name
		if n > 1 {
			base = fmt.Sprintf("%s-%d", name, n)
		}
		file := filepath.Join(".", base+walkie.FileSuffix)
		_, errFile := os.Stat(file)
		_, errState := os.Stat(filepath.Join(".", ".walkie", base))
		free := errors.Is(errFile, os.ErrNotExist) && errors.Is(errState, os.ErrNotExist)
		switch {
		case errFile == nil && leftOver(file, o):
			return file, true, nil
		case free:
			if taken != "" {
				fmt.Fprintf(errOut, "walkie: %s is another debate, left as it is: this one is %s\n", taken, file)
			}
			return file, false, nil
		case taken == "":
			taken = file
		}
	}
}

// leftOver reports whether file is byte for byte what walkie new would
// create with o and the bare template: nothing anyone wrote is in it.
func leftOver(file string, o walkie.InitOptions) bool {
	have, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	tmp, err := os.MkdirTemp("", "walkie-new-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(tmp)
	o.Briefing, o.NoCopy = []byte(briefing.Template()), true
	fresh := filepath.Join(tmp, filepath.Base(file))
	if err := walkie.Init(fresh, o); err != nil {
		return false
	}
	want, err := os.ReadFile(fresh)
	return err == nil && bytes.Equal(have, want)
}
