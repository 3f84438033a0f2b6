package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// fileArg returns the one FILE argument of a command, resolved once: a
// symbolic link becomes the file it leads to, which is what walkie then
// acts on (docs/format.md), and a directory is bad input naming the walkie
// file inside it. A FILE that does not exist is returned as it is, for the
// commands that create one.
func fileArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", withCode(exitBadInput, fmt.Errorf("%s needs exactly one FILE argument (got %s); see `%s --help`", strings.TrimPrefix(cmdPath(c), "walkie "), argCount(c.NArg()), cmdPath(c)))
	}
	file := c.Args().First()
	real, err := walkie.Resolve(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return file, nil
	case err != nil:
		return "", withCode(exitBadInput, err)
	}
	return real, nil
}

// argCount is "1 argument", "2 arguments": how many a command was given.
func argCount(n int) string { return walkie.Count(n, "argument", "arguments") }

// recordArg is fileArg for a walkie file that must exist: a missing file
// is bad input (exit 2), not an unexpected error.
func recordArg(c *cli.Context) (string, error) {
	file, err := fileArg(c)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(file); err != nil {
		return "", withCode(exitBadInput, fmt.Errorf("%w; create a debate with `walkie init %s --agents a,b`", err, file))
	}
	return file, nil
}

// badUsage makes a flag parsing error bad input (exit 2) rather than an
// unexpected one; urfave prints the command's help for it otherwise.
func badUsage(c *cli.Context, err error, _ bool) error {
	// The global flags may come after the command too (args.go).
	return withCode(exitBadInput, sayUsage(err, append(slices.Clone(c.Command.Flags), c.App.Flags...), cmdPath(c)))
}

// requiredFlag checks a flag that urfave would otherwise check itself,
// with exit 1 and the whole help text instead of one line and exit 2.
func requiredFlag(c *cli.Context, name string) error {
	if !c.IsSet(name) {
		return withCode(exitBadInput, fmt.Errorf("%s needs --%s; see `%s --help`", strings.TrimPrefix(cmdPath(c), "walkie "), name, cmdPath(c)))
	}
	return nil
}

// copyInitFlag is --copy of every command that creates a record.
func copyInitFlag() cli.Flag {
	return &cli.StringFlag{Name: "copy", Value: "on", Usage: "the supervisor's copy of every entry through the notify sinks: on (the default for a new debate) or off; walkie notify changes it later"}
}

// copyFlag reads init's --copy: whether the supervisor's copy starts off.
func copyFlag(c *cli.Context) (noCopy bool, err error) {
	switch v := c.String("copy"); v {
	case "on":
		return false, nil
	case "off":
		return true, nil
	default:
		return false, withCode(exitBadInput, fmt.Errorf("--copy %q: use on or off", v))
	}
}

func initCommand(f *Factory, runF func(context.Context, *initOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a new walkie file",
		ArgsUsage: "FILE",
		Description: `Creates FILE with front matter and a briefing section. The participants take
turns in the order given. The briefing must be approved (walkie brief approve)
before agents run. --briefing - reads the briefing from standard input.

Every participant must be an agent of the config (--config, else
./walkie.yaml, the user config, the presets) or a person: one of --people,
or of the config's people:. Any other name is refused (exit 2) with the one
most likely meant, so a misspelt agent is never taken for a person.
--supervisor NAME names the person who supervises (docs/controller.md).

--typed (or any review-thread flag: --repo, --git-commit, --worktree,
--base) makes the file format 3, whose entries may carry types and refs
(docs/review-threads.md; walkie thread new makes a review thread in a
channel).

A round table (docs/roundtable.md) is created with --implementer and
--reviewers instead of --agents: the implementer changes the workspace, the
reviewers judge a frozen copy in parallel, and the grader command (run by
/bin/sh -c on the same copy, never shown to the agents) must pass.

EXAMPLES:
   walkie init api.walkie.md --agents claude,codex
   walkie init api.walkie.md --agents alice,claude --people alice --supervisor frank
   walkie init review.walkie.md --agents claude,codex,gemini --max-rounds 4 --briefing brief.md
   pbpaste | walkie init api.walkie.md --agents claude,codex --briefing -
   walkie init fix.walkie.md --implementer claude --reviewers codex,gemini --quorum 1 \
       --grader "go test ./..." --workspace . --max-rounds 4
   walkie init eval.walkie.md --implementer codex --reviewers claude,gemini \
       --phases research=gemini,plan=claude --grader "make test" --workspace src`,
		Flags: append(append(debateFlags(), &cli.StringFlag{Name: "briefing", Usage: "file whose text becomes the briefing, or - for standard input"},
			&cli.StringFlag{Name: "config", Usage: "config file whose agents and people the participants must be (default: ./walkie.yaml, then the user config dir, else the presets)"}), threadFlags()...),
		Action: func(c *cli.Context) error {
			opts := &initOptions{IO: f.IO, Config: f.Config, ConfigPath: c.String("config"), Briefing: c.String("briefing")}
			var err error
			if opts.File, err = fileArg(c); err != nil {
				return err
			}
			if opts.Init, err = debateInit(c); err != nil {
				return err
			}
			if err := threadOptions(c, &opts.Init); err != nil {
				return err
			}
			return runWith(c.Context, runF, initRun, opts)
		},
	}
}

