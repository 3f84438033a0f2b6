// Package daemon is `walkie serve`: one long-running process that runs
// every open debate under a directory, each turn a fresh agent session,
// under global and per-agent concurrency limits and a per-agent rate
// limit, woken by file events rather than polling. It serves status,
// metrics and a live page over HTTP on loopback, reloads its config on
// SIGHUP, and on SIGTERM lets running turns finish within a grace period.
//
// Each debate has a worker that is level-based like the controller: it
// reads the record and the state, and either runs the next turn with
// controller.Run (one turn, with its retries) or sleeps until a file or
// state event. A daemon killed at any point is simply started again:
// the controller recovers an interrupted attempt, and no turn is lost or
// run twice.
package daemon

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/fleet"
	"github.com/walkie-sh/walkie/controller/ledger"
	"github.com/walkie-sh/walkie/controller/notify"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure a daemon.
type Options struct {
	Dir    string         // the directory served; every *.walkie.md under it
	Config *config.Config // the configuration to start with
	// ConfigPath is what Reload reads: the --config flag, or "" to search
	// the default places again, as at start.
	ConfigPath string
	// Listen is the HTTP address; "" serves no HTTP. An address that is
	// not loopback requires Token.
	Listen string
	Token  string // bearer token for the HTTP API
	// AllowedHosts are Host names the HTTP API answers for besides the
	// listen address and loopback (a reverse proxy's name; without a port
	// it matches any port). The config's serve.allowed_hosts adds to them.
	AllowedHosts []string
	// HTTPIdleTimeout closes a keep-alive connection idle this long.
	// Default DefaultIdleTimeout.
	HTTPIdleTimeout time.Duration
	// HTTPMaxConns caps the open HTTP connections: at the cap a new one
	// takes the place of the one idle longest, and is refused (503) when
	// every one has a request in progress; one address holds at most
	// three quarters of them (conns.go). Default: a quarter of
	// RLIMIT_NOFILE, between 16 and 256.
	HTTPMaxConns int
	// Grace is how long running turns may go on after Run's context ends
	// before they are interrupted. Default DefaultGrace.
	Grace time.Duration
	// RateWindow is the window of per_agent_turns_per_hour: an hour,
	// unless a test shortens it.
	RateWindow time.Duration
	// Ledger is the ledger of per-agent limits (ledger.DefaultPath: the
	// one every walkie of the machine counts in); "" keeps the daemon's
	// counts to itself, in memory.
	Ledger string
	Log    *zap.Logger
	Notify notify.Options // delivery tuning; Log and Count are set by the daemon
	// Registry is the machine's registry of debates (walkie.DefaultRegistry):
	// the page also lists the debates it names, which walkie auto, turn and
	// watch run outside this daemon. "" lists only the daemon's own.
	Registry string
	// MaxStreams bounds the page's open event streams. Default: half of
	// HTTPMaxConns, at most fleet.DefaultMaxStreams, so that streams never
	// hold every connection.
	MaxStreams int
	// Run, when set, takes controller.Run's place for a debate that
	// controller.Next says should run: the Temporal engine's home hands
	// the debate to its workflow there (controller/temporal). Its turns
	// run elsewhere and go on without the daemon, so its context ends
	// as soon as the daemon stops, not after the grace period.
	Run func(context.Context, controller.Options) (controller.Summary, error)
}

// DefaultGrace is how long running turns get after SIGTERM.
const DefaultGrace = 2 * time.Minute

// HTTP bounds: a client gets this long to send its request's headers, and
// that much room for them. A connection that has sent nothing counts as
// sending headers. There is no ReadTimeout: it would also end a long
// response (a stream of events), and a body is bounded by its handler.
const (
	DefaultIdleTimeout = 30 * time.Second
	headerTimeout      = 10 * time.Second
	maxHeaderBytes     = 64 << 10
)

// LockName is the daemon's lock file in the served directory.
const LockName = ".walkie-serve.lock"

// ErrNeedToken refuses an HTTP address other than loopback without a token.
var ErrNeedToken = errors.New("listening beyond loopback needs a token")

