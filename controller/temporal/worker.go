package temporal

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/controller/temporal/blob"
	"github.com/walkie-sh/walkie/gitrepo"
)

// WorkerOptions configure `walkie worker`.
type WorkerOptions struct {
	Client client.Client
	// Agents are the configured agents this machine runs; one task queue
	// each (AgentQueue, with Queues' overrides).
	Agents []string
	Queues map[string]string
	// Config says how each agent runs here: command, environment, HOME,
	// screen rules, usage. Its limits map onto the queues (see slots):
	// per_agent_sessions (else max_sessions) is an agent's slots here,
	// per_agent_turns_per_hour its task queue's rate.
	Config *config.Config
	// Dir keeps each attempt's copy of the record while it runs and its
	// transcripts afterwards.
	Dir string
	// Repos are the worker's clones of the repositories of debates that
	// run in worktrees (--repo): a turn's worktree is made in the one
	// that shares its repository's first commit.
	Repos []string
	// Identity names the worker in Temporal and in the turn log.
	Identity string
	// Grace is how long running turns may go on after Run's context ends;
	// then their sessions are ended and the attempts reported interrupted.
	Grace time.Duration
	// Blobs is the home's blob store, as this machine reaches it (--blobs):
	// what is too large for a payload comes and goes through it.
	Blobs blob.Store
	// Version is this walkie's (walkie --version): a home of another is
	// refused.
	Version string
	Log     *zap.Logger
}

// DefaultWorkerGrace is how long running turns get after SIGTERM.
const DefaultWorkerGrace = 2 * time.Minute

// Worker runs turn activities for the agents of this machine.
type Worker struct {
	o        WorkerOptions
	log      *zap.Logger
	eng      *engine.Engine
	carry    *carrier
	repos    []*gitrepo.Repo
	identity string
	// stopping ends when Run's context does: a turn cancelled after that
	// was interrupted by the worker stopping, not halted.
	stopping context.Context
	// bundleMax, when set, replaces MaxBundleBytes (tests).
	bundleMax int64
}

// NewWorker checks the options: every agent must be configured here.
func NewWorker(o WorkerOptions) (*Worker, error) {
	if o.Client == nil {
		return nil, errors.New("temporal worker: no client")
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if err := CheckAgents(o.Config, o.Agents); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("temporal worker: no directory for attempts")
	}
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = fmt.Sprintf("walkie-worker@%s:%d", cmp.Or(host, "localhost"), os.Getpid())
	}
	o.Grace = cmp.Or(o.Grace, DefaultWorkerGrace)
	repos, err := openRepos(context.Background(), o.Repos)
	if err != nil {
		return nil, engine.BadInput(err)
	}
	if o.Blobs == nil {
		return nil, errors.New("temporal worker: no blob store (--blobs)")
	}
	carry, err := newCarrier(context.Background(), o.Blobs, o.Version)
	if err != nil {
		return nil, engine.BadInput(fmt.Errorf("--blobs %s: %w (give the home's --blob-token)", o.Blobs.Where(), err))
	}
	if _, err := carry.own(context.Background()); err != nil {
		o.Log.Warn("the home's blob store does not answer yet; each turn asks again", zap.String("blobs", o.Blobs.Where()), zap.Error(err))
	}
	return &Worker{o: o, log: o.Log.Named("worker"), eng: engine.New(o.Config, o.Log), carry: carry, repos: repos, identity: o.Identity}, nil
}

// CheckAgents refuses a worker's --agents unless each is configured:
// before it connects, so a typo is told at once.
func CheckAgents(cfg *config.Config, agents []string) error {
	if len(agents) == 0 {
		return engine.BadInput(errors.New("--agents: name at least one configured agent this machine runs (e.g. --agents claude,codex)"))
	}
	for _, a := range agents {
		if _, err := cfg.Agent(a); err != nil {
			return engine.BadInput(fmt.Errorf("--agents %s: %w", a, err))
		}
	}
	return nil
}

// Identity is the worker's name in Temporal and in the turn log.
func (w *Worker) Identity() string { return w.identity }

