package engine

import (
	"fmt"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"go.uber.org/zap"
)

// hub is one inotify watcher shared by every job of an engine, with the
// events fanned out to the jobs by file name. One watcher, not one per
// job: closing an inotify instance waits for the kernel (several
// milliseconds), too slow to pay between two turns, and a round table runs
// its reviewers at once. Directories are watched, not files: an agent may
// replace its file by a rename, which a watch on the file would not
// follow.
type hub struct {
	w    *fsnotify.Watcher
	log  *zap.Logger
	done chan struct{}

	mu   sync.Mutex
	dirs map[string]bool
	subs map[*subscription]bool
}

// subscription is one job's view of the hub: which of its files changed
// since it last looked. Changes are kept as a set and the job is woken
// through a channel of one, so none is lost and none blocks the hub.
type subscription struct {
	paths  []string
	notify chan struct{}

	mu      sync.Mutex
	changed map[string]bool
}

func newHub(log *zap.Logger) (*hub, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	h := &hub{w: w, log: log, done: make(chan struct{}), dirs: map[string]bool{}, subs: map[*subscription]bool{}}
	go h.loop()
	return h, nil
}

// subscribe watches paths ("" entries are skipped) until unsubscribe.
func (h *hub) subscribe(paths ...string) (*subscription, error) {
	s := &subscription{notify: make(chan struct{}, 1), changed: map[string]bool{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		dir := filepath.Dir(p)
		if !h.dirs[dir] {
			// Kept until the hub closes: re-adding a directory between
			// two turns costs a syscall each time for nothing. The kernel
			// drops the watch of a directory that is removed.
			if err := h.w.Add(dir); err != nil {
				return nil, fmt.Errorf("watch %s: %w", dir, err)
			}
			h.dirs[dir] = true
		}
		s.paths = append(s.paths, p)
	}
	h.subs[s] = true
	return s, nil
}

func (h *hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// loop fans events out until the watcher is closed.
func (h *hub) loop() {
	defer close(h.done)
	for {
		select {
		case ev, ok := <-h.w.Events:
			if !ok {
				return
			}
			h.deliver(ev, false)
		case err, ok := <-h.w.Errors:
			if !ok {
				return
			}
			// An overflowed queue lost events we cannot name: every job
			// looks at all its files again.
			h.log.Warn("file watch error; every watched file is looked at again", zap.Error(err))
			h.deliver(fsnotify.Event{}, true)
		}
	}
}

// deliver marks the event's file (or, with all, every path) as changed for
// each subscription that watches it.
func (h *hub) deliver(ev fsnotify.Event, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dirs[ev.Name] && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// A watched directory itself went away, and its watch with it: the
		// next subscriber must add it again, and its files' owners look.
		delete(h.dirs, ev.Name)
		all = true
	}
	for s := range h.subs {
		s.mark(ev.Name, all)
	}
}

func (s *subscription) mark(name string, all bool) {
	s.mu.Lock()
	hit := false
	for _, p := range s.paths {
		if all || p == name {
			s.changed[p], hit = true, true
		}
	}
	s.mu.Unlock()
	if hit {
		select {
		case s.notify <- struct{}{}:
		default: // already woken; take() will see this change too
		}
	}
}

// take returns the paths changed since the last take.
func (s *subscription) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.changed))
	for p := range s.changed {
		out = append(out, p)
	}
	clear(s.changed)
	return out
}

func (h *hub) close() {
	h.w.Close()
	<-h.done
}

// Changes is a watch on some files for a caller that waits for one of
// them to change: the loop waiting for a person's post on the doorbell. It
// shares the engine's watcher.
type Changes struct {
	h *hub
	s *subscription
}

// Watch starts watching paths; Close ends it.
func (e *Engine) Watch(paths ...string) (*Changes, error) {
	h, err := e.watcher()
	if err != nil {
		return nil, err
	}
	s, err := h.subscribe(paths...)
	if err != nil {
		return nil, err
	}
	return &Changes{h: h, s: s}, nil
}

// C is ready after a change to any of the paths (several changes may
// come as one).
func (c *Changes) C() <-chan struct{} { return c.s.notify }

// Close ends the watch.
func (c *Changes) Close() { c.h.unsubscribe(c.s) }
