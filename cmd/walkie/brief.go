package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/distill"
	"github.com/walkie-sh/walkie/walkie"
)

func briefCommand(f *Factory) *cli.Command {
	return &cli.Command{
		Name:  "brief",
		Usage: "write, distill, edit, approve and show a debate's briefing",
		Description: `The briefing is the text under "# Briefing" at the top of a walkie file: the
question, the options, the constraints, what is already decided, and what a
sign-off means, in about 300-400 words. Every agent reads it at the start of
every turn. A person approves it, which pins its sha256 in the front matter;
walkie auto and walkie turn refuse a debate whose briefing is not approved or
no longer matches the pin. Once the first entry is written, no walkie command
changes it. See docs/briefing.md.

EXAMPLES:
   walkie brief draft api.walkie.md --agents claude,codex
   walkie brief distill api.walkie.md --from ~/.claude/projects/-home-me-api/SESSION.jsonl
   walkie brief edit api.walkie.md
   walkie brief approve api.walkie.md
   walkie brief show api.walkie.md`,
		Subcommands: []*cli.Command{briefDraftCommand(f, nil), briefDistillCommand(f, nil), briefEditCommand(f, nil), briefApproveCommand(f, nil), briefSendCommand(f, nil), briefShowCommand(f, nil)},
	}
}

// unstarted loads the record whose briefing is to change, refusing one
// that has an entry before anything is asked of the person or an agent.
func unstarted(file string) (*walkie.Doc, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	if len(d.Entries) > 0 {
		return nil, withCode(exitRefused, fmt.Errorf("%s has %s: the briefing is fixed once the first entry is written (start a new debate to change it)", d.File, walkie.Count(len(d.Entries), "entry", "entries")))
	}
	return d, nil
}

func briefDraftCommand(f *Factory, runF func(context.Context, *briefDraftOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "draft",
		Usage:     "write the briefing template into a new or unapproved walkie file",
		ArgsUsage: "FILE",
		Description: `Writes the template: the five sections (Question, Options, Constraints,
Decided, What a sign-off means), each with one line of guidance to replace.
A FILE that does not exist is created, which needs --agents (as walkie init).
An existing FILE keeps its front matter; its briefing is replaced only while
it is empty or a placeholder (--force replaces written text), never once it
is approved (use walkie brief edit) or once the debate has started.

EXAMPLES:
   walkie brief draft api.walkie.md --agents claude,codex --max-rounds 4
   walkie brief draft api.walkie.md          # after walkie init
   walkie brief draft api.walkie.md --stdout > brief.md`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "agents", Usage: "for a new FILE: participants in turn order, comma separated"},
			&cli.StringFlag{Name: "id", Usage: "for a new FILE: debate id (default: the file name without .walkie.md)"},
			&cli.IntFlag{Name: "max-rounds", Value: 6, Usage: "for a new FILE: round cap"},
			&cli.BoolFlag{Name: "force", Usage: "replace a briefing that already has text (not an approved one)"},
			&cli.BoolFlag{Name: "stdout", Usage: "print the template instead of writing FILE"},
		},
		Action: func(c *cli.Context) error {
			opts := &briefDraftOptions{IO: f.IO, Stdout: c.Bool("stdout")}
			if !opts.Stdout {
				var err error
				if opts.File, err = fileArg(c); err != nil {
					return err
				}
			}
			opts.Agents, opts.ID, opts.MaxRounds, opts.Force = c.StringSlice("agents"), c.String("id"), c.Int("max-rounds"), c.Bool("force")
			opts.NewFileFlags = c.IsSet("agents") || c.IsSet("id") || c.IsSet("max-rounds")
			return runWith(c.Context, runF, briefDraftRun, opts)
		},
	}
}

// briefDraftOptions are walkie brief draft's.
type briefDraftOptions struct {
	IO     *IOStreams
	Stdout bool // print the template, nothing else
	File   string
	// For a new File: its participants, id and round cap, and whether
	// any of them was given.
	Agents       []string
	ID           string
	MaxRounds    int
	NewFileFlags bool
	Force        bool
}

