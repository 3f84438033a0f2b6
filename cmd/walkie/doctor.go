package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/doctor"
	"github.com/walkie-sh/walkie/walkie"
)

func doctorCommand(f *Factory, runF func(context.Context, *doctorOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "check that each agent can run: binary, version, login, config",
		ArgsUsage: "[FILE]",
		Description: `For each agent: whether its binary is found, its version, whether it appears
logged in (judged from its environment and credential files; no model call,
no tokens spent), and any configuration problem. With FILE, the agents that
play its participants are the ones in use (a participant that is neither an
agent nor a declared person is refused, exit 2, with the name most likely
meant); without, the agents your config
defines and the built-in presets. A preset whose CLI is not installed says
how to install it. Exits 1 when an agent in use cannot run, or, without
FILE, when no agent at all can. Then the sandbox: which mechanism this
system has (Landlock and its ABI, or Seatbelt), what of walkie's boundary
it lacks, what each role's sessions reach, and the agents whose level in
a role is not auto.

EXAMPLES:
   walkie doctor
   walkie doctor api.walkie.md --agents claude,codex
   walkie doctor --config ci.yaml --json`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"},
			&cli.StringSliceFlag{Name: "agents", Usage: "as for walkie auto: agents that play the participants"},
		}, jsonFlags(doctor.AgentCheck{})...),
		Action: func(c *cli.Context) error {
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, doctorRun, &doctorOptions{IO: f.IO, Config: f.Config, ConfigPath: c.String("config"),
				Files: c.Args().Slice(), Agents: c.StringSlice("agents"), JSON: exp})
		},
	}
}

// doctorOptions are walkie doctor's.
type doctorOptions struct {
	IO     *IOStreams
	Config func(path string) (*config.Config, error)

	ConfigPath string
	Files      []string // the FILE whose participants are the agents in use, if any
	Agents     []string
	JSON       *jsonExporter
}

func doctorRun(ctx context.Context, o *doctorOptions) error {
	cfg, err := o.Config(o.ConfigPath)
	if err != nil {
		return err
	}
	names, inUse, err := doctorAgents(o, cfg)
	if err != nil {
		return err
	}
	checks := doctor.Check(ctx, cfg, names, inUse)
	if o.JSON != nil {
		if err := o.JSON.Write(o.IO.Out, checks); err != nil {
			return err
		}
	} else {
		_ = writeClean(o.IO.Out, func(w io.Writer) error {
			printChecks(w, checks)
			printSandbox(w, checks)
			return nil
		})
	}
	usable := 0
	for _, ck := range checks {
		if ck.InUse && !ck.CanRun() {
			return withCode(exitError, fmt.Errorf("agent %s cannot run: %s", ck.Name, strings.Join(ck.Problems, "; ")))
		}
		if ck.CanRun() {
			usable++
		}
	}
	if usable == 0 {
		return withCode(exitError, errors.New(noAgentCanRun(checks)))
	}
	return nil
}

// noAgentCanRun says why no agent can take a turn, with the fix that
// applies: how to log in to a CLI that is installed, else how to install
// one.
func noAgentCanRun(checks []doctor.AgentCheck) string {
	var logins []string
	for _, ck := range checks {
		if hint := loginHint(ck); hint != "" {
			logins = append(logins, ck.Name+": "+hint)
		}
	}
	if len(logins) > 0 {
		return "no agent can run: installed, but not logged in: " + strings.Join(logins, "; ")
	}
	return "no agent can run: install one of the CLIs above (npm install -g @anthropic-ai/claude-code, @openai/codex or @google/gemini-cli), or configure a command of your own in walkie.yaml"
}

// loginHints say how to log in to each preset's CLI for walkie: a key in
// the environment, or the CLI's own login, which a session sees only with
// the user's HOME.
var loginHints = map[string][2]string{
	"claude": {"ANTHROPIC_API_KEY", "`claude`, then /login"},
	"codex":  {"OPENAI_API_KEY", "`codex login`"},
	"gemini": {"GEMINI_API_KEY", "`gemini` once"},
}

// loginHint is how to log in to the preset's CLI of an agent whose binary
// is there but that does not appear logged in; "" for any other.
func loginHint(ck doctor.AgentCheck) string {
	h, ok := loginHints[ck.Preset]
	if !ok || ck.Binary == "" || ck.LoggedIn != "no" {
		return ""
	}
	hint := fmt.Sprintf("set %s, or log in with %s", h[0], h[1])
	for _, p := range ck.Problems {
		if strings.Contains(p, "private HOME") {
			// Said by doctor: a login of the user's is not seen.
			return hint + " and give the agent home: inherit in walkie.yaml (its sessions get a private HOME otherwise)"
		}
	}
	return hint
}

