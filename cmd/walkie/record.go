package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/walkie"
)

// fileArg returns the one FILE argument of a command.
func fileArg(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", withCode(exitBadInput, fmt.Errorf("%s needs exactly one FILE argument (got %d); see `walkie %s --help`", c.Command.Name, c.NArg(), c.Command.Name))
	}
	return c.Args().First(), nil
}

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
	return withCode(exitBadInput, fmt.Errorf("%w; see `walkie %s --help`", err, c.Command.Name))
}

// requiredFlag checks a flag that urfave would otherwise check itself,
// with exit 1 and the whole help text instead of one line and exit 2.
func requiredFlag(c *cli.Context, name string) error {
	if !c.IsSet(name) {
		return withCode(exitBadInput, fmt.Errorf("%s needs --%s; see `walkie %s --help`", c.Command.Name, name, c.Command.Name))
	}
	return nil
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

func initCommand() *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create a new walkie file",
		ArgsUsage: "FILE",
		Description: `Creates FILE with front matter and a briefing section. The participants take
turns in the order given. The briefing must be approved (walkie brief approve)
before agents run.

A round table (docs/roundtable.md) is created with --implementer and
--reviewers instead of --agents: the implementer changes the workspace, the
reviewers judge a frozen copy in parallel, and the grader command (run by
/bin/sh -c on the same copy, never shown to the agents) must pass.

EXAMPLES:
   walkie init api.walkie.md --agents claude,codex
   walkie init review.walkie.md --agents claude,codex,gemini --max-rounds 4 --briefing brief.md
   walkie init fix.walkie.md --implementer claude --reviewers codex,gemini --quorum 1 \
       --grader "go test ./..." --workspace . --max-rounds 4`,
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "agents", Usage: "participants in turn order, comma separated (at least two; required for a debate)"},
			&cli.StringFlag{Name: "id", Usage: "debate id (default: the file name without .walkie.md)"},
			&cli.IntFlag{Name: "max-rounds", Value: 6, Usage: "round cap; a round is one turn by each participant"},
			&cli.StringFlag{Name: "briefing", Usage: "file whose text becomes the briefing"},
			&cli.StringFlag{Name: "copy", Value: "on", Usage: "the supervisor's copy of every entry through the notify sinks: on (the default for a new debate) or off; walkie notify changes it later"},
			&cli.StringFlag{Name: "implementer", Category: "round table", Usage: "the agent that changes the workspace (makes a round table)"},
			&cli.StringSliceFlag{Name: "reviewers", Category: "round table", Usage: "agents that review the frozen work, comma separated"},
			&cli.IntFlag{Name: "quorum", Category: "round table", Usage: "approvals needed (default: every reviewer)"},
			&cli.StringFlag{Name: "grader", Category: "round table", Usage: "hidden test command, run by /bin/sh -c on the frozen copy"},
			&cli.StringFlag{Name: "workspace", Category: "round table", Usage: "directory the implementer changes, relative to FILE"},
		},
		Action: func(c *cli.Context) error {
			file, err := fileArg(c)
			if err != nil {
				return err
			}
			if c.IsSet("implementer") {
				return initRoundtable(c, file)
			}
			if err := requiredFlag(c, "agents"); err != nil {
				return err
			}
			var brief []byte
			if p := c.String("briefing"); p != "" {
				if brief, err = os.ReadFile(p); err != nil {
					return withCode(exitBadInput, fmt.Errorf("read briefing: %w", err))
				}
			}
			var agents []string
			for _, a := range c.StringSlice("agents") {
				agents = append(agents, strings.TrimSpace(a))
			}
			noCopy, err := copyFlag(c)
			if err != nil {
				return err
			}
			err = walkie.Init(file, walkie.InitOptions{ID: c.String("id"), Participants: agents, MaxRounds: c.Int("max-rounds"), Briefing: brief, NoCopy: noCopy})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "created %s (participants: %s)\n", file, strings.Join(agents, ", "))
			return nil
		},
	}
}