// Daemon serves one directory. New takes the directory's lock; Run serves
// until its context ends.
type Daemon struct {
	o       Options
	dir     string
	log     *zap.Logger
	lock    *walkie.Lock
	cfg     atomic.Pointer[config.Config]
	notif   atomic.Pointer[notify.Notifier]
	limits  *ledger.Limiter
	metrics *metrics
	ln      net.Listener
	started time.Time

	hosts       hostNames                   // the Host names the HTTP API answers for
	csrf        string                      // the page's CSRF token: random, one per daemon start
	crossOrigin *http.CrossOriginProtection // refuses a state change from another site
	httpLog     *zap.Logger                 // refused requests, sampled
	session     string                      // the page's session cookie with a token: random, one per start
	page        *fleet.Server               // the page and its event streams
	conns       *admission                  // the HTTP connections held, under their caps

	mu        sync.Mutex
	workers   map[string]*worker   // by walkie file
	byDir     map[string]*worker   // by state directory
	externals map[string]*external // registered debates outside dir, by file
	links     map[string]bool      // symbolic links not served, already logged
	draining  chan struct{}        // closed when Run's context ends: no new turns

	wg      sync.WaitGroup     // workers
	bg      sync.WaitGroup     // background closes of replaced notifiers
	runCtx  context.Context    // the sessions' context: cancelled when the grace is over
	cancel  context.CancelFunc // cancels runCtx
	watcher *fsnotify.Watcher
}

// New checks the options, takes the directory's lock (one daemon per
// directory) and opens the HTTP listener.
func New(o Options) (*Daemon, error) {
	if o.Config == nil {
		return nil, errors.New("daemon: no configuration")
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	// The directory named is followed once, as walkie.Find does: the
	// watch and the scan then work on real paths, and links below it
	// are the only ones not served.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if o.Listen != "" && o.Token == "" && !loopback(o.Listen) {
		return nil, fmt.Errorf("--listen %s: %w (set --token or WALKIE_TOKEN, or listen on 127.0.0.1)", o.Listen, ErrNeedToken)
	}
	for _, h := range o.AllowedHosts {
		if err := config.CheckHost(h); err != nil {
			return nil, fmt.Errorf("--allowed-host: %w", err)
		}
	}
	o.HTTPIdleTimeout = cmp.Or(o.HTTPIdleTimeout, DefaultIdleTimeout)
	o.HTTPMaxConns = cmp.Or(o.HTTPMaxConns, defaultMaxConns())
	o.MaxStreams = cmp.Or(o.MaxStreams, defaultMaxStreams(o.HTTPMaxConns))
	d := &Daemon{o: o, dir: dir, log: o.Log, started: time.Now(), csrf: rand.Text(), session: rand.Text(), crossOrigin: http.NewCrossOriginProtection(),
		workers: map[string]*worker{}, byDir: map[string]*worker{}, externals: map[string]*external{}, links: map[string]bool{},
		draining: make(chan struct{})}
	d.page = fleet.New(fleet.Options{Debates: d.Debates, Summary: d.summary, CSRF: d.csrf, TokenSet: o.Token != "",
		MaxStreams: o.MaxStreams, Log: o.Log.Named("page")})
	// A hostile page can send requests as fast as it likes: log the first
	// 20 refusals of each kind a second, drop the rest.
	d.httpLog = o.Log.Named("http").WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return zapcore.NewSamplerWithOptions(c, time.Second, 20, 0)
	}))
	d.runCtx, d.cancel = context.WithCancel(context.Background())
	d.cfg.Store(o.Config)
	d.limits = ledger.NewLimiter(o.Config.Limits, o.RateWindow, ledger.Open(o.Ledger), func(h ledger.Held) {
		o.Log.Info("held by a limit", zap.String("agent", h.Agent), zap.String("limit", h.Limit), zap.Time("until", h.Until), zap.String("why", h.Why))
	})
	d.metrics = newMetrics(d)
	d.conns = newAdmission(o.HTTPMaxConns, perAddrConns(o.HTTPMaxConns), d.httpLog, d.metrics.reg)
	n, err := notify.New(o.Config.Notify, d.notifyOptions(o.Config))
	if err != nil {
		return nil, err
	}
	d.notif.Store(n)
	if d.lock, err = lockDir(dir); err != nil {
		n.Close(context.Background())
		return nil, err
	}
	if o.Listen != "" {
		if d.ln, err = net.Listen("tcp", o.Listen); err != nil {
			d.unlock()
			n.Close(context.Background())
			return nil, fmt.Errorf("listen %s: %w", o.Listen, err)
		}
		_, port, _ := net.SplitHostPort(d.ln.Addr().String())
		d.hosts = newHostNames(o.Listen, port, o.AllowedHosts)
	}
	return d, nil
}