func briefDraftRun(_ context.Context, o *briefDraftOptions) error {
	w, file := o.IO.Out, o.File
	if o.Stdout {
		fmt.Fprint(w, briefing.Template())
		return nil
	}
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		if len(o.Agents) == 0 {
			return withCode(exitBadInput, fmt.Errorf("%s does not exist: give --agents to create it (e.g. --agents claude,codex)", file))
		}
		var agents []string
		for _, a := range o.Agents {
			agents = append(agents, strings.TrimSpace(a))
		}
		err := walkie.Init(file, walkie.InitOptions{ID: o.ID, Participants: agents, MaxRounds: o.MaxRounds, Briefing: []byte(briefing.Template())})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "created %s (participants: %s) with the briefing template\n", file, strings.Join(agents, ", "))
		fmt.Fprintf(w, "next: fill it in (walkie brief edit %s), then walkie brief approve %s\n", file, file)
		return nil
	}
	if o.NewFileFlags {
		return withCode(exitBadInput, fmt.Errorf("%s exists: --agents, --id and --max-rounds only apply to a new file", file))
	}
	d, err := unstarted(file)
	if err != nil {
		return err
	}
	if d.Meta.BriefingSHA256 != "" {
		return withCode(exitRefused, fmt.Errorf("the briefing of %s is approved: change it with walkie brief edit (which asks for approval again)", file))
	}
	if !briefing.IsPlaceholder(d.Briefing) && !o.Force {
		return withCode(exitRefused, fmt.Errorf("the briefing of %s already has text (%d words): edit it with walkie brief edit, or pass --force to replace it with the template", file, briefing.WordCount(d.Briefing)))
	}
	if _, err := walkie.SetBriefing(file, []byte(briefing.Template())); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote the briefing template into %s\n", file)
	fmt.Fprintf(w, "next: fill it in (walkie brief edit %s), then walkie brief approve %s\n", file, file)
	return nil
}

func briefDistillCommand(f *Factory, runF func(context.Context, *briefDistillOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "distill",
		Usage:     "have an agent distill a conversation into the briefing",
		ArgsUsage: "FILE",
		Description: `Runs an agent, through a normal session (a fresh pty, its timeout and stall
window, a transcript), with a pinned prompt: read the conversation, write a
briefing of 300-400 words in the template's sections into a file named in the
prompt. CHAT may be plain text or markdown, or a Claude Code session log
(~/.claude/projects/DIR/SESSION.jsonl) or a Codex one
(~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl): from a log only what the user
typed and what the assistant answered is kept, no tool calls or output.

A result that misses sections or is far off the length is sent back once with
the reason, then kept with a warning. The result replaces the briefing, not
approved: read it (walkie brief show), fix it (walkie brief edit), then
walkie brief approve.

The peers must never see the chat: the chat as the agent read it, what it
wrote and the session's transcripts are kept in a private folder of your
cache ($XDG_CACHE_HOME/walkie/distill/, or ~/.cache/...), outside the debate's
folder where the turns work, and removed when the briefing is approved.

The agent is a configured one (see docs/configuration.md); by default the
agent of the first participant. Its session works in that private folder; in
its command, {file} is the file to write and {dir} the debate's folder.

EXAMPLES:
   walkie brief distill api.walkie.md --from notes.md
   walkie brief distill api.walkie.md --from ~/.codex/sessions/2026/11/30/rollout-X.jsonl --agent claude
   walkie brief distill api.walkie.md --from chat.jsonl --agent codex --config walkie.yaml`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the conversation: text, markdown, or a Claude Code or Codex session log (required)"},
			&cli.StringFlag{Name: "agent", Usage: "configured agent that distills (default: the first participant's)"},
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"},
			logFormatFlag(),
			verboseFlag(),
		},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			if c.String("from") == "" {
				return withCode(exitBadInput, errors.New("brief distill needs --from CHAT: the conversation to distill"))
			}
			return runWith(c.Context, runF, briefDistillRun, &briefDistillOptions{IO: f.IO, Config: f.Config, Logger: f.Logger,
				File: file, From: c.String("from"), Agent: c.String("agent"), ConfigPath: c.String("config"),
				LogFormat: c.String("log-format"), Verbose: c.Bool("verbose")})
		},
	}
}

// briefDistillOptions are walkie brief distill's.
type briefDistillOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)
	Logger func(format string, verbose bool) (*zap.Logger, error)

	File       string
	From       string // the chat
	Agent      string // "": the first participant's
	ConfigPath string
	LogFormat  string
	Verbose    bool
}

