package walkie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A channel is a directory of review threads, one walkie file each
// (DIR/SLUG.walkie.md), of which at most one is open at a time: a builder
// and a reviewer work through one review before the next starts. Its
// doorbell, DIR/.walkie/channel.json, names the open thread and where it
// stands, so a live session waits on one file for the whole channel; the
// cron tick and the daemon act only on the thread it names.

// Channel is the channel's doorbell.
type Channel struct {
	// Open is the open thread; nil when every thread is finished.
	Open *ThreadBell `json:"open"`
	// Last is the thread that finished last.
	Last      *ThreadBell `json:"last,omitempty"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// ThreadBell is a thread as the channel's doorbell names it.
type ThreadBell struct {
	File      string      `json:"file"` // the walkie file's name in the channel's directory
	ID        string      `json:"id"`
	Seq       int         `json:"seq"`
	Turn      string      `json:"turn,omitempty"` // whose turn it is
	NextTurn  int         `json:"next_turn"`
	Status    string      `json:"status"`
	LastEntry *EntryBrief `json:"last_entry,omitempty"`
}

// ThreadFinished reports whether a thread of this status no longer holds
// its channel: closed, or converged. Any other status (halted, failed,
// at its round cap) can go on with walkie resume or extend, so the thread
// stays open for the channel.
func ThreadFinished(status string) bool { return status == StatusClosed || status == StatusConverged }

func channelPath(dir string) string { return filepath.Join(dir, ".walkie", "channel.json") }

// IsChannel reports whether dir is a channel (walkie thread new made it).
func IsChannel(dir string) bool {
	_, err := os.Stat(channelPath(dir))
	return err == nil
}

// LoadChannel reads a channel's doorbell.
func LoadChannel(dir string) (*Channel, error) {
	b, err := os.ReadFile(channelPath(dir))
	if err != nil {
		return nil, fmt.Errorf("read the channel's doorbell: %w", err)
	}
	var c Channel
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, &InputError{File: channelPath(dir), Msg: "the channel's doorbell is not valid JSON: " + err.Error(),
			Fix: "remove it; walkie thread new writes it again"}
	}
	return &c, nil
}

// Threads lists the walkie files directly in dir, sorted and absolute.
func Threads(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), FileSuffix) && e.Type().IsRegular() {
			out = append(out, filepath.Join(abs, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// ThreadStatus is one thread's status, from its record and state.
func ThreadStatus(file string) (string, *Doc, error) {
	d, err := Load(file)
	if err != nil {
		return "", nil, err
	}
	st, err := LoadState(StateDir(file, d.Meta.ID))
	if err != nil {
		return "", d, err
	}
	return DebateStatus(&d.Meta, d.Progress(), st), d, nil
}

// NewThread starts a thread SLUG in the channel dir (made a channel if it
// is not one), refusing while another thread there is open, and rings the
// channel's doorbell for it. The thread's id is its slug.
func NewThread(dir, slug string, o InitOptions) (string, error) {
	if !idPattern.MatchString(slug) {
		return "", &InputError{File: dir, Msg: fmt.Sprintf("thread %q is not a simple name", slug), Fix: "use letters, digits, '.', '_' or '-', e.g. fix-login"}
	}
	if err := os.MkdirAll(filepath.Join(dir, ".walkie"), 0o755); err != nil {
		return "", err
	}
	lock, err := LockFile(context.Background(), filepath.Join(dir, ".walkie", "channel.lock"))
	if err != nil {
		return "", fmt.Errorf("lock the channel %s: %w", dir, err)
	}
	defer lock.Unlock()
	threads, err := Threads(dir)
	if err != nil {
		return "", err
	}
	for _, t := range threads {
		status, _, err := ThreadStatus(t)
		if err != nil {
			return "", fmt.Errorf("thread %s: %w (a channel cannot tell whether it is open; fix or remove it first)", t, err)
		}
		if !ThreadFinished(status) {
			return "", &RefusedError{Op: "thread new", Reason: fmt.Sprintf("%s is open (status %s): a channel holds one open thread at a time; close it (an entry of type close) before starting another",
				t, status)}
		}
	}
	file := filepath.Join(dir, slug+FileSuffix)
	o.ID, o.Typed = slug, true
	if err := Init(file, o); err != nil {
		return "", err
	}
	d, err := Load(file)
	if err != nil {
		return "", err
	}
	c := &Channel{}
	if old, err := LoadChannel(dir); err == nil {
		c.Last = old.Last
	}
	c.Open = bellOf(file, d.Meta.ID, Signal{NextTurn: 1, Status: StatusOpen, Turn: d.Meta.TurnAgent(1)})
	c.UpdatedAt = time.Now().UTC()
	if err := writeJSON(channelPath(dir), c, WriteFileAtomic); err != nil {
		return "", fmt.Errorf("thread %s is made but the channel's doorbell was not rung: %w", file, err)
	}
	return file, nil
}

func bellOf(file, id string, sig Signal) *ThreadBell {
	return &ThreadBell{File: filepath.Base(file), ID: id, Seq: sig.Seq, Turn: sig.Turn, NextTurn: sig.NextTurn, Status: sig.Status, LastEntry: sig.LastEntry}
}

// ringChannel passes a thread's doorbell on to its channel's, when the
// thread is the channel's open one: stateDir is the thread's
// .walkie/ID. A thread that finishes gives the channel up.
func ringChannel(stateDir string, sig Signal) error {
	chanDir := filepath.Dir(filepath.Dir(stateDir))
	id := filepath.Base(stateDir)
	// Read without the channel lock first: most debates are in no
	// channel, and a thread that is not the open one (a note on a closed
	// thread) changes nothing. NewThread holds the lock while it creates
	// a thread, which is never the open one yet.
	c, err := LoadChannel(chanDir)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (c.Open == nil || c.Open.ID != id)) {
		return nil
	}
	if err != nil {
		return err
	}
	lock, err := LockFile(context.Background(), filepath.Join(chanDir, ".walkie", "channel.lock"))
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if c, err = LoadChannel(chanDir); err != nil || c.Open == nil || c.Open.ID != id {
		return err
	}
	b := bellOf(c.Open.File, id, sig)
	c.Open = b
	if ThreadFinished(sig.Status) {
		c.Open, c.Last = nil, b
	}
	c.UpdatedAt = time.Now().UTC()
	return writeJSON(channelPath(chanDir), c, WriteFileAtomic)
}

// ActsOn reports whether the cron tick and the daemon act on file: any
// walkie file outside a channel; in a channel, only the open thread.
func ActsOn(file string) bool {
	dir := filepath.Dir(file)
	c, err := LoadChannel(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && c.Open != nil && c.Open.File == filepath.Base(file)
}
