package telegram

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gofrs/flock"

	"github.com/walkie-sh/walkie/walkie"
)

// Store is what walkie keeps of one bot on disk, in the user's state
// directory (telegram/bot-HASH/, HASH of the token, never the token):
// the poll's offset and the update in hand (poll.json), the messages
// walkie sent that a reply may answer (sent.json), and the lock of the
// one process that polls (poll.lock). Every process of the user that
// sends or polls for the bot uses the same store.
type Store struct{ dir string }

// StoreFor is the store of the bot whose token is token, under the
// user's state directory.
func StoreFor(token string) (*Store, error) {
	dir, err := walkie.UserStateDir()
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	sum := sha256.Sum256([]byte(token))
	return OpenStore(filepath.Join(dir, "telegram", "bot-"+hex.EncodeToString(sum[:6]))), nil
}

// OpenStore is the store in dir.
func OpenStore(dir string) *Store { return &Store{dir: dir} }

// Dir is where the store is.
func (s *Store) Dir() string { return s.dir }

// Poll is the poll's memory: the offset to ask getUpdates for (every
// update before it is handled, and acknowledged with it), and the update
// being handled, written before walkie acts on it.
type Poll struct {
	Offset int64 `json:"offset"`
	// Pending is the update walkie began to act on and has not finished:
	// after a crash, it is neither repeated (it may have taken) nor lost
	// (the person is told to look and send it again).
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is an update in hand.
type Pending struct {
	UpdateID int64  `json:"update_id"`
	Chat     string `json:"chat"`
	Message  int64  `json:"message"`
}

// Sent is a message walkie sent: what a reply to it is about.
type Sent struct {
	Chat      string    `json:"chat"`
	MessageID int64     `json:"message_id"`
	File      string    `json:"file"`
	Debate    string    `json:"debate"`
	Kind      string    `json:"kind"` // the event's kind, or "briefing"
	Turn      int       `json:"turn,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	SHA256    string    `json:"sha256,omitempty"` // a briefing's, for /approve
	At        time.Time `json:"at"`
}

// KindBriefing is a briefing sent for approval.
const KindBriefing = "briefing"

// keepSent is how many sent messages the store remembers: a reply to an
// older one is answered with "too old". (A variable only so that a test
// need not send a thousand.)
var keepSent = 1000

// ReadPoll reads the poll's memory; none yet is offset 0.
func (s *Store) ReadPoll() (Poll, error) {
	var p Poll
	err := s.read("poll.json", &p)
	return p, err
}

// WritePoll replaces the poll's memory, synced before it returns.
func (s *Store) WritePoll(p Poll) error { return s.write("poll.json", p) }

// Remember adds m to the sent messages, forgetting the oldest beyond
// keepSent, under the store's lock (the senders are many processes).
func (s *Store) Remember(m Sent) error {
	return s.locked("sent.lock", func() error {
		var all []Sent
		if err := s.read("sent.json", &all); err != nil {
			all = nil // a damaged list costs the routing of older replies only
		}
		all = append(all, m)
		if len(all) > keepSent {
			all = slices.Delete(all, 0, len(all)-keepSent)
		}
		return s.write("sent.json", all)
	})
}

// Find is the sent message id in chat, if walkie remembers it.
func (s *Store) Find(chat string, id int64) (Sent, bool, error) {
	var all []Sent
	if err := s.read("sent.json", &all); err != nil {
		return Sent{}, false, err
	}
	for _, m := range slices.Backward(all) {
		if m.Chat == chat && m.MessageID == id {
			return m, true, nil
		}
	}
	return Sent{}, false, nil
}

// ErrPolling is TryPoll's refusal while another process polls the bot.
var ErrPolling = errors.New("another walkie polls this bot")

// TryPoll takes the bot's poll for this process, or says another has it
// (ErrPolling); release gives it back.
func (s *Store) TryPoll() (release func(), err error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("telegram store: %w", err)
	}
	l := flock.New(filepath.Join(s.dir, "poll.lock"), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("telegram store: lock: %w", err)
	}
	if !ok {
		return nil, ErrPolling
	}
	return func() { _ = l.Close() }, nil
}

func (s *Store) locked(name string, fn func() error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("telegram store: %w", err)
	}
	l := flock.New(filepath.Join(s.dir, name), flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	if err := l.Lock(); err != nil {
		return fmt.Errorf("telegram store: lock: %w", err)
	}
	defer l.Close()
	return fn()
}

// read decodes the store's file name into v; a file not there leaves v.
func (s *Store) read(name string, v any) error {
	b, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("telegram store: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("telegram store %s: %w; remove it", filepath.Join(s.dir, name), err)
	}
	return nil
}

// write replaces the store's file name with v, whole and synced: a
// crash leaves the old content or the new.
func (s *Store) write(name string, v any) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("telegram store: %w", err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := walkie.WriteFileAtomic(filepath.Join(s.dir, name), b, 0o600); err != nil {
		return fmt.Errorf("telegram store: %w", err)
	}
	return nil
}
