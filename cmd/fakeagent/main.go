package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// usageText is printed by --help; it repeats the package doc's contract.
const usageText = `usage: fakeagent --file F --agent NAME [--turn N] [--round R] [--script S.yaml] [--state FILE] [flags]

Behaves like an agent CLI: reads the walkie file F and appends one turn
("\n## Turn N · NAME\nbody\n[Signed-off-by: NAME\n]") or misbehaves.

Order: chatter, flood, read stdin, ask, delay, shell, tries, behavior,
usage line, hang-after, exit.

Behaviors: append (default), none, hang, two-turns, edit-briefing,
edit-turn, wrong-heading, wrong-author, not-logged-in, grandchild,
write (the body becomes the whole of F, created if missing),
verdict (write the verdict JSON to --verdict-file, default $WALKIE_VERDICT).

Before the behavior, shell (shells: per round) runs under /bin/sh -c in the
working directory, with {agent} {turn} {round} replaced: a stand-in for an
agent that edits files or runs code.

Script (YAML, keys win over flags; top level applies to every step;
with --state the k-th run uses steps[k-1], the last repeats):
  behavior, body, bodies: [per round], sign, sign_from, chatter, flood_mb,
  read_stdin, ask, delay, hang_after, exit_code, author, usage, cost_usd,
  input_tokens, output_tokens, grandchild_setsid, pid_file, shell,
  shells: [per round], verdict, verdicts: [per round], verdict_file,
  body_cmd, body_cmds: [per round] (a snippet whose output is the body),
  try_read, try_write: [paths a hostile agent tries to read, or to append
  a forged line to; each prints "fakeagent: read P: refused: ERR" or
  "fakeagent: read P: ALLOWED (N bytes)"; {ppid} is the parent's pid],
  steps: [...],
  when: [{file, contains, lacks, last_blocker, id, ...settings}] (the
  first entry whose conditions hold overrides the step)

Flags:
`

// options are the flags that are not part of a step.
type options struct {
	file, agent, script, state string
	turn, round                int
	grandchildMode             bool
}

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o options
	var st step
	var bodies multiFlag
	exitCode := -1
	fs := flag.NewFlagSet("fakeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.file, "file", "", "walkie file to read and append to")
	fs.StringVar(&o.agent, "agent", "", "this agent's name")
	fs.IntVar(&o.turn, "turn", 0, "turn number (default: counted from the file)")
	fs.IntVar(&o.round, "round", 0, "round number (default: from turn and participants)")
	fs.StringVar(&o.script, "script", "", "YAML script")
	fs.StringVar(&o.state, "state", "", "invocation counter file selecting the script step")
	fs.BoolVar(&o.grandchildMode, "grandchild-mode", false, "internal: run as the lingering grandchild")
	fs.StringVar(&st.Behavior, "behavior", "append", "what to do")
	fs.Var(&bodies, "body", "turn body; repeat for rounds 1, 2, … (the last repeats)")
	fs.BoolVar(&st.Sign, "sign", false, "sign the turn")
	fs.IntVar(&st.SignFrom, "sign-from", 0, "sign from this round on")
	fs.IntVar(&st.Chatter, "chatter", 0, "lines of coloured chatter to print first")
	fs.Float64Var(&st.FloodMB, "flood-mb", 0, "MB of output to print first")
	fs.BoolVar(&st.ReadStdin, "read-stdin", false, "read stdin until EOF first")
	fs.StringVar(&st.Ask, "ask", "", "yes/no question to ask first")
	fs.DurationVar(&st.Delay, "delay", 0, "sleep before acting")
	fs.BoolVar(&st.HangAfter, "hang-after", false, "hang after acting")
	fs.IntVar(&exitCode, "exit-code", -1, "exit code (default 0; 1 for not-logged-in)")
	fs.StringVar(&st.Author, "author", "intruder", "author for wrong-author")
	fs.BoolVar(&st.Usage, "usage", false, "print a claude JSON result line at the end")
	fs.Float64Var(&st.CostUSD, "cost-usd", 0.0123, "total_cost_usd in the usage line")
	fs.IntVar(&st.InputTokens, "input-tokens", 1234, "input_tokens in the usage line")
	fs.IntVar(&st.OutputTokens, "output-tokens", 567, "output_tokens in the usage line")
	fs.BoolVar(&st.GrandchildSetsid, "grandchild-setsid", false, "the grandchild also leaves the process group")
	fs.StringVar(&st.PidFile, "pid-file", "", "write the grandchild's pid here")
	fs.StringVar(&st.Shell, "shell", "", "run this under /bin/sh -c before the behavior")
	fs.StringVar(&st.Verdict, "verdict", "", "verdict JSON for the verdict behavior")
	fs.StringVar(&st.VerdictFile, "verdict-file", "", "where the verdict behavior writes (default $WALKIE_VERDICT)")
	fs.Var((*multiFlag)(&st.TryRead), "try-read", "a path to try to read before the behavior (repeat)")
	fs.Var((*multiFlag)(&st.TryWrite), "try-write", "a path to try to append a forged line to before the behavior (repeat)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.grandchildMode {
		return grandchild(stdout)
	}
	st.Bodies = bodies
	if exitCode >= 0 {
		st.ExitCode = &exitCode
	}
	a, err := prepare(o, st)
	if err != nil {
		fmt.Fprintf(stderr, "fakeagent: %v\n", err)
		return 2
	}
	return a.run(ctx, stdin, stdout, stderr)
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ", ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// agent is one prepared invocation.
type agent struct {
	opts  options
	step  step
	turn  int
	round int
	// cmdBody is what body_cmd printed, when the step has one.
	cmdBody *string
}

func prepare(o options, st step) (*agent, error) {
	if o.file == "" || o.agent == "" {
		return nil, errors.New("--file and --agent are required")
	}
	if o.script != "" {
		data, err := os.ReadFile(o.script)
		if err != nil {
			return nil, err
		}
		k, err := nextInvocation(o.state)
		if err != nil {
			return nil, err
		}
		if st, err = applyScript(st, data, k); err != nil {
			return nil, err
		}
	} else if err := st.validate(); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(o.file)
	// A file it is to write, or leave alone, may not exist yet.
	if err != nil && !(slices.Contains([]string{"write", "none", "hang"}, st.Behavior) && errors.Is(err, os.ErrNotExist)) {
		return nil, err
	}
	rec, err := parseRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.file, err)
	}
	if o.script != "" {
		data, err := os.ReadFile(o.script)
		if err != nil {
			return nil, err
		}
		if st, err = applyWhen(st, data, whenFacts{rec: rec, workspace: os.Getenv("WALKIE_WORKSPACE")}); err != nil {
			return nil, err
		}
	}
	a := &agent{opts: o, step: st, turn: o.turn, round: o.round}
	if a.turn <= 0 {
		a.turn = rec.turns + 1
	}
	if a.round <= 0 {
		a.round = roundOf(a.turn, len(rec.participants))
	}
	return a, nil
}

