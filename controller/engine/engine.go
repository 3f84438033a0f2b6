package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/credproxy"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// ErrBadInput marks errors in a debate or its configuration that no retry
// can fix: the record does not verify, an agent is not configured, its
// command cannot start.
var ErrBadInput = errors.New("bad input")

// BadInput marks err as bad input.
func BadInput(err error) error { return fmt.Errorf("%w: %w", ErrBadInput, err) }

// Engine runs jobs. One engine serves a controller run, or a daemon, and
// holds the file watcher its jobs share; Close releases it.
type Engine struct {
	cfg *config.Config
	log *zap.Logger

	mu   sync.Mutex
	hub  *hub // made on first use
	vers versions
	// said holds what the run was told once of its sandboxes (saySandbox).
	said map[string]bool
	// keys is the credential proxy, started for the first session whose
	// keys it holds (keys.go).
	keys *credproxy.Proxy
}

// New returns an engine that prices usage with cfg and logs to log.
func New(cfg *config.Config, log *zap.Logger) *Engine {
	if cfg == nil {
		cfg = config.Default()
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Engine{cfg: cfg, log: log}
}

// Close stops the file watcher. Jobs must have returned.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hub != nil {
		e.hub.close()
		e.hub = nil
	}
	if e.keys != nil {
		e.keys.Close()
		e.keys = nil
	}
}

// Config is the configuration the engine was made with.
func (e *Engine) Config() *config.Config { return e.cfg }

func (e *Engine) watcher() (*hub, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hub == nil {
		h, err := newHub(e.log)
		if err != nil {
			return nil, err
		}
		e.hub = h
	}
	return e.hub, nil
}

// Result is how a job's session went.
type Result struct {
	session.Result
	// Stop is who stopped the session before it ended by itself or had
	// its result: OutcomeHalted (walkie halt), OutcomeInterrupted (the
	// context ended), or "" otherwise. Whatever it wrote is void then.
	Stop  walkie.Outcome
	Usage *Usage // nil when the agent reports none
	// Said is what the CLI's own output says of how it went, in one line
	// (refused tool calls, its error, its last message; see usage.Why),
	// "" when it said nothing of use or has no known output format.
	Said       string
	Provenance Provenance
	// Worker is the remote worker that ran the session ("" for this
	// machine), kept in the attempt's record.
	Worker string
}

// Run runs j's session to its end. The session outlives ctx on purpose:
// when ctx ends the engine ends the session itself and says so in Stop, so
// the attempt is recorded as interrupted rather than lost. An error means
// no session ran (bad input, wrapping ErrBadInput, when no retry can help).
func (e *Engine) Run(ctx context.Context, j Job) (Result, error) {
	gate := &startGate{out: j.Output}
	if j.Output != nil {
		j.Output = gate.line
	}
	spec, err := e.Spec(j)
	if err != nil {
		return Result{}, err
	}
	proxied, release, err := e.guardKeys(j, &spec)
	if err != nil {
		return Result{}, BadInput(fmt.Errorf("agent %s: %w", j.Agent.Name, err))
	}
	defer release()
	h, err := e.watcher()
	if err != nil {
		return Result{}, err
	}
	// Subscribed before the start: a result written at once is not missed.
	sub, err := h.subscribe(j.Result, j.Control)
	if err != nil {
		return Result{}, err
	}
	defer h.unsubscribe(sub)
	t := newTap(j.Agent.Usage)
	if own := spec.Observer; own != nil {
		spec.Observer = func(chunk []byte) { t.observe(chunk); own(chunk) }
	} else {
		spec.Observer = t.observe
	}
	// Asked beside the session, not before it: a CLI's start-up costs
	// seconds, and the answer is wanted only for the record.
	version := func() string { return "" }
	if j.Argv == nil {
		version = e.version(ctx, j.Agent, spec.Argv[0])
	}
	s, err := session.Start(context.WithoutCancel(ctx), spec)
	if err != nil {
		version()
		return Result{}, e.startError(j, err)
	}
	if j.Started != nil {
		j.Started(s)
	}
	if j.Output != nil {
		gate.opened()
	}
	res, stop := e.supervise(ctx, s, j, sub, t)
	e.saySandbox(j, res.Sandbox)
	u, model, why := e.readOutput(j.Agent, res.TextPath)
	return Result{Result: res, Stop: stop, Usage: u, Said: why.String(), Provenance: Provenance{
		Argv:         RecordedArgv(spec.Argv, j.Vars.Prompt, secretValues(spec.Env)),
		PromptSHA256: PromptHash(j.Vars.Prompt),
		PromptBytes:  len(j.Vars.Prompt),
		CLIVersion:   version(),
		Model:        cmp.Or(j.Agent.Model, model),
		Effort:       j.Agent.Effort,
		KeysProxied:  proxied,
	}}, nil
}

