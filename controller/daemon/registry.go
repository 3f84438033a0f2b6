package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/fleet"
	"github.com/walkie-sh/walkie/walkie"
)

// The page shows, besides the daemon's own debates, every debate the
// machine's registry names (walkie auto, turn and watch note theirs
// there): read from their files, never run. Their state directories are
// watched like the daemon's own, so the page follows them live.

// external is a registered debate outside the daemon's directory.
type external struct {
	reg  walkie.Registered
	dir  string // its state directory
	view DebateView
	// recheck reads it again while a controller holds it: letting go of
	// the run lock leaves no file event, so a controller that ended
	// would otherwise stay "run by" on the page.
	recheck *time.Timer
	delay   time.Duration
}

// scanRegistry reads the registry again: new debates are watched, those
// gone from it dropped.
func (d *Daemon) scanRegistry() {
	if d.o.Registry == "" {
		return
	}
	regs, err := walkie.ReadRegistry(d.o.Registry)
	if err != nil {
		d.log.Warn("registry unreadable; the page lists only this daemon's debates", zap.String("registry", d.o.Registry), zap.Error(err))
		return
	}
	seen := map[string]bool{}
	for _, r := range regs {
		if d.under(r.File) {
			continue // the daemon's own: its worker shows it
		}
		seen[r.File] = true
		dir := walkie.StateDir(r.File, r.ID)
		d.mu.Lock()
		x, ok := d.externals[r.File]
		if !ok {
			x = &external{dir: dir}
			d.externals[r.File] = x
		}
		x.reg = r
		d.mu.Unlock()
		if !ok {
			// The state directory exists once the controller has run.
			if err := d.watcher.Add(dir); err != nil {
				d.log.Warn("cannot watch a registered debate; the page shows it as it was", zap.String("dir", dir), zap.Error(err))
			}
		}
		d.refreshExternal(r.File)
	}
	d.mu.Lock()
	for file, x := range d.externals {
		if !seen[file] {
			if x.recheck != nil {
				x.recheck.Stop()
			}
			_ = d.watcher.Remove(x.dir)
			delete(d.externals, file)
		}
	}
	d.mu.Unlock()
	d.page.Changed()
}

// refreshExternal reads a registered debate's files again.
func (d *Daemon) refreshExternal(file string) {
	d.mu.Lock()
	x, ok := d.externals[file]
	var reg walkie.Registered
	if ok {
		reg = x.reg
	}
	d.mu.Unlock()
	if !ok {
		return
	}
	v := fleet.ReadDebate(reg, d.cfg.Load(), time.Now())
	d.mu.Lock()
	if y, ok := d.externals[file]; ok && y == x {
		x.view = v
		d.recheckLocked(x, file)
	}
	d.mu.Unlock()
	d.page.Changed()
}

// recheckLocked reads x again after a while, as the worker of a held
// debate does, when its view says a controller holds it. d.mu is held.
func (d *Daemon) recheckLocked(x *external, file string) {
	if x.view.RunBy == "" {
		x.delay = 0
		return
	}
	select {
	case <-d.draining:
		return // closed under d.mu: no timer outlives stopRechecks
	default:
	}
	if x.recheck != nil {
		return
	}
	x.delay = nextDelay(x.delay, maxLockDelay)
	x.recheck = time.AfterFunc(x.delay, func() {
		d.mu.Lock()
		x.recheck = nil
		d.mu.Unlock()
		select {
		case <-d.draining:
		default:
			d.refreshExternal(file)
		}
	})
}

// stopRechecks stops the pending rechecks, when the daemon stops.
func (d *Daemon) stopRechecks() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, x := range d.externals {
		if x.recheck != nil {
			x.recheck.Stop()
			x.recheck = nil
		}
	}
}

// externalFor is the registered debate whose state directory is dir.
func (d *Daemon) externalFor(dir string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for file, x := range d.externals {
		if x.dir == dir {
			return file, true
		}
	}
	return "", false
}

// under reports whether file is in the daemon's directory. The daemon's
// directory is the one its --dir leads to, so a controller that
// registered the debate by a path through a link is resolved first.
func (d *Daemon) under(file string) bool {
	if inside(d.dir, file) {
		return true
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(file))
	return err == nil && inside(d.dir, filepath.Join(real, filepath.Base(file)))
}

// inside reports whether file is dir or below it, by its name.
func inside(dir, file string) bool {
	rel, err := filepath.Rel(dir, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// openRegistry makes sure the registry directory exists, so that it can
// be watched before the first controller writes to it.
func (d *Daemon) openRegistry() {
	if d.o.Registry == "" {
		return
	}
	if err := os.MkdirAll(d.o.Registry, 0o700); err != nil {
		d.log.Warn("no registry; the page lists only this daemon's debates", zap.String("registry", d.o.Registry), zap.Error(err))
		return
	}
	if err := d.watcher.Add(d.o.Registry); err != nil {
		d.log.Warn("cannot watch the registry; debates registered later appear after a restart", zap.String("registry", d.o.Registry), zap.Error(err))
	}
	d.scanRegistry()
}
