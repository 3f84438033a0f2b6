package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
)

// fake is a Factory over buffers, as a test hands a command's run
// function: standard input from a string, standard output and error kept,
// no terminal anywhere, the built-in config unless a path is given, a log
// that keeps nothing and no registry of debates.
type fake struct {
	*Factory
	out, err *bytes.Buffer
}

func fakeFactory(stdin string) *fake {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	io := &IOStreams{In: strings.NewReader(stdin), Out: out, ErrOut: errOut, Color: "auto"}
	io.SetStdinTTY(false)
	io.SetStdoutTTY(false)
	io.SetStderrTTY(false)
	f := &Factory{IO: io,
		Config: func(path string) (*config.Config, error) {
			if path == "" {
				return config.Default(), nil
			}
			cfg, err := config.Load(path)
			return cfg, withCode(exitBadInput, err)
		},
		Logger:   func(string, bool) (*zap.Logger, error) { return zap.NewNop(), nil },
		Registry: func(*zap.Logger) string { return "" },
		Ledger:   func(*zap.Logger) string { return "" },
	}
	return &fake{Factory: f, out: out, err: errOut}
}

// parse builds the command cmd makes, runs it on args as walkie would
// (flags after the arguments and all), and returns the options its run
// function would have been given, without running it.
func parse[O any](t *testing.T, cmd func(*Factory, func(context.Context, *O) error) *cli.Command, args ...string) *O {
	t.Helper()
	f := fakeFactory("")
	var got *O
	c := cmd(f.Factory, func(_ context.Context, o *O) error {
		got = o
		return nil
	})
	app := &cli.App{Name: "walkie", Writer: io.Discard, ErrWriter: io.Discard, ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{colorFlag()}, Commands: []*cli.Command{c}}
	if err := app.Run(interspersed(app, append([]string{"walkie", c.Name}, args...))); err != nil {
		t.Fatalf("walkie %s %s: %v", c.Name, strings.Join(args, " "), err)
	}
	if got == nil {
		t.Fatalf("walkie %s %s did not reach its run function", c.Name, strings.Join(args, " "))
	}
	return got
}

// run calls a command's run function with f's streams in its options and
// returns what it printed on standard output and error, and its exit code.
func (f *fake) run(t *testing.T, run func() error) (stdout, stderr string, code int) {
	t.Helper()
	f.out.Reset()
	f.err.Reset()
	err := run()
	return f.out.String(), f.err.String(), exitCode(err)
}