// defaultMaxConns leaves most descriptors to the debates: a quarter of
// the limit, between 16 and 256.
func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 64
	}
	return int(min(max(lim.Cur/4, 16), 256))
}

func (d *Daemon) notifyOptions(cfg *config.Config) notify.Options {
	o := d.o.Notify
	o.Log, o.People = d.log.Named("notify"), cfg.People
	o.Count = func(sink, result string) { d.metrics.notifications.WithLabelValues(sink, result).Inc() }
	return o
}

// Config is the configuration the daemon runs with now (a reload
// replaces it).
func (d *Daemon) Config() *config.Config { return d.cfg.Load() }

// Dir is the directory the daemon serves, resolved.
func (d *Daemon) Dir() string { return d.dir }

// Addr is the HTTP listener's address ("" when there is none).
func (d *Daemon) Addr() string {
	if d.ln == nil {
		return ""
	}
	return d.ln.Addr().String()
}

// Run serves until ctx ends, then drains: no new turns; running turns get
// the grace period, after which they are interrupted (the controller ends
// their sessions and records them as interrupted, to be run again on the
// next start).
func (d *Daemon) Run(ctx context.Context) error {
	defer d.unlock()
	defer d.cancel()
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("fsnotify: %w", err)
	}
	d.watcher = w
	files := d.watchTree(d.dir)
	for _, f := range files {
		d.ensureWorker(f)
	}
	d.openRegistry()
	pageCtx, stopPage := context.WithCancel(context.Background())
	pageDone := make(chan struct{})
	go func() { defer close(pageDone); d.page.Run(pageCtx) }()
	watchDone := make(chan struct{})
	go d.watchLoop(watchDone)
	stopHTTP := d.startHTTP()
	d.log.Info("serving", zap.String("dir", d.dir), zap.Int("debates", len(files)), zap.String("http", d.Addr()),
		zap.Int("http_max_conns", d.o.HTTPMaxConns), zap.Int("http_max_streams", d.o.MaxStreams),
		zap.Int("pid", os.Getpid()), zap.String("config", d.cfg.Load().Path))

	<-ctx.Done()
	d.mu.Lock()
	close(d.draining)
	running := 0
	for _, w := range d.workers {
		if w.busy() {
			running++
		}
	}
	d.mu.Unlock()
	d.log.Info("stopping: no new turns", zap.Int("running_turns", running), zap.Duration("grace", d.o.Grace))
	_ = d.watcher.Close()
	<-watchDone
	d.stopRechecks()

	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	grace := time.NewTimer(d.o.Grace)
	select {
	case <-done:
		grace.Stop()
	case <-grace.C:
		d.log.Warn("grace period over; interrupting the running turns (they run again on the next start)")
		d.cancel()
		<-done
	}
	// The event streams end with the page, so the server can shut down.
	stopPage()
	<-pageDone
	stopHTTP()
	nctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	d.notif.Load().Close(nctx)
	cancel()
	d.bg.Wait()
	d.limits.Close()
	d.log.Info("stopped")
	return nil
}

// Reload re-reads the configuration (SIGHUP). A config that does not
// load, or whose notification sinks cannot be built, is refused and the
// running one stays. The changes are logged one per line.
func (d *Daemon) Reload() error {
	next, err := config.Load(d.o.ConfigPath)
	if err == nil && next.Path == "" && d.cfg.Load().Path != "" {
		err = fmt.Errorf("%s is gone", d.cfg.Load().Path)
	}
	if err != nil {
		d.metrics.reloads.WithLabelValues("refused").Inc()
		d.log.Error("config reload refused; the running configuration stays", zap.Error(err))
		return err
	}
	prev := d.cfg.Load()
	changes := config.Changes(prev, next)
	var n *notify.Notifier
	if slices.Contains(changes, "notify changed") || slices.Contains(changes, "people changed") {
		if n, err = notify.New(next.Notify, d.notifyOptions(next)); err != nil {
			d.metrics.reloads.WithLabelValues("refused").Inc()
			d.log.Error("config reload refused; the running configuration stays", zap.Error(err))
			return err
		}
	}
	d.cfg.Store(next)
	d.limits.SetLimits(next.Limits)
	if n != nil {
		old := d.notif.Swap(n)
		d.bg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			old.Close(ctx)
		})
	}
	d.metrics.reloads.WithLabelValues("applied").Inc()
	if len(changes) == 0 {
		d.log.Info("config reloaded; nothing changed", zap.String("path", next.Path))
	} else {
		d.log.Info("config reloaded", zap.String("path", next.Path), zap.Strings("changes", changes))
	}
	// An agent added may be the command a waiting debate lacked.
	d.pokeAll()
	return nil
}