// initOptions are walkie init's: the record to create, and the file its
// briefing comes from.
type initOptions struct {
	IO         *IOStreams
	Config     func(path string) (*config.Config, error)
	ConfigPath string
	File       string
	Init       walkie.InitOptions
	Briefing   string // a file, or - for standard input; "" for none
}

func initRun(_ context.Context, o *initOptions) error {
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	o.Init.Check = participantsCheck(o.File, cfg)
	if o.Briefing != "" {
		b, err := readBriefing(o.IO.In, o.Briefing)
		if err != nil {
			return err
		}
		o.Init.Briefing = b
	}
	if err := walkie.Init(o.File, o.Init); err != nil {
		return err
	}
	fmt.Fprintln(o.IO.Out, created(o.File, o.Init))
	return nil
}

// debateFlags are the flags that describe a new debate or round table,
// shared by walkie init and walkie new.
func debateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "agents", Usage: "participants in turn order, comma separated (at least two; required for a debate)"},
		&cli.StringFlag{Name: "id", Usage: "debate id (default: the file name without .walkie.md)"},
		&cli.IntFlag{Name: "max-rounds", Value: 6, Usage: "round cap; a round is one turn by each participant"},
		&cli.StringSliceFlag{Name: "people", Usage: "participants (of --agents) who are persons: walkie waits for their walkie post and never runs them; any other participant must be an agent in the config"},
		&cli.StringFlag{Name: "supervisor", Usage: "the person who supervises the debate, by name (not a participant): who may halt, extend and note from Telegram, and who is told when walkie gives up waiting"},
		copyInitFlag(),
		&cli.StringFlag{Name: "implementer", Category: "round table", Usage: "the agent that changes the workspace (makes a round table)"},
		&cli.StringSliceFlag{Name: "reviewers", Category: "round table", Usage: "agents that review the frozen work, comma separated"},
		&cli.IntFlag{Name: "quorum", Category: "round table", DefaultText: "every reviewer", Usage: "approvals needed"},
		&cli.StringFlag{Name: "grader", Category: "round table", Usage: "hidden test command, run by /bin/sh -c on the frozen copy"},
		&cli.StringFlag{Name: "workspace", Category: "round table", Usage: "directory the implementer changes, relative to FILE"},
		&cli.StringSliceFlag{Name: "phases", Category: "round table", Usage: "phases before the first round, in order: research=AGENT,plan=AGENT"},
	}
}