func briefDistillRun(ctx context.Context, o *briefDistillOptions) error {
	file := o.File
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	stderr := o.IO.ErrOut
	log, err := o.Logger(o.LogFormat, o.Verbose)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := interruptible(ctx, stderr)
	defer stop()
	res, err := runDistill(ctx, distill.Options{File: file, Chat: o.From, Agent: o.Agent, Config: cfg, Log: log})
	if err != nil {
		return err
	}
	w := o.IO.Out
	fmt.Fprint(w, string(res.Briefing))
	from := "plain text"
	if res.ChatFormat != briefing.FormatText {
		from = fmt.Sprintf("a %s session log (%d messages)", res.ChatFormat, res.Messages)
	}
	tries := "1 attempt"
	if n := len(res.Attempts); n > 1 {
		tries = fmt.Sprintf("%d attempts", n)
	}
	fmt.Fprintf(w, "\n— %d words (aim %d-%d), distilled by %s from %s in %s\n", res.Report.Words, briefing.MinWords, briefing.MaxWords, res.Agent, from, tries)
	if res.Warning != "" {
		fmt.Fprintf(stderr, "walkie: warning: the briefing still has problems after a retry: %s; fix them with walkie brief edit %s\n", res.Warning, file)
	}
	if res.Unpinned {
		fmt.Fprintln(w, "the earlier approval was removed: this text is new")
	}
	fmt.Fprintf(w, "written into %s, not approved: read it, then walkie brief approve %s\n", file, file)
	fmt.Fprintf(w, "the chat and the transcripts: %s (removed at approval)\n", res.Dir)
	return nil
}

func briefEditCommand(f *Factory, runF func(context.Context, *fileOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "edit",
		Usage:     "edit the briefing alone in $EDITOR",
		ArgsUsage: "FILE",
		Description: `Opens $EDITOR (vi if unset) on a temporary file holding only the briefing, and
writes what you save back under "# Briefing". Editing an approved briefing
before the first turn removes the approval: the new text must be approved
again (walkie brief approve shows what changed). Refused once the debate has
an entry, and while a controller runs it.

EXAMPLES:
   walkie brief edit api.walkie.md
   EDITOR="code --wait" walkie brief edit api.walkie.md`,
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, briefEditRun, &fileOptions{IO: f.IO, File: file})
		},
	}
}

func briefEditRun(_ context.Context, o *fileOptions) error {
	file := o.File
	d, err := unstarted(file)
	if err != nil {
		return err
	}
	if walkie.ControllerRunning(walkie.StateDir(file, d.Meta.ID)) {
		return withCode(exitRefused, errors.New("a controller is running this debate: the briefing cannot change under it"))
	}
	text, err := editText(d.Briefing)
	if err != nil {
		return err
	}
	w := o.IO.Out
	if bytes.Equal(walkie.BriefingText(text), d.Briefing) {
		fmt.Fprintf(w, "%s: no change\n", file)
		return nil
	}
	unpinned, err := walkie.SetBriefing(file, text)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: briefing updated, %d words\n", file, briefing.WordCount(text))
	if unpinned {
		fmt.Fprintf(w, "it was approved: the approval is removed; read it again, then walkie brief approve %s\n", file)
	} else {
		fmt.Fprintf(w, "not approved yet: walkie brief approve %s\n", file)
	}
	if p := briefing.Check(text).Reason(); p != "" {
		fmt.Fprintf(o.IO.ErrOut, "walkie: note: %s\n", p)
	}
	return nil
}

// runDistill distills and maps its refusals to the exit codes.
func runDistill(ctx context.Context, o distill.Options) (distill.Result, error) {
	res, err := distill.Run(ctx, o)
	switch {
	case errors.Is(err, distill.ErrBriefingFixed), errors.Is(err, walkie.ErrLocked):
		return res, withCode(exitRefused, err)
	case errors.Is(err, controller.ErrBadInput):
		return res, withCode(exitBadInput, err)
	}
	return res, err
}

// editText opens text in $EDITOR, in a temporary file of its own, and
// returns what was saved; an editor that fails leaves the briefing as it
// was.
func editText(text []byte) ([]byte, error) {
	tmp, err := os.CreateTemp("", "walkie-briefing-*.md")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(text)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if err := runEditor(tmp.Name()); err != nil {
		return nil, fmt.Errorf("%w; the briefing is unchanged", err)
	}
	return os.ReadFile(tmp.Name())
}