// initRoundtable creates a round-table file from init's flags.
func initRoundtable(c *cli.Context, file string) error {
	if c.IsSet("agents") {
		return withCode(exitBadInput, errors.New("a round table takes --implementer and --reviewers, not --agents"))
	}
	for _, f := range []string{"reviewers", "grader", "workspace"} {
		if err := requiredFlag(c, f); err != nil {
			return err
		}
	}
	var brief []byte
	if p := c.String("briefing"); p != "" {
		var err error
		if brief, err = os.ReadFile(p); err != nil {
			return withCode(exitBadInput, fmt.Errorf("read briefing: %w", err))
		}
	}
	var reviewers []string
	for _, r := range c.StringSlice("reviewers") {
		reviewers = append(reviewers, strings.TrimSpace(r))
	}
	noCopy, err := copyFlag(c)
	if err != nil {
		return err
	}
	err = walkie.Init(file, walkie.InitOptions{ID: c.String("id"), Mode: walkie.ModeRoundtable, MaxRounds: c.Int("max-rounds"), Briefing: brief, NoCopy: noCopy,
		Implementer: strings.TrimSpace(c.String("implementer")), Reviewers: reviewers, Quorum: c.Int("quorum"),
		Grader: walkie.Command{Shell: c.String("grader")}, Workspace: c.String("workspace")})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "created round table %s (implementer %s; reviewers: %s)\n", file, c.String("implementer"), strings.Join(reviewers, ", "))
	return nil
}

func postCommand() *cli.Command {
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
turn heading, a walkie marker or another agent's sign-off.

EXAMPLES:
   walkie post api.walkie.md --from codex --body-file reply.md
   echo "Agreed." | walkie post api.walkie.md --from claude --sign --body-file -
   walkie post api.walkie.md --supervisor --body-file - <<< "Keep it to v1."
   walkie post api.walkie.md --from codex --wait 10m --body-file reply.md`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "participant posting the turn"},
			&cli.BoolFlag{Name: "supervisor", Usage: "post a supervisor entry instead of a turn"},
			&cli.BoolFlag{Name: "sign", Usage: "end the turn with Signed-off-by: NAME (agree with the proposal as it stands)"},
			&cli.StringFlag{Name: "body-file", Value: "-", Usage: "file holding the body, or - for standard input"},
			&cli.DurationFlag{Name: "wait", Usage: "wait up to this long for NAME's turn instead of being refused"},
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
			body, err := readBody(c.App.Reader, c.String("body-file"))
			if err != nil {
				return withCode(exitBadInput, err)
			}
			p := walkie.Post{From: c.String("from"), Supervisor: c.Bool("supervisor"), Body: body, Sign: c.Bool("sign")}
			rc, err := appendWaiting(c.Context, file, p, c.Duration("wait"))
			if err != nil {
				return err
			}
			switch {
			case rc.Queued:
				fmt.Fprintln(c.App.Writer, "a turn is running: the supervisor entry is queued and will be recorded right after it")
			case p.Supervisor:
				fmt.Fprintf(c.App.Writer, "recorded supervisor entry (seq %d)\n", rc.Entry.Seq)
			default:
				fmt.Fprintf(c.App.Writer, "recorded turn %d by %s (seq %d); status %s\n", rc.Entry.Turn, p.From, rc.Entry.Seq, rc.Status)
			}
			return nil
		},
	}
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
		// Only a post out of turn can become acceptable by waiting; any
		// other refusal is final, and waiting on it would spin until the
		// deadline.
		if wait <= 0 || !errors.As(err, &re) || !re.OutOfTurn {
			return rc, err
		}
		if _, werr := walkie.WaitTurn(ctx, file, p.From); werr != nil {
			return rc, fmt.Errorf("%w (gave up waiting: %v)", err, werr)
		}
	}
}

func readBody(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read body from standard input: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

// debateView is the status of a debate as `walkie status --json` prints it.
type debateView struct {
	File         string             `json:"file"`
	ID           string             `json:"id"`
	Status       string             `json:"status"`
	Reason       string             `json:"reason,omitempty"`
	Participants []string           `json:"participants"`
	Turns        int                `json:"turns"`
	Seq          int                `json:"seq"`
	NextTurn     int                `json:"next_turn,omitempty"`
	Whose        string             `json:"whose_turn,omitempty"`
	Round        int                `json:"round"`
	RoundCap     int                `json:"round_cap"`
	Signed       []string           `json:"signed"`
	Approved     bool               `json:"briefing_approved"`
	CostUSD      float64            `json:"cost_usd"`
	Running      *walkie.Attempt    `json:"running,omitempty"`
	LastEntry    *walkie.EntryBrief `json:"last_entry,omitempty"`
}

func loadView(file string) (*debateView, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, err
	}
	st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		return nil, err
	}
	p := d.Progress()
	v := &debateView{File: file, ID: d.Meta.ID, Status: walkie.DebateStatus(&d.Meta, p, st), Reason: st.Reason,
		Participants: d.Meta.Participants, Turns: p.Turns, Seq: p.Seq, Round: min(p.NextRound, walkie.CapHeld(&d.Meta, p, st)),
		RoundCap: walkie.CapHeld(&d.Meta, p, st), Signed: p.Signed, Approved: d.Meta.BriefingSHA256 != "", CostUSD: st.CostUSD, Running: st.Running}
	if v.Signed == nil {
		v.Signed = []string{}
	}
	if v.Status == walkie.StatusOpen {
		v.NextTurn, v.Whose = p.NextTurn, p.NextAgent
	}
	if n := len(d.Entries); n > 0 {
		v.LastEntry = d.Entries[n-1].Brief()
	}
	return v, nil
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show whose turn it is, the round, signatures and status",
		ArgsUsage: "FILE",
		Description: `EXAMPLES:
   walkie status api.walkie.md
   walkie status api.walkie.md --json | jq .whose_turn`,
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			v, err := loadView(file)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			}
			w := c.App.Writer
			fmt.Fprintf(w, "debate   %s (%s)\n", v.ID, v.File)
			fmt.Fprintf(w, "status   %s", v.Status)
			if v.Reason != "" {
				fmt.Fprintf(w, " — %s", v.Reason)
			}
			fmt.Fprintln(w)
			fmt.Fprintf(w, "turns    %d recorded, round %d of %d\n", v.Turns, v.Round, v.RoundCap)
			if v.Whose != "" {
				fmt.Fprintf(w, "next     turn %d · %s\n", v.NextTurn, v.Whose)
			}
			fmt.Fprintf(w, "signed   %s\n", orDash(strings.Join(v.Signed, ", ")))
			fmt.Fprintf(w, "briefing %s\n", map[bool]string{true: "approved", false: "not approved (walkie brief approve FILE)"}[v.Approved])
			if v.Running != nil {
				fmt.Fprintf(w, "running  turn %d · %s, attempt %d, since %s\n", v.Running.Turn, v.Running.Agent, v.Running.Number, v.Running.Started.Format(time.RFC3339))
			}
			return nil
		},
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func verifyCommand() *cli.Command {
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
   walkie verify api.walkie.md && echo intact`,
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			d, err := walkie.Load(file)
			if err != nil {
				return err
			}
			// Whatever the chain, the briefing hash or the state record
			// finds wrong, verify's answer is "does not verify" (exit 4);
			// only a file that is not a walkie file at all is bad input.
			if err := d.Verify(); err != nil {
				return withCode(exitUnverified, err)
			}
			st, err := walkie.LoadState(walkie.StateDir(file, d.Meta.ID))
			if err != nil {
				return err
			}
			if err := d.CheckState(st); err != nil {
				return withCode(exitUnverified, err)
			}
			fmt.Fprintf(c.App.Writer, "%s: ok, %d entries, chain %s\n", file, len(d.Entries), d.LastHash())
			return nil
		},
	}
}