// ensureWorker starts the worker for file, or wakes it if it exists. A
// new debate's past sessions go into the rate limit first.
func (d *Daemon) ensureWorker(file string) {
	d.mu.Lock()
	if w, ok := d.workers[file]; ok {
		w.wake()
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case <-d.draining:
		return
	default:
	}
	if w, ok := d.workers[file]; ok {
		w.wake()
		return
	}
	w := newWorker(d, file)
	d.workers[file] = w
	d.wg.Go(w.loop)
}

// retire removes a worker whose file is gone or is no longer a regular
// file. It re-checks under the lock, so a file that came back in the
// meantime keeps its worker.
func (d *Daemon) retire(w *worker) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if served(w.file) {
		return false
	}
	if d.workers[w.file] == w {
		delete(d.workers, w.file)
	}
	for dir, x := range d.byDir {
		if x == w {
			delete(d.byDir, dir)
		}
	}
	d.log.Info("debate file gone; stopped watching it", zap.String("file", w.file))
	return true
}

// register maps a state directory to its worker, for state events.
func (d *Daemon) register(w *worker, dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byDir[dir] = w
}

func (d *Daemon) pokeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.workers {
		w.wake()
	}
}

// watchLoop routes file events to workers until the watcher is closed.
func (d *Daemon) watchLoop(done chan struct{}) {
	defer close(done)
	for {
		select {
		case ev, ok := <-d.watcher.Events:
			if !ok {
				return
			}
			d.route(ev)
		case err, ok := <-d.watcher.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: look at everything again. Workers are
				// level-based, so a wake-up is all they need.
				d.log.Warn("file events overflowed; rescanning", zap.String("dir", d.dir))
				for _, f := range d.watchTree(d.dir) {
					d.ensureWorker(f)
				}
				d.pokeAll()
				continue
			}
			d.log.Warn("file watch error", zap.Error(err))
		}
	}
}

// route wakes whoever an event concerns. Only three things matter: a
// walkie file changed, a debate's state or doorbell changed, or a
// directory appeared (watched at once, and searched for walkie files
// that were created before the watch was in place).
func (d *Daemon) route(ev fsnotify.Event) {
	name := ev.Name
	base := filepath.Base(name)
	if d.o.Registry != "" && filepath.Dir(name) == filepath.Clean(d.o.Registry) {
		if strings.HasSuffix(base, ".json") && !strings.HasPrefix(base, ".") {
			d.scanRegistry()
		}
		return
	}
	if file, ok := d.externalFor(filepath.Dir(name)); ok {
		if pageFile(base) {
			d.refreshExternal(file)
		}
		return
	}
	switch {
	case strings.HasSuffix(base, walkie.FileSuffix) && !d.inStateDir(name):
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			d.mu.Lock()
			if w, ok := d.workers[name]; ok {
				w.wake()
			}
			delete(d.links, name) // a link put back is logged again
			d.mu.Unlock()
			return
		}
		fi, err := os.Lstat(name)
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			d.ensureWorker(name)
		case fi.Mode()&fs.ModeSymlink != 0:
			// A served record replaced by a link: its worker looks, logs
			// and retires, unless the link is an agent's tampering that
			// the running turn puts right before the worker looks.
			d.mu.Lock()
			w, ok := d.workers[name]
			d.mu.Unlock()
			if ok {
				w.wake()
			} else {
				d.skipLink(name)
			}
		}
	case pageFile(base):
		d.mu.Lock()
		if w, ok := d.byDir[filepath.Dir(name)]; ok {
			w.wake()
		}
		d.mu.Unlock()
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		d.mu.Lock()
		delete(d.links, name) // a link to a directory put back is logged again
		d.mu.Unlock()
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(name)
		switch {
		case err != nil || !d.shouldWatch(name):
		case fi.IsDir():
			for _, f := range d.watchTree(name) {
				d.ensureWorker(f)
			}
		case fi.Mode()&fs.ModeSymlink != 0 && !d.inStateDir(name) && linksToDir(name):
			d.skipLink(name)
		}
	}
}