func (a *agent) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	st := a.step
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	if st.Chatter > 0 {
		chatter(out, st.Chatter, a.opts.file)
	}
	if st.FloodMB > 0 {
		flood(out, int64(st.FloodMB*(1<<20)))
	}
	out.Flush()
	in := bufio.NewReader(stdin)
	if st.ReadStdin {
		n, err := io.Copy(io.Discard, in)
		if err != nil {
			fmt.Fprintf(stderr, "fakeagent: reading stdin: %v\n", err)
			return 2
		}
		fmt.Fprintf(out, "read %d bytes from stdin\n", n)
		out.Flush()
	}
	if st.Ask != "" {
		fmt.Fprintf(out, "%s [y/N] ", st.Ask)
		out.Flush()
		line, _ := in.ReadString('\n')
		answer := strings.ToLower(strings.TrimSpace(line))
		if answer != "y" && answer != "yes" {
			fmt.Fprintln(out, "Not confirmed; leaving the file alone.")
			return 0
		}
	}
	if st.Delay > 0 {
		select {
		case <-time.After(st.Delay):
		case <-ctx.Done():
			return 1
		}
	}
	if err := a.runShell(ctx, out); err != nil {
		fmt.Fprintf(stderr, "fakeagent: %v\n", err)
		return 2
	}
	if err := a.runBodyCmd(ctx); err != nil {
		fmt.Fprintf(stderr, "fakeagent: %v\n", err)
		return 2
	}
	a.tryAll(out)
	code := 0
	if err := a.act(out); err != nil {
		fmt.Fprintf(stderr, "fakeagent: %v\n", err)
		return 2
	}
	switch st.Behavior {
	case "hang":
		out.Flush()
		hang()
	case "not-logged-in":
		code = 1
	}
	if st.Usage {
		fmt.Fprintf(out, `{"type":"result","subtype":"success","is_error":false,"total_cost_usd":%s,"usage":{"input_tokens":%d,"output_tokens":%d}}`+"\n",
			strconv.FormatFloat(st.CostUSD, 'f', -1, 64), st.InputTokens, st.OutputTokens)
	}
	out.Flush()
	if st.HangAfter {
		hang()
	}
	if st.ExitCode != nil {
		code = *st.ExitCode
	}
	return code
}