// debateInit reads debateFlags: a debate of at least two --agents, or a
// round table (--implementer with --reviewers, --grader, --workspace).
func debateInit(c *cli.Context) (walkie.InitOptions, error) {
	o := walkie.InitOptions{ID: c.String("id"), MaxRounds: c.Int("max-rounds"), People: splitNames(c.StringSlice("people")), Supervisor: strings.TrimSpace(c.String("supervisor"))}
	var err error
	if o.NoCopy, err = copyFlag(c); err != nil {
		return o, err
	}
	if !c.IsSet("implementer") {
		if err := requiredFlag(c, "agents"); err != nil {
			return o, err
		}
		o.Participants = splitNames(c.StringSlice("agents"))
		if len(o.Participants) < 2 {
			return o, withCode(exitBadInput, fmt.Errorf("--agents %s: a debate needs at least two agents, in turn order (e.g. --agents %s,codex); to have one agent's work reviewed by others, make a round table with --implementer and --reviewers",
				strings.Join(o.Participants, ","), firstOr(o.Participants, "claude")))
		}
		return o, nil
	}
	if c.IsSet("agents") {
		return o, withCode(exitBadInput, errors.New("a round table takes --implementer and --reviewers, not --agents"))
	}
	for _, f := range []string{"reviewers", "grader", "workspace"} {
		if err := requiredFlag(c, f); err != nil {
			return o, err
		}
	}
	o.Mode, o.Implementer, o.Reviewers, o.Quorum = walkie.ModeRoundtable, strings.TrimSpace(c.String("implementer")), splitNames(c.StringSlice("reviewers")), c.Int("quorum")
	o.Grader, o.Workspace = walkie.Command{Shell: c.String("grader")}, c.String("workspace")
	for _, p := range c.StringSlice("phases") {
		kind, agent, ok := strings.Cut(p, "=")
		if !ok {
			return o, withCode(exitBadInput, fmt.Errorf("--phases: %q: write KIND=AGENT, e.g. research=gemini", p))
		}
		o.Phases = append(o.Phases, walkie.Phase{Kind: strings.TrimSpace(kind), Agent: strings.TrimSpace(agent)})
	}
	return o, nil
}

// participantsCheck is walkie.InitOptions.Check for a new debate in
// file: every participant an agent of cfg or a declared person, or the
// file is not written (exit 2, with the name most likely meant).
func participantsCheck(file string, cfg *config.Config) func(m *walkie.Meta) error {
	return func(m *walkie.Meta) error {
		return withCode(exitBadInput, controller.CheckParticipants(file, m, cfg, nil))
	}
}

// created is what init says it made.
func created(file string, o walkie.InitOptions) string {
	if o.Mode == walkie.ModeRoundtable {
		return fmt.Sprintf("created round table %s (implementer %s; reviewers: %s)", file, o.Implementer, strings.Join(o.Reviewers, ", "))
	}
	s := fmt.Sprintf("created %s (participants: %s", file, strings.Join(o.Participants, ", "))
	if len(o.People) > 0 {
		s += "; people: " + strings.Join(o.People, ", ")
	}
	if o.Supervisor != "" {
		s += "; supervisor: " + o.Supervisor
	}
	return s + ")"
}