// runEditor runs $EDITOR (vi if unset) on path, on the user's terminal.
// $EDITOR may hold arguments ("code --wait"), so it goes through the shell,
// with the path as a separate argument that needs no quoting.
func runEditor(path string) error {
	editor := strings.TrimSpace(os.Getenv("EDITOR"))
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("editor %q: %w", editor, err)
	}
	return nil
}

func briefApproveCommand(f *Factory, runF func(context.Context, *briefApproveOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "approve",
		Usage:     "show the briefing and pin its sha256 in the front matter",
		ArgsUsage: "FILE",
		Description: `Shows the briefing, its word count and anything missing from it, and, when a
briefing was approved before, what changed since (a diff against the copy
kept in .walkie/ID/briefing.approved.md). On a terminal it then asks for
confirmation; --yes skips the question (for scripts). Approving pins the
briefing's sha256 as briefing_sha256 in the front matter; from then on any
change to the text is caught by walkie verify and before every turn. Refused
once the debate has an entry.

EXAMPLES:
   walkie brief approve api.walkie.md
   walkie brief approve api.walkie.md --yes`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "approve without asking"}},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, briefApproveRun, &briefApproveOptions{IO: f.IO, File: file, Yes: c.Bool("yes")})
		},
	}
}

// briefApproveOptions are walkie brief approve's.
type briefApproveOptions struct {
	IO   *IOStreams
	File string
	Yes  bool // approve without asking
}

func briefApproveRun(_ context.Context, o *briefApproveOptions) error {
	file := o.File
	d, err := unstarted(file)
	if err != nil {
		return err
	}
	w := o.IO.Out
	dir := walkie.StateDir(file, d.Meta.ID)
	hash := walkie.BriefingHash(d.Briefing)
	if d.Meta.BriefingSHA256 != hash && walkie.ControllerRunning(dir) {
		return withCode(exitRefused, errors.New("a controller is running this debate: the briefing cannot change under it"))
	}
	if d.Meta.BriefingSHA256 == hash {
		// Keep the copy a later re-approval is compared with, even
		// when the pin was set another way (walkie auto --approve).
		if prev, err := briefing.ReadApproved(dir); err == nil && !bytes.Equal(prev, d.Briefing) {
			if err := briefing.WriteApproved(dir, d.Briefing); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "%s: the briefing is already approved (sha256 %s)\n", file, hash[:12])
		return nil
	}
	notWritten := withCode(exitBadInput, fmt.Errorf("%s: the briefing is still empty or the bare template: write it first (walkie brief edit %s, or walkie brief distill %s --from CHAT)", file, file, file))
	if briefing.IsPlaceholder(d.Briefing) { // refused before anyone is asked
		return notWritten
	}
	if err := showForApproval(w, d, dir); err != nil {
		return err
	}
	if !o.Yes {
		if !o.IO.CanPrompt() {
			return withCode(exitBadInput, errors.New("not approved: standard input is not a terminal, so nobody can confirm; pass --yes to approve without the question"))
		}
		if !o.IO.Confirm("\nApprove this briefing? [y/N] ") {
			return withCode(exitError, errors.New("not approved; nothing changed"))
		}
	}
	// Pin what was shown, not what the file may hold by now.
	a, err := approveBriefing(o.IO, file, d.Briefing, notWritten)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: briefing approved, briefing_sha256 %s\n", file, a.Hash)
	return nil
}

// showForApproval shows what a person approves: the briefing, its length
// and what it lacks, and what changed since an earlier approval (the copy
// kept in the state directory dir).
func showForApproval(w io.Writer, d *walkie.Doc, dir string) error {
	fmt.Fprintf(w, "# Briefing of %s\n\n%s\n", d.File, term.Clean(string(d.Briefing)))
	rep := briefing.Check(d.Briefing)
	fmt.Fprintf(w, "— %d words (aim %d-%d)\n", rep.Words, briefing.MinWords, briefing.MaxWords)
	for _, p := range rep.Problems() {
		fmt.Fprintf(w, "note: %s\n", p)
	}
	prev, err := briefing.ReadApproved(dir)
	if err != nil {
		return err
	}
	if d.Meta.BriefingSHA256 != "" {
		fmt.Fprintln(w, "\nThe briefing changed after it was approved.")
	}
	if prev != nil {
		if diff := briefing.Diff("approved", "now", prev, d.Briefing); diff != "" {
			fmt.Fprintf(w, "\nChanges since the last approval:\n%s", term.Clean(diff))
		}
	}
	return nil
}