// act performs the behaviour's effect on the file.
func (a *agent) act(out *bufio.Writer) error {
	st := a.step
	name := a.opts.agent
	proper := turnText(heading(a.turn, name), a.body(a.turn, a.round), a.signer(a.round))
	switch st.Behavior {
	case "append":
		return appendText(a.opts.file, proper)
	case "none", "hang":
		return nil
	case "two-turns":
		second := turnText(heading(a.turn+1, name), a.body(a.turn+1, a.round), a.signer(a.round))
		return appendText(a.opts.file, proper+second)
	case "edit-briefing", "edit-turn":
		re := briefingRE
		if st.Behavior == "edit-turn" {
			re = firstTurnRE
		}
		b, err := os.ReadFile(a.opts.file)
		if err != nil {
			return err
		}
		edited, err := editSection(b, re)
		if err != nil {
			return fmt.Errorf("%s: %w", st.Behavior, err)
		}
		if err := os.WriteFile(a.opts.file, edited, 0o644); err != nil {
			return err
		}
		return appendText(a.opts.file, proper)
	case "wrong-heading":
		return appendText(a.opts.file, turnText(fmt.Sprintf("## Turn %d - %s", a.turn, name), a.body(a.turn, a.round), a.signer(a.round)))
	case "wrong-author":
		return appendText(a.opts.file, turnText(heading(a.turn, st.Author), a.body(a.turn, a.round), ""))
	case "not-logged-in":
		// What claude -p prints with an empty HOME, then its reset escapes.
		fmt.Fprint(out, "Not logged in · Please run /login\n\x1b[?25h\x1b[0m")
		return nil
	case "write":
		// Stands for an agent told to write a whole file (a distilled
		// briefing), not to append a turn.
		return os.WriteFile(a.opts.file, []byte(strings.TrimRight(a.body(a.turn, a.round), "\n")+"\n"), 0o644)
	case "verdict":
		return a.writeVerdict()
	case "grandchild":
		if err := appendText(a.opts.file, proper); err != nil {
			return err
		}
		out.Flush()
		return startGrandchild(st)
	}
	return fmt.Errorf("unknown behavior %q", st.Behavior)
}

func (a *agent) signer(round int) string {
	if a.step.Sign || (a.step.SignFrom > 0 && round >= a.step.SignFrom) {
		return a.opts.agent
	}
	return ""
}

// body picks the round's body and fills in its placeholders.
func (a *agent) body(turn, round int) string {
	if a.cmdBody != nil {
		return *a.cmdBody
	}
	b := a.step.Body
	if n := len(a.step.Bodies); n > 0 {
		b = a.step.Bodies[min(round, n)-1]
	}
	if b == "" {
		b = "{agent} here, round {round}. I read the briefing and every turn so far;\nmy position is unchanged and stated plainly."
	}
	return strings.NewReplacer("{agent}", a.opts.agent, "{turn}", strconv.Itoa(turn), "{round}", strconv.Itoa(round)).Replace(b)
}

func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// startGrandchild re-runs this program as a grandchild that shares the
// terminal and ignores SIGTERM and SIGHUP, like a language server or a
// daemonised helper an agent CLI leaves behind. It returns once the
// grandchild is ready, so the parent's exit always leaves it running.
func startGrandchild(st step) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ready, tell, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ready.Close()
	cmd := exec.Command(self, "--grandchild-mode")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{tell} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: st.GrandchildSetsid}
	err = cmd.Start()
	tell.Close()
	if err != nil {
		return fmt.Errorf("start grandchild: %w", err)
	}
	if st.PidFile != "" {
		if err := os.WriteFile(st.PidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
			return err
		}
	}
	// One byte once its signals are ignored; EOF if it died first.
	if _, err := ready.Read(make([]byte, 1)); err != nil {
		return fmt.Errorf("grandchild did not start: %w", err)
	}
	// Do not wait: the point is to leave it behind.
	return cmd.Process.Release()
}

// grandchild lingers with the terminal open and deaf to polite signals.
func grandchild(stdout io.Writer) int {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
	fmt.Fprintf(stdout, "grandchild %d lingering\n", os.Getpid())
	if tell := os.NewFile(3, "ready"); tell != nil {
		tell.Write([]byte{1})
		tell.Close()
	}
	hang()
	return 0
}
