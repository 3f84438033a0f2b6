package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// HomeFile, in a debate's state directory, marks the debate as homed by
// a remote engine (walkie serve --engine temporal): its turns run on
// other machines, and while one does, the log holds the attempt with
// no controller lock held here. A local controller would take that
// attempt for one a dead controller left, mark it interrupted and run
// the turn again, so Run and Recover refuse a homed debate unless told
// to take it over (Options.TakeOver).
const HomeFile = "home.json"

// HomeMark is what HomeFile holds: which home runs the debate.
type HomeMark struct {
	Engine string    `json:"engine"`     // "temporal"
	Queue  string    `json:"task_queue"` // the home's own task queue
	Host   string    `json:"host"`
	PID    int       `json:"pid"`
	Since  time.Time `json:"since"` // when this home first started the debate's workflow
}

// ReadHomeMark reads the mark in the state directory dir; nil when the
// debate is not homed.
func ReadHomeMark(dir string) (*HomeMark, error) {
	b, err := os.ReadFile(filepath.Join(dir, HomeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m HomeMark
	if err := json.Unmarshal(b, &m); err != nil {
		// A mark that cannot be read still marks the debate: running it
		// here could run a remote turn twice.
		return &HomeMark{Engine: "unknown (" + filepath.Join(dir, HomeFile) + " is unreadable: " + err.Error() + ")"}, nil
	}
	return &m, nil
}

// MarkHome writes m into the state directory dir, durably: it must be
// there before the first turn goes out.
func MarkHome(dir string, m HomeMark) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := walkie.WriteFileAtomic(filepath.Join(dir, HomeFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("mark the debate as homed: %w", err)
	}
	return nil
}

// HomedError refuses to run a debate a remote engine's home runs.
type HomedError struct {
	File string
	ID   string
	Mark HomeMark
}

func (e *HomedError) Error() string {
	m := e.Mark
	return fmt.Sprintf("%s: debate %s is run by walkie serve --engine %s (task queue %s on %s, pid %d, since %s): its turns run on remote workers, "+
		"and one may be running now with no lock held here, so walkie will not run it as well. "+
		"Let that home run it, or halt it with walkie halt %s; if the home is gone for good, stop its workflow (temporal workflow terminate --workflow-id %s) "+
		"and take the debate back with walkie auto --take-over %s",
		e.File, e.ID, m.Engine, m.Queue, m.Host, m.PID, m.Since.Local().Format(time.DateTime), e.File, e.ID, e.File)
}

// Is makes a homed debate bad input to the daemon: shown, and waited on
// until something changes, not retried.
func (e *HomedError) Is(target error) bool { return target == ErrBadInput }

// checkHome refuses a homed debate, or with o.TakeOver removes the mark
// and says so. The caller holds the debate's run lock: a home that is up
// holds it while a turn of its is out, so a take-over never races one.
func (c *controller) checkHome() error {
	m, err := ReadHomeMark(c.dir)
	if err != nil || m == nil {
		return err
	}
	if !c.opts.TakeOver {
		return &HomedError{File: c.file, ID: filepath.Base(c.dir), Mark: *m}
	}
	if err := os.Remove(filepath.Join(c.dir, HomeFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("take over %s: %w", c.file, err)
	}
	c.log.Warn("took the debate over from its remote home; an attempt it left running is recovered as interrupted",
		zap.String("file", c.file), zap.String("engine", m.Engine), zap.String("task_queue", m.Queue), zap.String("host", m.Host))
	return nil
}

// Homed returns a *HomedError when a remote engine's home runs the
// debate in file, and nil when none does.
func Homed(file string) error {
	c, err := newController(Options{File: file})
	if err != nil {
		return err
	}
	defer c.close()
	return c.checkHome()
}

// TakeOver takes the debate in o.File back from a remote engine's home
// that is gone for good: under the debate's run lock (refused while the
// home holds it, as it does while a turn of its is out) it removes the
// mark. An attempt the home left running is then a dead controller's,
// recovered as interrupted by the next run or tick.
func TakeOver(o Options) error {
	o.TakeOver = true
	c, err := newController(o)
	if err != nil {
		return err
	}
	defer c.close()
	lock, err := walkie.TryRunLock(c.dir)
	if err != nil {
		return fmt.Errorf("take over %s: %w", c.file, err)
	}
	defer lock.Unlock()
	return c.checkHome()
}