// approveBriefing is briefing.Approve for a person at the command line
// (walkie brief approve, walkie new): a briefing nobody wrote is refused
// with unwritten, one that changed is a refusal, and a copy not kept for
// later diffs is a warning.
func approveBriefing(streams *IOStreams, file string, shown []byte, unwritten error) (briefing.Approval, error) {
	a, err := briefing.Approve(file, shown)
	switch {
	case errors.Is(err, briefing.ErrPlaceholder):
		return a, unwritten
	case errors.Is(err, briefing.ErrChanged):
		return a, withCode(exitRefused, errors.New("the briefing changed while it was shown: run walkie brief approve again"))
	case err != nil:
		return a, err
	}
	if a.NotKept != nil {
		fmt.Fprintf(streams.ErrOut, "walkie: warning: approved, but the copy for later diffs was not kept: %v\n", a.NotKept)
	}
	return a, nil
}

// briefView is `walkie brief show --json`.
type briefView struct {
	File     string   `json:"file"`
	Text     string   `json:"text"`
	Words    int      `json:"words"`
	SHA256   string   `json:"sha256"`
	Pinned   string   `json:"briefing_sha256,omitempty"`
	Approved bool     `json:"approved"` // pinned and matching
	Changed  bool     `json:"changed"`  // pinned but no longer matching
	Entries  int      `json:"entries"`
	Problems []string `json:"problems"`
}

func briefShowCommand(f *Factory, runF func(context.Context, *briefShowOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print the briefing and whether it is approved",
		ArgsUsage: "FILE",
		Description: `Prints the briefing's text on standard output, and on standard error its word
count, what the template would still want, and its approval: approved (the
pinned sha256 matches), not approved, or changed after approval (walkie
verify fails until it is restored or, before the first turn, re-approved).

EXAMPLES:
   walkie brief show api.walkie.md
   walkie brief show api.walkie.md > briefing.md
   walkie brief show api.walkie.md --jq .approved`,
		Flags: jsonFlags(briefView{}),
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, briefShowRun, &briefShowOptions{IO: f.IO, File: file, JSON: exp})
		},
	}
}

// briefShowOptions are walkie brief show's.
type briefShowOptions struct {
	IO   *IOStreams
	File string
	JSON *jsonExporter
}

func briefShowRun(_ context.Context, o *briefShowOptions) error {
	file := o.File
	d, err := walkie.Load(file)
	if err != nil {
		return err
	}
	rep := briefing.Check(d.Briefing)
	hash := walkie.BriefingHash(d.Briefing)
	v := briefView{File: file, Text: string(d.Briefing), Words: rep.Words, SHA256: hash, Pinned: d.Meta.BriefingSHA256,
		Approved: d.Meta.BriefingSHA256 == hash, Changed: d.Meta.BriefingSHA256 != "" && d.Meta.BriefingSHA256 != hash,
		Entries: len(d.Entries), Problems: rep.Problems()}
	if v.Problems == nil {
		v.Problems = []string{}
	}
	if o.JSON != nil {
		return o.JSON.Write(o.IO.Out, v)
	}
	text := v.Text
	if o.IO.IsStdoutTTY() { // into a pipe or a file it goes as it is
		text = term.Clean(text)
	}
	fmt.Fprint(o.IO.Out, text)
	e := o.IO.ErrOut
	fmt.Fprintf(e, "— %s: %d words (aim %d-%d)", filepath.Base(file), v.Words, briefing.MinWords, briefing.MaxWords)
	switch {
	case v.Approved:
		fmt.Fprintf(e, ", approved (sha256 %s)\n", hash[:12])
	case v.Changed:
		fmt.Fprintf(e, ", CHANGED after approval: walkie verify fails until it is restored")
		if v.Entries == 0 {
			fmt.Fprintf(e, " or re-approved (walkie brief approve %s)", file)
		}
		fmt.Fprintln(e)
	default:
		fmt.Fprintf(e, ", not approved (walkie brief approve %s)\n", file)
	}
	for _, p := range v.Problems {
		fmt.Fprintf(e, "note: %s\n", p)
	}
	return nil
}