func splitNames(list []string) []string {
	var out []string
	for _, a := range list {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func firstOr(list []string, dflt string) string {
	if len(list) > 0 {
		return list[0]
	}
	return dflt
}

func postCommand(f *Factory, runF func(context.Context, *postOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "post",
		Usage:     "append one entry through the enforced writer",
		ArgsUsage: "FILE",
		Description: `Appends a turn by --from NAME (only in NAME's turn), or a supervisor entry
(--supervisor, accepted at any time, never changes whose turn it is). The body
comes from --body-file, or standard input with --body-file -. The entry is
stamped into the chain and the doorbell (.walkie/ID/signal.json) is rung.

A post is refused, with the reason and whose turn it is, when it is out of
turn, by an unknown name, after convergence, on a halted debate, past the
round cap, empty, over the size limit, not UTF-8, or when its body carries a
control character, a walkie marker, another agent's sign-off, a line that
reads as an entry heading (also as a markdown viewer renders it: indented,
setext, quoted), or a code fence left open (docs/format.md, "Entry text").

In a file of format 3 (a review thread, walkie thread new) an entry may say
what it is with --type (review-request, verdict with --verdict approve or
changes-requested, fix-report, question, info, close; a supervisor's ack) and
cite --refs (BRANCH@SHA, SHA or a path, comma separated); walkie writes them
as trailer lines at the end of the entry and into its marker. A verdict or a
fix-report must cite a ref. In a record bound to a git repository (repo: in
the front matter) every ref must resolve there, and a verdict must name the
current head of its branch: a stale one is refused with the head it should
have named (--verify-refs=false skips asking git; the controller's judge
still asks for agents' turns). docs/review-threads.md.

EXAMPLES:
   walkie post api.walkie.md --from codex --body-file reply.md
   echo "Agreed." | walkie post api.walkie.md --from claude --sign --body-file -
   walkie post api.walkie.md --supervisor --body-file - <<< "Keep it to v1."
   walkie post api.walkie.md --from codex --wait 10m --body-file reply.md
   walkie post reviews/login.walkie.md --from codex --type verdict --verdict approve \
       --refs main@3f2a9c1 --body-file - <<< "Approved: the 27 tests pass at 3f2a9c1."
   walkie post reviews/login.walkie.md --supervisor --type ack --refs 3f2a9c1 --signing-key ~/.ssh/id_ed25519 \
       --body-file - <<< "Read it; merge."`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "participant posting the turn"},
			&cli.BoolFlag{Name: "supervisor", Usage: "post a supervisor entry instead of a turn"},
			&cli.BoolFlag{Name: "sign", Usage: "end the turn with Signed-off-by: NAME (agree with the proposal as it stands)"},
			&cli.StringFlag{Name: "body-file", Value: "-", Usage: "file holding the body, or - for standard input"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to this long for NAME's turn instead of being refused"},
			&cli.StringFlag{Name: "type", Category: "review thread", Usage: "what the entry is: " + strings.Join(walkie.EntryTypes, ", ") + " (ack: a supervisor's)"},
			&cli.StringFlag{Name: "verdict", Category: "review thread", Usage: "a verdict's direction: " + strings.Join(walkie.Verdicts, " or ")},
			&cli.StringFlag{Name: "refs", Category: "review thread", Usage: "what the entry cites, comma separated: BRANCH@SHA, SHA or a path"},
			&cli.BoolFlag{Name: "verify-refs", Category: "review thread", Value: true, Usage: "check the refs in the git repository the record is bound to (repo:)"},
			&cli.StringFlag{Name: "signing-key", Category: "review thread", Usage: "sign the entry with this SSH key, so the merge gate counts it (a person's ack; never inside an agent's session)"},
		},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			if c.Bool("supervisor") == (c.String("from") != "") {
				return withCode(exitBadInput, errors.New("give exactly one of --from NAME or --supervisor"))
			}
			if c.Bool("supervisor") && c.Bool("sign") {
				return withCode(exitBadInput, errors.New("--sign is for a participant's turn; supervisor entries cannot sign"))
			}
			opts := &postOptions{IO: f.IO, File: file, From: c.String("from"), Supervisor: c.Bool("supervisor"), Sign: c.Bool("sign"),
				BodyFile: c.String("body-file"), Wait: c.Duration("wait"),
				Type: c.String("type"), Verdict: c.String("verdict"), Refs: c.String("refs"), VerifyRefs: c.Bool("verify-refs"),
				SigningKey: c.String("signing-key")}
			return runWith(c.Context, runF, postRun, opts)
		},
	}
}

// postOptions are walkie post's: who posts what into which record.
type postOptions struct {
	IO         *IOStreams
	File       string
	From       string // the participant whose turn it is, or ""
	Supervisor bool
	Sign       bool
	BodyFile   string        // a file, or - for standard input
	Wait       time.Duration // how long to wait for From's turn
	// A typed entry's --type, --verdict and --refs (as given), and
	// whether the refs are checked in the bound repository.
	Type, Verdict, Refs string
	VerifyRefs          bool
	// SigningKey signs the entry for the merge gate (a person's ack).
	SigningKey string
}

func postRun(ctx context.Context, o *postOptions) error {
	meta, err := walkie.ReadMeta(o.File)
	if err != nil {
		return err
	}
	body, size, err := readBody(o.IO.In, o.BodyFile, meta.TurnLimit())
	if err != nil {
		return withCode(exitBadInput, err)
	}
	p := walkie.Post{From: o.From, Supervisor: o.Supervisor, Body: body, Size: size, Sign: o.Sign}
	if p.From != "" && p.From == meta.Supervisor {
		// The debate's named supervisor posts as the supervisor: a note
		// at any time, never a turn.
		p.From, p.Supervisor = "", true
	}
	if p.Tags, p.Resolver, err = postTags(ctx, o, &meta); err != nil {
		return err
	}
	signer, err := postSigner(o.SigningKey)
	if err != nil {
		return err
	}
	p.NoQueue = signer != nil
	rc, err := appendWaiting(ctx, o.File, p, o.Wait)
	if err != nil {
		return err
	}
	if err := signPosted(ctx, o.File, rc.Entry.Seq, signer); err != nil {
		return err
	}
	if !rc.Queued {
		commitRecord(ctx, o.File, &meta, o.IO.ErrOut)
	}
	w := o.IO.Out
	switch {
	case rc.Queued:
		fmt.Fprintln(w, "a turn is running: the supervisor entry is queued and will be recorded right after it")
	case p.Supervisor:
		fmt.Fprintf(w, "recorded supervisor entry (seq %d)\n", rc.Entry.Seq)
	default:
		fmt.Fprintf(w, "recorded turn %d by %s (seq %d); status %s\n", rc.Entry.Turn, p.From, rc.Entry.Seq, rc.Status)
	}
	return nil
}