// saySandbox logs, once per run each, what a session's sandbox could not
// enforce here and what it left out; every attempt's record has it all.
func (e *Engine) saySandbox(j Job, rep *session.SandboxReport) {
	if rep == nil {
		return
	}
	for _, m := range rep.Missing {
		e.sayOnce(m, "sandbox: "+m)
	}
	for _, l := range rep.Left {
		e.sayOnce(j.Agent.Name+"\x00"+l, "sandbox: "+l, zap.String("agent", j.Agent.Name), zap.String("role", cmp.Or(j.Role, config.RoleDebater)))
	}
}

// sayOnce logs msg as a warning the first time key comes up in this run.
func (e *Engine) sayOnce(key, msg string, fields ...zap.Field) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.said == nil {
		e.said = map[string]bool{}
	}
	if !e.said[key] {
		e.said[key] = true
		e.log.Warn(msg, fields...)
	}
}

// startError explains a session that could not start. A command that is
// missing or cannot run, or a working directory that is not there, is the
// configuration's fault: no retry will fix it; nor is a sandbox that is
// required and cannot be had.
func (e *Engine) startError(j Job, err error) error {
	if errors.Is(err, session.ErrNoSandbox) {
		at := e.cfg.SandboxFor(j.Agent, cmp.Or(j.Role, config.RoleDebater))
		return BadInput(fmt.Errorf("%s: required, and %s cannot start: %w (fix: set it to auto to run without the whole boundary, or run where Landlock ABI 6 or later is enabled, Linux 6.7 and later; walkie doctor says what is missing)",
			at.Where(), j.Agent.Name, err))
	}
	err = fmt.Errorf("start %s: %w", j.Agent.Name, err)
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, session.ErrHomeEscape) {
		where := "its command:"
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, fs.ErrNotExist) && !errors.Is(err, exec.ErrNotFound) && j.Argv == nil {
			where = "its command: or dir:"
		}
		// Under the built-in presets no file was read: the fix is to
		// install the CLI, or to write a config, not to edit one.
		in := "in a " + config.FileName
		if e.cfg.Path != "" {
			in = "in " + e.cfg.Path
		}
		err = fmt.Errorf("%w (install the CLI, or set %s under agents.%s %s; walkie doctor checks)", err, where, j.Agent.Name, in)
		if errors.Is(err, exec.ErrNotFound) && j.Argv == nil && len(j.Agent.Command) > 0 {
			err = &MissingCommandError{Agent: j.Agent.Name, Command: j.Agent.Command[0], Config: e.cfg.Path, Err: err}
		}
		return BadInput(err)
	}
	return err
}

// MissingCommandError is an agent whose command is not on the session's
// PATH: its CLI is not installed here, or the config names it wrongly.
// It says so in full; a caller with a better fix for its own setting
// (walkie review, in CI) reads the fields.
type MissingCommandError struct {
	Agent   string
	Command string // the agent's command, as configured
	Config  string // the config file that defines the agents; "" for the built-in presets
	Err     error
}

func (e *MissingCommandError) Error() string { return e.Err.Error() }
func (e *MissingCommandError) Unwrap() error { return e.Err }

// supervise waits for s to end, ending it on a halt, when ctx ends, or
// once the result is in and both the file and the output have been quiet
// for the agent's grace. A CLI that streams the events of its usage format
// must have printed its final event first: until then it is still at work
// (its model writing a closing message, however slowly), and ending it
// would lose the usage and cost that event carries. The stall window and
// the timeout still bound that wait. It returns who stopped the session
// ("" when nobody did).
func (e *Engine) supervise(ctx context.Context, s *session.Session, j Job, sub *subscription, t *tap) (session.Result, walkie.Outcome) {
	done := make(chan session.Result, 1)
	go func() { done <- s.Wait() }()
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	defer quiet.Stop()
	var stop walkie.Outcome
	halt := func() {
		if stop == "" && j.Halted != nil && j.Halted() {
			stop = walkie.OutcomeHalted
			s.End("halted by a person")
		}
	}
	// A halt that came between the caller's last look and the subscription
	// left no event.
	halt()
	// Done once cancelled, and a closed channel is always ready: it is
	// taken out of the select after the first time, or the loop would spin
	// for as long as the session takes to end.
	cancelled := ctx.Done()
	final := t.final // likewise, once it fired
	for {
		select {
		case res := <-done:
			return res, stop
		case <-sub.notify:
			for _, p := range sub.take() {
				switch p {
				case j.Result:
					// Progress for the stall window, and the quiet period
					// starts again: the result is judged once it is still,
					// not on every write.
					s.Progress()
					if stop == "" {
						quiet.Reset(j.Agent.Grace)
					}
				case j.Control:
					halt()
				}
			}
		case <-final:
			// The CLI is done; a result already in need only be quiet.
			final = nil
			if stop == "" {
				quiet.Reset(j.Agent.Grace)
			}
		case <-quiet.C:
			if stop != "" || j.Ready == nil {
				continue
			}
			if wait := t.quietFor(j.Agent.Grace); wait > 0 {
				quiet.Reset(wait) // it printed meanwhile
				continue
			}
			if !t.awaitingFinal() && j.Ready() {
				s.End(j.Done)
			}
		case <-cancelled:
			cancelled = nil
			if stop == "" {
				stop = walkie.OutcomeInterrupted
				s.End("the controller was interrupted")
			}
		}
	}
}
