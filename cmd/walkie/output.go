package main

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
)

// runOutput is how a controller run shows itself on standard error: the
// live display on a terminal, readable progress lines elsewhere (a pipe,
// a CI log), or log lines when --log-format or --verbose ask for them.
type runOutput struct {
	log     *zap.Logger
	observe func(controller.Event) // nil when the log speaks alone
	stop    func()                 // ends the display; safe to call twice
	disp    *term.Display          // the live display, on a terminal
}

// newRunOutput is a run's output as --log-format and --verbose ask.
func newRunOutput(streams *IOStreams, logger func(format string, verbose bool) (*zap.Logger, error), format string, verbose bool) (*runOutput, error) {
	stderr := streams.ErrOut
	if format != "auto" || verbose {
		log, err := logger(format, verbose)
		if err != nil {
			return nil, err
		}
		return &runOutput{log: log, stop: func() {}}, nil
	}
	pal := streams.ErrPalette()
	if streams.IsStderrTTY() {
		d := term.NewDisplay(stderr, pal)
		// Warnings and errors still show, as lines above the live ones.
		return &runOutput{log: consoleLogger(d, zap.WarnLevel), observe: d.Observe, stop: d.Stop, disp: d}, nil
	}
	p := term.NewProgress(stderr, pal)
	return &runOutput{log: consoleLogger(p, zap.WarnLevel), observe: p.Observe, stop: func() {}}, nil
}

// logFormatFlag and verboseFlag are how a command that logs as the
// daemon does lets its log be chosen; the factory's Logger builds that
// log.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (human on a terminal, JSON otherwise), console or json"}
}

func verboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"}
}

// loggerAndConfig is what serve, watch and worker start with: the log
// their --log-format and --verbose ask for, and the config their --config
// names. The caller syncs the logger when it is done.
func loggerAndConfig(logger func(string, bool) (*zap.Logger, error), loadConfig func(string) (*config.Config, error),
	format string, verbose bool, path string) (*zap.Logger, *config.Config, error) {
	log, err := logger(format, verbose)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := loadConfig(path)
	if err != nil {
		_ = log.Sync()
		return nil, nil, err
	}
	return log, cfg, nil
}

// writeClean writes to w what write prints, every control character in it
// made visible (term.Clean, as an entry's text is): for the output that
// has no colour of walkie's own, and whose text may have come from
// outside (a reason, a note, a model name, a CLI's detail, a file or an
// agent's name). JSON needs none of it: its encoder escapes them.
func writeClean(w io.Writer, write func(io.Writer) error) error {
	var b strings.Builder
	err := write(&b)
	if _, werr := io.WriteString(w, term.Clean(b.String())); err == nil {
		err = werr
	}
	return err
}

// writeJSON prints v as indented JSON, as every --json but log's and
// read's does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