// appendWaiting posts, and with a wait, sleeps on the doorbell while the
// post is refused only because it is someone else's turn.
func appendWaiting(ctx context.Context, file string, p walkie.Post, wait time.Duration) (walkie.Receipt, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	for {
		rc, err := walkie.Append(file, p)
		var re *walkie.RefusedError
		// Only a post out of turn, or one beside a running attempt, can
		// become acceptable by waiting; any other refusal is final, and
		// waiting on it would spin until the deadline.
		if wait <= 0 || !errors.As(err, &re) || !(re.OutOfTurn || re.Busy) {
			return rc, err
		}
		if _, werr := walkie.WaitTurn(ctx, file, p.From); werr != nil {
			return rc, fmt.Errorf("%w (gave up waiting: %v)", err, werr)
		}
	}
}

// readBody reads a post's body from --body-file (a path, or - for
// standard input), at most one byte past limit: enough for the writer to
// refuse a body over the limit without holding it. size is as
// walkie.Post.Size.
func readBody(stdin io.Reader, path string, limit int) ([]byte, int64, error) {
	if path == "-" {
		b, size, err := readBounded(stdin, limit)
		if err != nil {
			return nil, 0, fmt.Errorf("read body from standard input: %w", err)
		}
		return b, size, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read body: %w", err)
	}
	defer f.Close()
	b, size, err := readBounded(f, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("read body %s: %w", path, err)
	}
	return b, size, nil
}

// readBounded reads at most limit+1 bytes of r, with the limit checked
// while reading. size is 0 when that was all of r; past the limit, it is
// r's whole size when r is a regular file, else -1.
func readBounded(r io.Reader, limit int) ([]byte, int64, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil || len(b) <= limit {
		return b, 0, err
	}
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			return b, fi.Size(), nil
		}
	}
	return b, -1, nil
}

// readBriefing reads the --briefing file, or standard input for "-",
// refusing one over the briefing limit without reading it all.
func readBriefing(stdin io.Reader, path string) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, withCode(exitBadInput, fmt.Errorf("read briefing: %w", err))
		}
		defer f.Close()
		r = f
	}
	b, size, err := readBounded(r, walkie.MaxBriefingBytes)
	switch {
	case err != nil:
		return nil, withCode(exitBadInput, fmt.Errorf("read briefing %s: %w", path, err))
	case size > 0:
		return nil, withCode(exitBadInput, fmt.Errorf("--briefing %s: the briefing is %d bytes, over the limit of %d; shorten it: every agent reads it every turn, and 300-400 words is the aim", path, size, walkie.MaxBriefingBytes))
	case size < 0:
		return nil, withCode(exitBadInput, fmt.Errorf("--briefing %s: the briefing is over the limit of %d bytes; shorten it: every agent reads it every turn, and 300-400 words is the aim", path, walkie.MaxBriefingBytes))
	}
	return b, nil
}

func statusCommand(f *Factory, runF func(context.Context, *statusOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show whose turn it is, the round, signatures and status",
		ArgsUsage: "FILE|DIR",
		Description: `Prints where the debate stands, from the record and .walkie/ID/log.jsonl:
its status (open, converged, closed, max-rounds, halted, failed, over-budget,
deadlocked) and why, the turns recorded and the round (of a debate that is
over, the round it ended in, and the cap it held), whose turn is next, whose
sign-offs stand, whether the briefing is approved, the attempt a controller
is running now and who runs it, why nothing runs (an attempt whose
controller is gone reads as interrupted), and the cost against the budget.
show, follow, the end of auto, report and serve's page say the same
(docs/controller.md, "Where a debate stands"). It reads; walkie verify
checks the chain. To read the debate itself, walkie show FILE; to watch it
go, walkie follow FILE.

Given a directory (a channel of review threads, walkie thread new), it lists
the walkie files in it, one line each, and names the open thread.

EXAMPLES:
   walkie status api.walkie.md
   walkie status api.walkie.md --jq .whose_turn
   walkie status api.walkie.md --json status,round,whose_turn
   walkie status reviews/`,
		Flags: append(jsonFlags(controller.Standing{}, channelView{}), standingConfigFlag()),
		Action: func(c *cli.Context) error {
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			opts := &statusOptions{IO: f.IO, JSON: exp, Stand: f.Standing(c.String("config"))}
			if dir, ok := dirArg(c); ok {
				opts.Dir = dir
				return runWith(c.Context, runF, statusRun, opts)
			}
			if opts.File, err = recordArg(c); err != nil {
				return err
			}
			return runWith(c.Context, runF, statusRun, opts)
		},
	}
}