func haltCommand() *cli.Command {
	return &cli.Command{
		Name:      "halt",
		Usage:     "stop a debate; a running turn ends within a second",
		ArgsUsage: "FILE",
		Description: `EXAMPLES:
   walkie halt api.walkie.md --reason "going in circles on naming"`,
		Flags: []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why, recorded in the state and shown by status"}},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			if err := walkie.Halt(file, c.String("reason")); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "halted %s; `walkie resume %s` lifts it\n", file, file)
			return nil
		},
	}
}

func resumeCommand() *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "lift a halt, or reopen a failed, over-budget or deadlocked debate",
		ArgsUsage: "FILE",
		Description: `EXAMPLES:
   walkie resume api.walkie.md && walkie auto api.walkie.md`,
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			if err := walkie.Resume(file); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "resumed %s\n", file)
			return nil
		},
	}
}

func extendCommand() *cli.Command {
	return &cli.Command{
		Name:      "extend",
		Usage:     "raise this debate's round cap",
		ArgsUsage: "FILE",
		Description: `Adds rounds to this debate only. The extension lives in .walkie/ID/state.json,
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
			capRounds, err := walkie.Extend(file, c.Int("rounds"))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s: round cap is now %d\n", file, capRounds)
			return nil
		},
	}
}

func repairCommand() *cli.Command {
	return &cli.Command{
		Name:      "repair",
		Usage:     "move a torn tail aside so the record verifies again",
		ArgsUsage: "FILE",
		Description: `A crash in the middle of a write can leave bytes after the last recorded
entry. walkie reports them and never guesses: this command moves them to
.walkie/ID/torn-TIME.txt and cuts them from FILE. It refuses while a
controller runs the debate (its agent may be writing).

EXAMPLES:
   walkie verify api.walkie.md || walkie repair api.walkie.md`,
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			side, err := walkie.Repair(file)
			if err != nil {
				return err
			}
			if side == "" {
				fmt.Fprintf(c.App.Writer, "%s: no torn tail; nothing to do\n", file)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "%s: torn tail moved to %s\n", file, side)
			return nil
		},
	}
}
