package main

import "github.com/urfave/cli/v2"

func skillCommand() *cli.Command {
	return &cli.Command{Name: "skill", Usage: "install the walkie skill for Claude Code or Codex"}
}