// statusOptions are walkie status's: a record, or a directory of them.
type statusOptions struct {
	IO    *IOStreams
	File  string
	Dir   string // a channel, or any directory of walkie files, instead of File
	JSON  *jsonExporter
	Stand standingReader
}

// standingReader is where a loaded debate stands (Factory.Standing).
type standingReader func(*walkie.Doc) (controller.Standing, error)

// of is where d stands; a nil reader reads it under the built-in presets.
func (stand standingReader) of(d *walkie.Doc) (controller.Standing, error) {
	if stand == nil {
		return controller.ReadStanding(d, controller.StandingOptions{})
	}
	return stand(d)
}

// loadStanding reads the record at file and where it stands.
func loadStanding(file string, stand standingReader) (*walkie.Doc, *controller.Standing, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, nil, err
	}
	s, err := stand.of(d)
	if err != nil {
		return nil, nil, err
	}
	return d, &s, nil
}

// standingConfigFlag is --config of the commands that show where a
// debate stands: its agents and budget are part of it.
func standingConfigFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", Usage: "config file, for the agents and budget_usd (default: ./walkie.yaml, then the user config dir)"}
}

func statusRun(_ context.Context, o *statusOptions) error {
	if o.Dir != "" {
		return statusDir(o)
	}
	_, s, err := loadStanding(o.File, o.Stand)
	if err != nil {
		return err
	}
	if o.JSON != nil {
		return o.JSON.Write(o.IO.Out, s)
	}
	return writeClean(o.IO.Out, func(w io.Writer) error { return printStatus(w, s) })
}

// printStatus is walkie status FILE for a person.
func printStatus(w io.Writer, s *controller.Standing) error {
	fmt.Fprintf(w, "debate   %s (%s)\n", s.ID, s.File)
	fmt.Fprintf(w, "status   %s", s.Status)
	if s.Reason != "" {
		fmt.Fprintf(w, " — %s", s.Reason)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "turns    %d recorded, %s of %d\n", s.Turns, term.RoundWord(s), s.RoundCap)
	if s.Whose != "" {
		fmt.Fprintf(w, "next     turn %d · %s\n", s.NextTurn, s.Whose)
	}
	fmt.Fprintf(w, "signed   %s\n", orDash(strings.Join(s.Signed, ", ")))
	fmt.Fprintf(w, "briefing %s\n", map[bool]string{true: "approved", false: "not approved (walkie brief approve FILE)"}[s.Approved])
	if s.Running != nil && !s.Running.Interrupted {
		fmt.Fprintf(w, "running  %s\n", term.RunningLine(s))
	}
	if s.Waiting != "" && s.Approved {
		fmt.Fprintf(w, "waiting  %s\n", s.Waiting)
	}
	if s.CostUSD > 0 || s.UnknownCosts > 0 || s.BudgetUSD > 0 {
		cost := walkie.Money(s.CostUSD)
		if s.BudgetUSD > 0 {
			cost += " of a " + walkie.Money(s.BudgetUSD) + " budget"
		}
		if u := term.UnknownCosts(s.UnknownCosts, s.UnknownUSD, s.BudgetUSD); u != "" {
			cost += " " + u
		}
		fmt.Fprintf(w, "cost     %s\n", cost)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func verifyCommand(f *Factory, runF func(context.Context, *fileOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "check the record's chain and briefing hash",
		ArgsUsage: "FILE",
		Description: `Recomputes the hash chain over every entry and checks sequence numbers, turn
order, authors, the pinned briefing hash, and that the file still holds every
entry walkie recorded. Exits 0 only when all hold; otherwise names the first
bad entry and its line (exit 4). Bytes after the last entry are reported as a
torn tail (see walkie repair).

EXAMPLES:
   walkie verify api.walkie.md && echo intact
   walkie verify api.walkie.md --jq .problem`,
		Flags: jsonFlags(verifyView{}),
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, verifyRun, &fileOptions{IO: f.IO, File: file, JSON: exp})
		},
	}
}

