package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
)

// newLogger builds the zap logger: human-readable on a terminal, JSON
// otherwise, unless --log-format says which.
func newLogger(w io.Writer, format string, verbose, tty bool) (*zap.Logger, error) {
	level := zap.InfoLevel
	if verbose {
		level = zap.DebugLevel
	}
	switch format {
	case "json":
		return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(encoderConfig()), zapcore.AddSync(w), level)), nil
	case "console":
		return consoleLogger(w, level), nil
	case "auto", "":
		if tty {
			return consoleLogger(w, level), nil
		}
		return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(encoderConfig()), zapcore.AddSync(w), level)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use auto, console or json", format)
}

func encoderConfig() zapcore.EncoderConfig {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey, cfg.EncodeTime = "ts", zapcore.ISO8601TimeEncoder
	return cfg
}

func consoleLogger(w io.Writer, level zapcore.Level) *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(encoderConfig()), zapcore.AddSync(w), level))
}

// runOutput is how a controller run shows itself on standard error: the
// live display on a terminal, readable progress lines elsewhere (a pipe,
// a CI log), or log lines when --log-format or --verbose ask for them.
type runOutput struct {
	log     *zap.Logger
	observe func(controller.Event) // nil when the log speaks alone
	stop    func()                 // ends the display; safe to call twice
	disp    *term.Display          // the live display, on a terminal
}

func newRunOutput(c *cli.Context) (*runOutput, error) {
	stderr := c.App.ErrWriter
	tty := term.IsTerminal(stderr)
	format := c.String("log-format")
	if format != "auto" || c.Bool("verbose") {
		log, err := newLogger(stderr, format, c.Bool("verbose"), tty)
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		return &runOutput{log: log, stop: func() {}}, nil
	}
	pal := colorFor(c, stderr)
	if tty {
		d := term.NewDisplay(stderr, pal)
		// Warnings and errors still show, as lines above the live ones.
		return &runOutput{log: consoleLogger(d, zap.WarnLevel), observe: d.Observe, stop: d.Stop, disp: d}, nil
	}
	p := term.NewProgress(stderr, pal)
	return &runOutput{log: consoleLogger(p, zap.WarnLevel), observe: p.Observe, stop: func() {}}, nil
}

// logFormatFlag and verboseFlag are how a command that logs as the
// daemon does lets its log be chosen; commandLogger builds that log.
func logFormatFlag() cli.Flag {
	return &cli.StringFlag{Name: "log-format", Value: "auto", Usage: "auto (human on a terminal, JSON otherwise), console or json"}
}

func verboseFlag() cli.Flag {
	return &cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug logging"}
}

// commandLogger is newLogger as --log-format and --verbose ask, on the
// command's standard error; a --log-format it does not know is bad input.
func commandLogger(c *cli.Context) (*zap.Logger, error) {
	stderr := c.App.ErrWriter
	log, err := newLogger(stderr, c.String("log-format"), c.Bool("verbose"), term.IsTerminal(stderr))
	if err != nil {
		return nil, withCode(exitBadInput, err)
	}
	return log, nil
}

// commandLoggerAndConfig is what serve, watch and worker start with: the
// logger of commandLogger and the config their --config names. The
// caller syncs the logger when it is done.
func commandLoggerAndConfig(c *cli.Context) (*zap.Logger, *config.Config, error) {
	log, err := commandLogger(c)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Load(c.String("config"))
	if err != nil {
		_ = log.Sync()
		return nil, nil, withCode(exitBadInput, err)
	}
	return log, cfg, nil
}
