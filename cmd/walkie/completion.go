package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// completeFlag is what a shell's completion function adds at the end of
// the words typed so far to ask walkie what may follow (urfave/cli's
// bash completion).
const completeFlag = "--generate-bash-completion"

func completionCommand(f *Factory, runF func(context.Context, *completionOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Prints a script that makes the shell complete walkie's commands, subcommands
and flags (and file names where a command takes a FILE). The script asks
walkie itself what may follow the words typed so far, so it never goes
stale when walkie is upgraded.

EXAMPLES:
   source <(walkie completion bash)                                  # this shell
   walkie completion bash > ~/.local/share/bash-completion/completions/walkie
   walkie completion zsh > "${fpath[1]}/_walkie"                      # then compinit
   walkie completion fish > ~/.config/fish/completions/walkie.fish`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitBadInput, fmt.Errorf("completion needs the shell: bash, zsh or fish (got %s); see `walkie completion --help`", argCount(c.NArg())))
			}
			return runWith(c.Context, runF, completionRun, &completionOptions{Out: f.IO.Out, Shell: c.Args().First(), App: c.App})
		},
	}
}

// completionOptions are walkie completion's.
type completionOptions struct {
	Out   io.Writer
	Shell string
	App   *cli.App // for fish's script, which urfave/cli writes whole
}

func completionRun(_ context.Context, o *completionOptions) error {
	switch o.Shell {
	case "bash":
		_, err := io.WriteString(o.Out, bashCompletion)
		return err
	case "zsh":
		_, err := io.WriteString(o.Out, zshCompletion)
		return err
	case "fish":
		s, err := o.App.ToFishCompletion()
		if err != nil {
			return fmt.Errorf("fish completion: %w", err)
		}
		_, err = io.WriteString(o.Out, s)
		return err
	}
	return withCode(exitBadInput, fmt.Errorf("completion: %q is not a shell walkie completes: use bash, zsh or fish", o.Shell))
}

// bashCompletion asks walkie for the words that may follow, and falls
// back to file names when it has none (a FILE argument).
const bashCompletion = `# bash completion for walkie (walkie completion bash)
_walkie_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" words
  local IFS=$'\n'
  if [[ "$cur" == -* ]]; then
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" "$cur" ` + completeFlag + ` 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" ` + completeFlag + ` 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -o bashdefault -F _walkie_complete walkie
`

// zshCompletion does the same with zsh's completion system; walkie
// describes each word ("name:usage") when _CLI_ZSH_AUTOCOMPLETE_HACK is
// set, as urfave/cli does for zsh.
const zshCompletion = `#compdef walkie
# zsh completion for walkie (walkie completion zsh)
_walkie() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(_CLI_ZSH_AUTOCOMPLETE_HACK=1 ${words[@]:0:CURRENT-1} "$cur" ` + completeFlag + ` 2>/dev/null)}")
  else
    opts=("${(@f)$(_CLI_ZSH_AUTOCOMPLETE_HACK=1 ${words[@]:0:CURRENT-1} ` + completeFlag + ` 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    _describe 'walkie' opts
  else
    _files
  fi
}
compdef _walkie walkie
`

// completeFlags prints the flags of the command the words name that start
// with partial, one a line. urfave/cli v2 would parse partial as a flag
// of its own, and fail on it.
func completeFlags(app *cli.App, words []string, partial string, w io.Writer) {
	flags, cmds := app.Flags, app.Commands
	for _, word := range words {
		if c := findCommand(cmds, word); c != nil && !isFlag(word) {
			flags, cmds = append(slices.Clone(c.Flags), app.Flags...), c.Subcommands
		}
	}
	for _, name := range flagNames(flags) {
		if strings.HasPrefix(name, partial) && name != completeFlag {
			fmt.Fprintln(w, name)
		}
	}
}