// doctorAgents decides which agents to check and which are in use.
func doctorAgents(o *doctorOptions, cfg *config.Config) ([]string, map[string]bool, error) {
	inUse := map[string]bool{}
	if len(o.Files) == 1 {
		file := o.Files[0]
		meta, err := walkie.ReadMeta(file)
		if err != nil {
			return nil, nil, err
		}
		cast, err := castFlag(file, &meta, o.Agents)
		if err != nil {
			return nil, nil, withCode(exitBadInput, err)
		}
		if err := controller.CheckParticipants(file, &meta, cfg, cast); err != nil {
			return nil, nil, withCode(exitBadInput, err)
		}
		for _, p := range meta.Participants {
			if meta.IsPerson(p) || cfg.IsPerson(p) {
				continue // a person: no agent to check
			}
			name := p
			if n, ok := cast[p]; ok {
				name = n
			}
			inUse[name] = true
		}
	} else if len(o.Files) > 1 {
		return nil, nil, withCode(exitBadInput, fmt.Errorf("doctor takes at most one FILE"))
	} else {
		for _, n := range cfg.AgentNames() {
			if !config.IsPreset(n) {
				inUse[n] = true
			}
		}
	}
	names := cfg.AgentNames()
	for n := range inUse {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, inUse, nil
}

// installHints say how to install each preset's CLI (scripts/install-clis.sh
// pins the versions the tests use).
var installHints = map[string]string{
	"claude": "npm install -g @anthropic-ai/claude-code",
	"codex":  "npm install -g @openai/codex",
	"gemini": "npm install -g @google/gemini-cli",
}

func printChecks(w io.Writer, checks []doctor.AgentCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tIN USE\tBINARY\tVERSION\tLOGGED IN\tSTATUS")
	for _, ck := range checks {
		status := "ok"
		if hint, ok := installHints[ck.Preset]; ok && ck.Binary == "" && !ck.CanRun() {
			status = "not installed: " + hint
		} else if hint := loginHint(ck); hint != "" && len(ck.Problems) == 1 {
			status = "not logged in: " + hint
		} else if !ck.CanRun() {
			status = "cannot run: " + strings.Join(ck.Problems, "; ")
		} else if len(ck.Notes) > 0 {
			status = "ok (" + strings.Join(ck.Notes, "; ") + ")"
		}
		use := ""
		if ck.InUse {
			use = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ck.Name, use, orDash(ck.Binary), orDash(ck.Version), ck.LoggedIn, status)
	}
	tw.Flush()
}

// printSandbox says what boundary the agents' sessions get here.
func printSandbox(w io.Writer, checks []doctor.AgentCheck) {
	var sup *doctor.AgentSandbox
	for _, ck := range checks {
		if ck.Sandbox != nil {
			sup = ck.Sandbox
			break
		}
	}
	if sup == nil {
		return
	}
	switch {
	case sup.Kind == "landlock" && len(sup.Missing) == 0:
		fmt.Fprintf(w, "\nsandbox: Landlock ABI %d, all of walkie's boundary\n", sup.ABI)
	case sup.Kind == "landlock":
		fmt.Fprintf(w, "\nsandbox: Landlock ABI %d, without:\n", sup.ABI)
	case sup.Kind == "seatbelt":
		fmt.Fprintln(w, "\nsandbox: Seatbelt (sandbox-exec)")
	default:
		fmt.Fprintln(w, "\nsandbox: none on this system")
	}
	for _, m := range sup.Missing {
		fmt.Fprintf(w, "  - %s\n", m)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range doctor.Reaches {
		fmt.Fprintf(tw, "  %s\t%s\n", r.Role, r.Reaches)
	}
	fmt.Fprintf(tw, "  every role\t%s\n", doctor.EveryRole())
	tw.Flush()
	for _, ck := range checks {
		var odd []string
		for _, r := range doctor.Reaches {
			if ck.Sandbox == nil {
				break
			}
			if lv := ck.Sandbox.Levels[r.Role]; lv != config.SandboxAuto {
				odd = append(odd, r.Role+" "+lv)
			}
		}
		if len(odd) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", ck.Name, strings.Join(odd, ", "))
		}
	}
}
