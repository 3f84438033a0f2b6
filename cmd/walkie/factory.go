package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/ledger"
	"github.com/walkie-sh/walkie/walkie"
)

// Factory is what every command is built with, as gh's is: the IO
// streams, and the config and the log, made only when a command asks for
// them. A command's urfave part copies what its run function needs into
// the command's options; a test gives the run function fakes instead.
type Factory struct {
	IO *IOStreams
	// Config reads the config file at path ("": ./walkie.yaml, then the
	// user config dir, else the built-in presets), once per path; a bad
	// one is bad input.
	Config func(path string) (*config.Config, error)
	// Logger is the log on standard error as --log-format (auto, console
	// or json) and --verbose ask; a format it does not know is bad input.
	Logger func(format string, verbose bool) (*zap.Logger, error)
	// Registry is the machine's registry of debates, where a run notes
	// itself for walkie serve's fleet page; "" for none.
	Registry func(log *zap.Logger) string
	// Ledger is the machine's ledger of per-agent limits, which every
	// form of the controller counts its sessions in; "" keeps a run's
	// counts to itself.
	Ledger func(log *zap.Logger) string
}

// newFactory is the factory of the process's own streams.
func newFactory(stdin io.Reader, stdout, stderr io.Writer) *Factory {
	f := &Factory{IO: systemIO(stdin, stdout, stderr), Registry: registryDir, Ledger: ledgerPath}
	f.Config = configLoader()
	f.Logger = func(format string, verbose bool) (*zap.Logger, error) {
		log, err := newLogger(f.IO.ErrOut, format, verbose, f.IO.IsStderrTTY())
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		return log, nil
	}
	return f
}

// configLoader reads each config file once: the one place walkie reads
// a --config.
func configLoader() func(path string) (*config.Config, error) {
	var mu sync.Mutex
	loaded := map[string]*config.Config{}
	return func(path string) (*config.Config, error) {
		mu.Lock()
		defer mu.Unlock()
		if cfg, ok := loaded[path]; ok {
			return cfg, nil
		}
		cfg, err := config.Load(path)
		if err != nil {
			return nil, withCode(exitBadInput, err)
		}
		loaded[path] = cfg
		return cfg, nil
	}
}

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

// registryDir is the machine's registry of debates (docs/operations.md);
// "" when the user has no state directory, which costs only the listing.
func registryDir(log *zap.Logger) string {
	dir, err := walkie.DefaultRegistry()
	if err != nil {
		log.Debug("no registry of debates; walkie serve's page will not list this run", zap.Error(err))
		return ""
	}
	return dir
}

// ledgerPath is the machine's ledger of limits (docs/operations.md,
// "Limits"); "" when the user has no state directory, and then each run
// counts only its own sessions, which the log says.
func ledgerPath(log *zap.Logger) string {
	path, err := ledger.DefaultPath()
	if err != nil {
		log.Warn("no ledger of limits: this run counts only its own sessions against the per-agent limits", zap.Error(err))
		return ""
	}
	return path
}

// newLimiter is a run's limiter over the machine's ledger at path
// (usableLedger): the slots its sessions take under cfg's limits, logged
// when a limit holds one back.
func newLimiter(cfg *config.Config, path string, log *zap.Logger) (*ledger.Limiter, error) {
	path, err := usableLedger(cfg, path, log)
	if err != nil {
		return nil, err
	}
	return ledger.NewLimiter(cfg.Limits, 0, ledger.Open(path), func(h ledger.Held) {
		log.Warn("held by a limit", zap.String("agent", h.Agent), zap.String("limit", h.Limit), zap.Time("until", h.Until), zap.String("why", h.Why))
	}), nil
}

// usableLedger is path, when this process can count in the ledger there.
// One it cannot use is an error when cfg sets a per-agent limit; without
// one the run counts its sessions to itself ("", in memory), and says so.
func usableLedger(cfg *config.Config, path string, log *zap.Logger) (string, error) {
	if path == "" {
		return "", nil
	}
	err := ledger.Open(path).Check()
	switch {
	case err == nil:
		return path, nil
	case cfg.Limits.PerAgent():
		return "", fmt.Errorf("%w (the config sets per-agent limits, which every walkie of the machine counts there)", err)
	}
	log.Warn("the ledger of limits cannot be used; this run's sessions are not counted for other walkies' limits", zap.Error(err))
	return "", nil
}

// runWith calls a test's runF when it is set, else the command's own run:
// the last step of every command's urfave part (cli/cli's NewCmd… shape).
func runWith[O any](ctx context.Context, runF, run func(context.Context, *O) error, opts *O) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}

// Standing reads where a debate stands (controller.ReadStanding) under
// the config at configPath: the one picture status, show, follow and
// resume print. A config that cannot be read leaves the built-in
// presets, said on standard error: a reader still shows the debate.
func (f *Factory) Standing(configPath string) func(*walkie.Doc) (controller.Standing, error) {
	return func(d *walkie.Doc) (controller.Standing, error) {
		cfg, err := f.Config(configPath)
		if err != nil {
			fmt.Fprintf(f.IO.ErrOut, "walkie: %v; where the debate stands is read with the built-in presets\n", err)
			cfg = config.Default()
		}
		return controller.ReadStanding(d, controller.StandingOptions{Config: cfg, Registry: f.Registry(zap.NewNop())})
	}
}