// Run polls each agent's task queue until ctx ends, then gives running
// turns the grace period.
func (w *Worker) Run(ctx context.Context) error {
	defer w.eng.Close()
	w.stopping = ctx
	if err := os.MkdirAll(w.o.Dir, 0o755); err != nil {
		return fmt.Errorf("worker directory: %w", err)
	}
	w.cleanStale()
	var started []worker.Worker
	defer func() {
		// All at once: each waits up to the grace for its running turns.
		var wg sync.WaitGroup
		for _, tw := range started {
			wg.Go(tw.Stop)
		}
		wg.Wait()
	}()
	for _, a := range w.o.Agents {
		tw := w.queueWorker(a)
		if err := tw.Start(); err != nil {
			return fmt.Errorf("poll %s: %w", AgentQueue(a, w.o.Queues), err)
		}
		started = append(started, tw)
	}
	<-ctx.Done()
	w.log.Info("stopping: no new turns; running turns get the grace period", zap.Duration("grace", w.o.Grace))
	return nil
}

// queueWorker is the SDK worker for one agent's task queue: its slots and
// its rate.
func (w *Worker) queueWorker(agent string) worker.Worker {
	opts := worker.Options{
		Identity:              w.identity,
		DisableWorkflowWorker: true,
		WorkerStopTimeout:     w.o.Grace,
		// A cancel (a halt) reaches a running turn with its next
		// heartbeat: send them often, not at most every 30 seconds.
		MaxHeartbeatThrottleInterval:     heartbeatEvery,
		DefaultHeartbeatThrottleInterval: heartbeatEvery,
	}
	slots := w.slots(agent)
	if slots > 0 {
		opts.MaxConcurrentActivityExecutionSize = slots
	}
	lim := w.o.Config.Limits
	if n := lim.PerAgentTurnsPerHour[agent]; n > 0 {
		// Temporal's rate is per second across every worker of the queue.
		opts.TaskQueueActivitiesPerSecond = float64(n) / 3600
	}
	q := AgentQueue(agent, w.o.Queues)
	tw := worker.New(w.o.Client, q, opts)
	tw.RegisterActivityWithOptions(w.Turn, activity.RegisterOptions{Name: ActTurn})
	tw.RegisterActivityWithOptions(w.File, activity.RegisterOptions{Name: ActFile})
	w.log.Info("polling", zap.String("agent", agent), zap.String("task_queue", q), zap.Int("slots", slots),
		zap.Int("turns_per_hour", lim.PerAgentTurnsPerHour[agent]))
	return tw
}

// slots is how many of agent's sessions this worker runs at once:
// per_agent_sessions, else max_sessions, else no limit (0). Temporal's
// slots belong to one task queue, so max_sessions caps each agent's
// sessions here, not their sum: a cap shared across queues would let one
// queue's idle poll hold the other's slot.
func (w *Worker) slots(agent string) int {
	lim := w.o.Config.Limits
	return cmp.Or(lim.PerAgentSessions[agent], lim.MaxSessions)
}

// cleanStale ends what the sessions of a worker that died left running
// (their process groups outlive it, and so may processes that left the
// group), removes their private HOME and TMPDIR, as local recovery does
// (session.Sweep), and their sandboxes, copies of the record and
// worktrees: the turns themselves were given to other workers by then.
func (w *Worker) cleanStale() {
	matches, _ := filepath.Glob(filepath.Join(w.o.Dir, "*", "*", sessionFile))
	for _, m := range matches {
		var n sessionNote
		if b, err := os.ReadFile(m); err == nil && json.Unmarshal(b, &n) == nil {
			if err := sweepStale(n); err != nil {
				w.log.Warn("cannot end a session left by an earlier worker", zap.Int("pid", n.Pid), zap.String("session", n.Session), zap.Error(err))
				continue
			}
			w.log.Warn("ended a session left by an earlier worker", zap.Int("pid", n.Pid), zap.String("session", n.Session), zap.String("attempt", filepath.Dir(m)))
		}
		_ = os.Remove(m)
		_ = os.RemoveAll(filepath.Join(filepath.Dir(m), "work"))
	}
	// Once their sessions are ended: nothing writes in them any more.
	w.cleanTrees(context.Background())
}

// DefaultWorkerDir is where a worker keeps attempts when --dir is not
// given: walkie/worker under the user's state directory.
func DefaultWorkerDir() string { return stateDir("worker") }

// stateDir is walkie/NAME under the user's state directory
// ($XDG_STATE_HOME, else ~/.local/state).
func stateDir(name string) string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "walkie", name)
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "walkie", name)
	}
	return filepath.Join(os.TempDir(), "walkie-"+name)
}

// ParseAgents reads --agents a,b,c.
func ParseAgents(specs []string) []string {
	var out []string
	for _, s := range specs {
		for _, a := range strings.Split(s, ",") {
			if a = strings.TrimSpace(a); a != "" {
				out = append(out, a)
			}
		}
	}
	return out
}
