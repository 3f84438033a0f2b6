// Package ledger is the one account of per-agent limits on a machine:
// sessions at once, sessions started per rolling hour and US dollars
// spent per day, per agent, counted for every form of the controller that
// runs there (walkie auto, turn, new, watch --once, serve and trials), so
// three runs of one agent in the same hour count as three whichever
// command started them.
//
// The account is a small JSON file in the user's state directory
// (limits.json), read and rewritten whole under an flock of its own
// (limits.lock) for every change. A slot held by a process that died is
// dropped at the next look: holds carry the holder's pid and start time.
// The Limiter in front of it is one process's queue: first come, first
// served, an agent held by its own limit steps aside, nothing polls.
package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// FileName is the ledger's file in the user's state directory.
const FileName = "limits.json"

// DefaultPath is the machine's ledger for this user: limits.json in
// walkie's state directory (walkie.UserStateDir).
func DefaultPath() (string, error) {
	dir, err := walkie.UserStateDir()
	if err != nil {
		return "", fmt.Errorf("the ledger of limits: %w", err)
	}
	return filepath.Join(dir, FileName), nil
}

// Ledger is the book of limits, on disk (shared by every process that
// opens the same path) or, for a test, in memory.
type Ledger struct {
	path   string // "" for a book in memory
	holder session.ProcIdentity
	// mem is the book in memory, and mu guards it; a file's book is
	// guarded by its flock instead.
	mu  sync.Mutex
	mem *Book
}

// Open is the ledger at path; "" keeps the book in this process's memory,
// shared by nobody (tests, and a daemon told to keep its limits to
// itself).
func Open(path string) *Ledger {
	l := &Ledger{path: path, holder: self()}
	if path == "" {
		l.mem = &Book{Version: BookVersion}
	}
	return l
}

// Path is where the ledger is kept; "" in memory.
func (l *Ledger) Path() string { return l.path }

// self is this process's identity for the holds it takes.
func self() session.ProcIdentity {
	id, err := session.Identify(os.Getpid())
	if err != nil {
		return session.ProcIdentity{Pid: os.Getpid()}
	}
	return id
}

// alive reports whether the process that took a hold still runs: the
// same pid and start time; a holder known only by its pid, by its pid.
func alive(id session.ProcIdentity) bool {
	if id.StartTicks == 0 {
		return walkie.ProcessAlive(id.Pid)
	}
	cur, err := session.Identify(id.Pid)
	return err == nil && cur.StartTicks == id.StartTicks
}

// update reads the book, prunes it at now, lets fn change it, and writes
// it back when anything changed, all under the ledger's lock. write, when
// false, never writes (a look).
func (l *Ledger) update(now time.Time, window time.Duration, write bool, fn func(b *Book) (changed bool)) error {
	if l.path == "" {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.mem.Prune(now, window, alive)
		fn(l.mem)
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return fmt.Errorf("ledger of limits %s: %w", l.path, err)
	}
	lock := flock.New(l.path[:len(l.path)-len(filepath.Ext(l.path))]+".lock", flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("lock the ledger of limits %s: %w", l.path, err)
	}
	defer lock.Close()
	data, err := os.ReadFile(l.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the ledger of limits: %w", err)
	}
	b, err := ParseBook(data)
	if err != nil {
		return fmt.Errorf("the ledger of limits %s: %w; remove it (the limits then count from now on)", l.path, err)
	}
	pruned := b.Prune(now, window, alive)
	if changed := fn(b); !write || !(changed || pruned) {
		return nil
	}
	// Whole and synced: a crash leaves the old book or the new.
	if err := walkie.WriteFileAtomic(l.path, b.Marshal(), 0o600); err != nil {
		return fmt.Errorf("write the ledger of limits %s: %w", l.path, err)
	}
	return nil
}

// Check reads the ledger, making its directory if need be: whether this
// process can count in it at all.
func (l *Ledger) Check() error {
	return l.update(time.Now(), time.Hour, false, func(*Book) bool { return false })
}

// Read is the book as it stands at now, pruned (for a report, and tests).
func (l *Ledger) Read(now time.Time, window time.Duration) (*Book, error) {
	var out *Book
	err := l.update(now, window, false, func(b *Book) bool {
		out = &Book{Version: b.Version, Agents: map[string]*Account{}}
		for agent, a := range b.Agents {
			c := *a
			out.Agents[agent] = &c
		}
		return false
	})
	return out, err
}

// newID names a hold.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