// fileOptions are the options of a command that takes one record and
// few flags (walkie verify, repair).
type fileOptions struct {
	IO   *IOStreams
	File string
	JSON *jsonExporter // verify's --json and --jq
}

// verifyView is walkie verify --json: the text's line, or its problem.
type verifyView struct {
	File    string `json:"file"`
	OK      bool   `json:"ok"`
	Entries *int   `json:"entries,omitempty"` // nil when it does not verify
	Chain   string `json:"chain,omitempty"`
	Problem string `json:"problem,omitempty"`
}

func verifyRun(_ context.Context, o *fileOptions) error {
	d, err := loadVerified(o.File)
	if o.JSON != nil && (err == nil || exitCode(err) == exitUnverified) {
		// A record that does not verify is a finding, printed as one;
		// the exit code still says so.
		v := verifyView{File: o.File, OK: err == nil}
		if err != nil {
			v.Problem = err.Error()
		} else {
			n := len(d.Entries)
			v.Entries, v.Chain = &n, d.LastHash()
		}
		if werr := o.JSON.Write(o.IO.Out, v); werr != nil {
			return werr
		}
	}
	if err != nil {
		return err
	}
	if o.JSON == nil {
		fmt.Fprintf(o.IO.Out, "%s: ok, %s, chain %s\n", o.File, walkie.Count(len(d.Entries), "entry", "entries"), d.LastHash())
	}
	return nil
}

func haltCommand(f *Factory, runF func(context.Context, *haltOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "halt",
		Usage:     "stop a debate; a running turn ends within a second",
		ArgsUsage: "FILE",
		Description: `Marks the debate halted in .walkie/ID/log.jsonl, with --reason. Every
controller re-reads the state before each turn and while a turn runs, so a
running walkie auto, serve or watch ends the running turn (it is recorded as
halted, never as the agent's failure) and starts no other; walkie post
refuses turns until walkie resume lifts the halt. A converged debate cannot
be halted (there is nothing left to stop). The record is not touched.

EXAMPLES:
   walkie halt api.walkie.md --reason "going in circles on naming"`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, recorded in the state and shown by status"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, haltRun, &haltOptions{IO: f.IO, File: file, Reason: c.String("reason")})
		},
	}
}

// haltOptions are walkie halt's.
type haltOptions struct {
	IO     *IOStreams
	File   string
	Reason string
}

func haltRun(_ context.Context, o *haltOptions) error {
	if err := walkie.Halt(o.File, o.Reason); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "halted %s; `walkie resume %s` lifts it\n", o.File, o.File)
	return nil
}

func resumeCommand(f *Factory, runF func(context.Context, *resumeOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "lift a halt, or reopen a failed, over-budget or deadlocked debate",
		ArgsUsage: "FILE",
		Description: `Clears the stop a person or the controller put in .walkie/ID/log.jsonl: a
halt, or the failed, over-budget or deadlocked status, with its retry
counters, so the next walkie auto (or a running walkie serve) takes the next
turn. It starts nothing itself. A debate with nothing to resume (it is open,
or it has converged) is left as it is, with a note, and exit 0; one that
ended at its round cap needs walkie extend instead.

EXAMPLES:
   walkie resume api.walkie.md && walkie auto api.walkie.md`,
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, resumeRun, &resumeOptions{IO: f.IO, Config: f.Config, File: file})
		},
	}
}

func resumeRun(_ context.Context, o *resumeOptions) error {
	cfg, err := o.Config("")
	if err != nil {
		return err
	}
	note, err := controller.Resume(o.File, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.IO.Out, term.Clean(note))
	return nil
}

// resumeOptions are walkie resume's.
type resumeOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)
	File   string
}

func extendCommand(f *Factory, runF func(context.Context, *extendOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "extend",
		Usage:     "raise this debate's round cap",
		ArgsUsage: "FILE",
		Description: `Adds rounds to this debate only. The extension lives in .walkie/ID/log.jsonl,
not in the record, and is cleared when the debate converges. A running
controller or daemon picks it up at once.

EXAMPLES:
   walkie extend api.walkie.md --rounds 2`,
		Flags: []cli.Flag{&cli.IntFlag{Name: "rounds", Usage: "rounds to add (required)"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			if err := requiredFlag(c, "rounds"); err != nil {
				return err
			}
			return runWith(c.Context, runF, extendRun, &extendOptions{IO: f.IO, File: file, Rounds: c.Int("rounds")})
		},
	}
}

// extendOptions are walkie extend's.
type extendOptions struct {
	IO     *IOStreams
	File   string
	Rounds int
}

func extendRun(_ context.Context, o *extendOptions) error {
	capRounds, err := walkie.Extend(o.File, o.Rounds)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "%s: round cap is now %d\n", o.File, capRounds)
	return nil
}