// skipLink logs, once per path, a symbolic link the daemon does not
// serve: a walkie file that is a link, or a link to a directory. The
// daemon serves only the regular files under its directory, as its scan
// (filepath.WalkDir, which follows no link) finds them, so a link dropped
// in later is treated as one that was there at start. Acting through a
// link would undo a rejected turn by replacing the link, not the record
// (docs/format.md, "Links, directories and other files").
func (d *Daemon) skipLink(p string) {
	d.mu.Lock()
	seen := d.links[p]
	d.links[p] = true
	d.mu.Unlock()
	if seen {
		return
	}
	target, _ := os.Readlink(p)
	d.log.Warn("not serving a symbolic link: walkie serve runs only the regular walkie files under its directory",
		zap.String("path", p), zap.String("target", target),
		zap.String("fix", "move the record (or the directory) here, or serve the directory it is in"))
}

// served reports whether file is a regular file: the only kind the
// daemon serves.
func served(file string) bool {
	fi, err := os.Lstat(file)
	return err == nil && fi.Mode().IsRegular()
}

// linksToDir reports whether the link p leads to a directory.
func linksToDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// pageFile is a file of a debate's state directory whose change the
// worker or the page must see: the log (the state and the attempts) and
// the doorbell, and for the page the running controller's activity.
func pageFile(base string) bool {
	switch base {
	case walkie.LogFile, "signal.json", walkie.ActivityFile:
		return true
	}
	return false
}

// watchTree adds a watch on root and every directory under it that
// matters, and returns the walkie files found. Each directory is watched
// before it is read, so a file created meanwhile is seen by one or the
// other.
func (d *Daemon) watchTree(root string) []string {
	var files []string
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() {
			if !d.shouldWatch(p) {
				return filepath.SkipDir
			}
			if err := d.watcher.Add(p); err != nil {
				hint := ""
				switch {
				case errors.Is(err, syscall.ENOSPC):
					hint = "raise fs.inotify.max_user_watches"
				case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
					// kqueue (macOS) holds a descriptor for every file in
					// every watched directory, not one per directory.
					hint = "out of file descriptors: point --dir at the directories that hold debates, not a whole home or code tree"
				}
				d.log.Warn("cannot watch a directory; changes in it are seen only on restart", zap.String("dir", p), zap.Error(err), zap.String("hint", hint))
			}
			return nil
		}
		switch {
		case d.inStateDir(p):
		case e.Type()&fs.ModeSymlink != 0 && (strings.HasSuffix(e.Name(), walkie.FileSuffix) || linksToDir(p) && d.shouldWatch(p)):
			d.skipLink(p)
		case strings.HasSuffix(e.Name(), walkie.FileSuffix) && e.Type().IsRegular():
			files = append(files, p)
		}
		return nil
	})
	return files
}

// shouldWatch skips .git and node_modules, and inside a .walkie directory
// watches only the debates' own directories (the log lives there),
// not their transcripts, which change with every byte an agent prints.
func (d *Daemon) shouldWatch(dir string) bool {
	rel, err := filepath.Rel(d.dir, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	if rel == "." {
		return true
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, p := range parts {
		if p == ".git" || p == "node_modules" {
			return false
		}
		if p == ".walkie" {
			return len(parts) <= i+2
		}
	}
	return true
}

func (d *Daemon) inStateDir(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), ".walkie")
}

// lockDir takes the directory's daemon lock, with the holder's pid inside
// for the message a second daemon prints.
func lockDir(dir string) (*walkie.Lock, error) {
	path := filepath.Join(dir, LockName)
	// A daemon killed while it was starting a session leaves the lock to
	// that child until its exec closes the descriptor: moments, but a
	// restart can come sooner. So while the recorded holder is dead, wait
	// a little; while it lives, refuse at once.
	patience := time.Duration(0)
	if !alive(walkie.Holder(path)) {
		patience = 5 * time.Second
	}
	l, err := walkie.TryLockFile(path, patience)
	if errors.Is(err, walkie.ErrLocked) {
		pid := "unknown"
		if p := walkie.Holder(path); p > 0 {
			pid = strconv.Itoa(p)
		}
		return nil, fmt.Errorf("walkie serve is already running for %s (pid %s holds %s): %w", dir, pid, path, walkie.ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("daemon lock: %w", err)
	}
	return l, nil
}

// alive reports whether a process with this pid exists (or cannot be
// told apart from one: unknown counts as alive).
func alive(pid int) bool {
	if pid <= 0 {
		return true
	}
	return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func (d *Daemon) unlock() {
	d.lock.Unlock()
	d.lock = nil
}

// loopback reports whether addr listens on a loopback address only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
