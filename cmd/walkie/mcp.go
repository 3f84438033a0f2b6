package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/mcpserver"
	"github.com/walkie-sh/walkie/session"
)

func mcpCommand(f *Factory, runF func(context.Context, *mcpOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve walkie's operations to an MCP host (Claude Code, Codex, Gemini CLI, an editor) over stdio",
		Description: `A Model Context Protocol server on standard input and output, as a host starts
it; walkie skill install registers it with Claude Code, Codex and Gemini CLI.
Its tools are what a person does with a debate:

   start_debate       the walkie file and its briefing, drafted from the question
   approve_briefing   pin the briefing the person read, by its sha256
   run_debate         start walkie auto on it, as a process of its own
   list_debates       every debate here and in the machine's registry, with its standing
   get_standing       where a debate stands (what walkie status says)
   read_entries       the entries after a sequence number
   post               a person's turn, or a supervisor entry, through the enforced writer
   halt, resume, extend
   wait_for_turn      wait for the next entry, with progress notifications

and each debate's record is a resource (its file:// URI). A refusal reads
as the CLI's does. Inside a session walkie started (an agent's), the tools
that act as a person are refused. The log goes to standard error.

EXAMPLES:
   walkie skill install                            # registers walkie mcp with the hosts
   claude mcp add --scope user walkie -- walkie mcp  # the same, by hand`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "config file (default: ./walkie.yaml, then the user config dir)"},
			&cli.StringFlag{Name: "log-format", Value: "json", Usage: "the log on standard error: json or console"},
			verboseFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(exitBadInput, fmt.Errorf("mcp takes no arguments; see `walkie mcp --help`"))
			}
			return runWith(c.Context, runF, mcpRun, &mcpOptions{IO: f.IO, Config: f.Config, Logger: f.Logger, Registry: f.Registry,
				ConfigPath: c.String("config"), LogFormat: c.String("log-format"), Verbose: c.Bool("verbose")})
		},
	}
}

// mcpOptions are walkie mcp's.
type mcpOptions struct {
	IO       *IOStreams
	Config   func(path string) (*config.Config, error)
	Logger   func(format string, verbose bool) (*zap.Logger, error)
	Registry func(log *zap.Logger) string

	ConfigPath string
	LogFormat  string
	Verbose    bool
}

func mcpRun(ctx context.Context, o *mcpOptions) error {
	log, cfg, err := loggerAndConfig(o.Logger, o.Config, o.LogFormat, o.Verbose, o.ConfigPath)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("mcp: find walkie's own binary: %w", err)
	}
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	// The same test of "inside a session" as the person-only commands'
	// (an ancestor counts, not only the variable an agent can unset).
	inSession, why := session.Inside()
	return mcpserver.Serve(ctx, mcpserver.Options{Dir: dir, Config: cfg, ConfigPath: cfg.Path, Registry: o.Registry(log), Exe: exe,
		InSession: inSession, SessionWhy: why, Version: readBuildVersion().Version, Log: log}, o.IO.In, o.IO.Out)
}