func repairCommand(f *Factory, runF func(context.Context, *repairOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "repair",
		Usage:     "move a torn tail aside so the record and its log read again",
		ArgsUsage: "FILE",
		Description: `A crash in the middle of a write can leave bytes after the last recorded
entry, or after the last whole line of the debate's log (.walkie/ID/log.jsonl).
walkie reports them and never guesses: this command moves a torn record
tail to .walkie/ID/torn-TIME.txt and a torn log tail to
.walkie/ID/torn-log-TIME.txt, and cuts them off. Neither held anything
walkie had acknowledged. It refuses while a controller runs the debate
(its agent may be writing).

A log line damaged before a whole one (a flipped bit, a line removed) is
refused by every command, naming its line. --drop-log-line N gives up what
that line recorded: the log is rewritten with a "dropped" line in its
place, and the log as it was is kept as .walkie/ID/log-damaged-TIME.jsonl.
Restoring log.jsonl from a backup loses nothing; prefer that.

EXAMPLES:
   walkie verify api.walkie.md || walkie repair api.walkie.md
   walkie repair api.walkie.md --drop-log-line 12`,
		Flags: []cli.Flag{&cli.IntSliceFlag{Name: "drop-log-line", Usage: "give up the damaged line `N` of the log (repeat for more)"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, repairRun, &repairOptions{IO: f.IO, File: file, Drop: c.IntSlice("drop-log-line")})
		},
	}
}

// repairOptions are walkie repair's.
type repairOptions struct {
	IO   *IOStreams
	File string
	Drop []int // lines of the log to give up
}

func repairRun(_ context.Context, o *repairOptions) error {
	lr, err := walkie.RepairLog(o.File, o.Drop...)
	if err != nil {
		return err
	}
	switch {
	case lr.Dropped:
		fmt.Fprintf(o.IO.Out, "%s: log line %v given up (%d bytes); the log as it was is in %s\n", o.File, o.Drop, lr.Bytes, lr.Side)
	case lr.Side != "":
		fmt.Fprintf(o.IO.Out, "%s: torn log tail at line %d (%d bytes) moved to %s\n", o.File, lr.Line, lr.Bytes, lr.Side)
	}
	side, err := walkie.Repair(o.File)
	if err != nil {
		return err
	}
	switch {
	case side != "":
		fmt.Fprintf(o.IO.Out, "%s: torn tail moved to %s\n", o.File, side)
	case lr.Side == "":
		fmt.Fprintf(o.IO.Out, "%s: no torn tail; nothing to do\n", o.File)
	}
	return nil
}

// loadVerified loads the record and checks it as walkie verify does: the
// chain, the briefing's pin and the state record. Whatever they find
// wrong is "does not verify" (exit 4); only a file that is not a walkie
// file at all is bad input.
func loadVerified(file string) (*walkie.Doc, error) {
	// The log before the record, as every writer writes them the other
	// way round: a post meanwhile then leaves the record ahead of what
	// was read of the log, never behind it (which reads as a cut record).
	var st *walkie.State
	if meta, err := walkie.ReadMeta(file); err == nil {
		if st, err = walkie.LoadState(walkie.StateDir(file, meta.ID)); err != nil {
			return nil, err
		}
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	if err := d.Verify(); err != nil {
		var torn *walkie.TornTailError
		if errors.As(err, &torn) && walkie.ControllerRunning(walkie.StateDir(file, d.Meta.ID)) {
			// Most likely the running agent's turn, written and not yet
			// stamped: repair would refuse, and the user should know why.
			err = fmt.Errorf("%w (a controller is running this debate: these may be its agent's turn, not yet recorded; verify again once the turn is over)", err)
		}
		return nil, withCode(exitUnverified, err)
	}
	if st == nil {
		if st, err = walkie.LoadState(walkie.StateDir(file, d.Meta.ID)); err != nil {
			return nil, err
		}
	}
	if err := d.CheckState(st); err != nil {
		return nil, withCode(exitUnverified, err)
	}
	return d, nil
}
