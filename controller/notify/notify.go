// Package notify delivers walkie's events (a turn started, a turn recorded
// with its outcome, a debate ended with its status, an escalation, a copy
// of an entry for the supervisor) to the configured sinks: a command that
// reads the event as JSON on stdin, an HTTP webhook, and Telegram.
//
// Delivery never stops or slows a debate: Notify only queues. Each sink
// has its own bounded queue and goroutine; a failing sink is retried with
// backoff and logged, and when its queue is full the oldest event is
// dropped with a log line, so one dead receiver costs memory for a few
// hundred events at most.
package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Kinds of event.
const (
	KindTurnStarted  = "turn-started"
	KindTurnRecorded = "turn-recorded"
	KindDebateEnded  = "debate-ended"
	KindEscalation   = "escalation"
	KindEntry        = "entry"   // a copy of a recorded entry, for the supervisor
	KindWaiting      = "waiting" // the next turn is a person's (or a live session's): how to post it
)

// Event is what a sink receives. Its JSON form is what the command reads
// on stdin and what the webhook posts.
type Event struct {
	Kind       string    `json:"kind"`
	Debate     string    `json:"debate"`
	File       string    `json:"file"`
	Turn       int       `json:"turn,omitempty"`
	Round      int       `json:"round,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Attempt    int       `json:"attempt,omitempty"`
	Outcome    string    `json:"outcome,omitempty"` // turn-recorded
	Detail     string    `json:"detail,omitempty"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	CostUSD    float64   `json:"cost_usd,omitempty"`
	Signed     bool      `json:"signed,omitempty"`
	Status     string    `json:"status,omitempty"` // debate-ended: the final status; turn-recorded: the status after it
	Reason     string    `json:"reason,omitempty"`
	Text       string    `json:"text,omitempty"` // entry: the entry's body
	At         time.Time `json:"at"`
}

// Summary is the event in one line a person reads (Telegram's message,
// the log).
func (e Event) Summary() string {
	switch e.Kind {
	case KindTurnStarted:
		s := fmt.Sprintf("%s: turn %d (%s) started", e.Debate, e.Turn, e.Agent)
		if e.Attempt > 1 {
			s += fmt.Sprintf(", attempt %d", e.Attempt)
		}
		return s
	case KindTurnRecorded:
		s := fmt.Sprintf("%s: turn %d (%s) %s", e.Debate, e.Turn, e.Agent, e.Outcome)
		if e.Signed {
			s += ", signed off"
		}
		if e.Outcome != "accepted" && e.Detail != "" {
			s += ": " + e.Detail
		}
		return s
	case KindDebateEnded:
		if e.Status == walkie.StatusClosed {
			return strings.TrimSpace(fmt.Sprintf("%s: thread closed %s", e.Debate, e.Reason))
		}
		s := fmt.Sprintf("%s: debate ended %s", e.Debate, e.Status)
		if e.Reason != "" {
			s += " (" + e.Reason + ")"
		}
		return s
	case KindEscalation:
		return fmt.Sprintf("%s: needs the supervisor: %s", e.Debate, e.Reason)
	case KindWaiting:
		return fmt.Sprintf("%s: turn %d is %s's: %s", e.Debate, e.Turn, e.Agent, e.Reason)
	case KindEntry:
		who := e.Agent
		if e.Turn > 0 {
			who = fmt.Sprintf("Turn %d · %s", e.Turn, e.Agent)
		}
		return fmt.Sprintf("%s · %s\n\n%s", e.Debate, who, strings.TrimSpace(e.Text))
	}
	return fmt.Sprintf("%s: %s", e.Debate, e.Kind)
}

// Sink delivers one event. An error marked Permanent is not retried.
type Sink interface {
	Name() string
	Send(ctx context.Context, e Event) error
}

// permanentError is a failure no retry can fix (a 400 from the receiver,
// a command that does not exist).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error { return &permanentError{err} }

// retryAfterError asks for a specific delay before the next try
// (Telegram's 429 says how long).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// Options tune delivery. The zero value is the production setting.
type Options struct {
	Log        *zap.Logger
	Getenv     func(string) string // default os.Getenv
	HTTPClient *http.Client        // default: a client with a 10s timeout
	QueueSize  int                 // per sink; default 256
	Tries      int                 // tries per event; default 6
	Backoff    time.Duration       // first retry delay, doubled each time; default 1s
	MaxBackoff time.Duration       // default 1m
	// People are the config's people: a person's turn is sent to their
	// own Telegram chat too.
	People map[string]config.Person
	// Count, when set, is told every delivery's result per sink:
	// "delivered", "retried", "failed" (tries spent or permanent) or
	// "dropped" (queue full).
	Count func(sink, result string)
}

func (o *Options) defaults() {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 256
	}
	if o.Tries <= 0 {
		o.Tries = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Count == nil {
		o.Count = func(string, string) {}
	}
}

// Notifier fans events out to its sinks. Its methods are safe for
// concurrent use; a nil *Notifier accepts and drops everything.
type Notifier struct {
	queues []*queue
	copy   bool
	mu     sync.Mutex
	closed bool
}

// New builds the sinks cfg configures. A sink that cannot work as
// configured (Telegram without its token in the environment) is an error
// here, at start or reload, rather than a failure on every event later.
func New(cfg config.Notify, o Options) (*Notifier, error) {
	o.defaults()
	var sinks []Sink
	if len(cfg.Command) > 0 {
		sinks = append(sinks, &commandSink{argv: cfg.Command, timeout: 30 * time.Second})
	}
	if cfg.Webhook.Enabled() {
		sinks = append(sinks, &webhookSink{url: cfg.Webhook.URL, headers: cfg.Webhook.Headers, client: o.HTTPClient})
	}
	if cfg.Telegram.Enabled() {
		s, err := newTelegram(cfg.Telegram, o)
		if err != nil {
			return nil, err
		}
		sinks = append(sinks, s)
	}
	return NewWithSinks(sinks, cfg.CopySupervisor, o), nil
}

// NewWithSinks is New with sinks of the caller's choosing.
func NewWithSinks(sinks []Sink, copySupervisor bool, o Options) *Notifier {
	o.defaults()
	n := &Notifier{copy: copySupervisor}
	for _, s := range sinks {
		q := &queue{sink: s, o: o, ch: make(chan Event, o.QueueSize), stop: make(chan struct{}), done: make(chan struct{}),
			log: o.Log.With(zap.String("sink", s.Name()))}
		q.ctx, q.cancel = context.WithCancel(context.Background())
		go q.run()
		n.queues = append(n.queues, q)
	}
	return n
}

// Enabled reports whether any sink is configured.
func (n *Notifier) Enabled() bool { return n != nil && len(n.queues) > 0 }

// CopySupervisor reports whether entries are to be copied to the
// supervisor.
func (n *Notifier) CopySupervisor() bool { return n.Enabled() && n.copy }

// Notify queues e for every sink and returns at once.
func (n *Notifier) Notify(e Event) {
	if n == nil {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for _, q := range n.queues {
		q.put(e)
	}
}

// Close stops taking events and delivers what is queued until ctx ends;
// whatever is left then is dropped with a log line, and the error says
// how many events each sink did not get.
func (n *Notifier) Close(ctx context.Context) error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	for _, q := range n.queues {
		close(q.stop)
	}
	var lost []string
	for _, q := range n.queues {
		select {
		case <-q.done:
		case <-ctx.Done():
			q.cancel()
			<-q.done
		}
		q.cancel()
		if d := q.dropped.Load(); d > 0 {
			lost = append(lost, fmt.Sprintf("%s %d", q.sink.Name(), d))
		}
	}
	if len(lost) > 0 {
		return fmt.Errorf("notifications not delivered before the deadline: %s (%w)", strings.Join(lost, ", "), context.Cause(ctx))
	}
	return nil
}

// queue is one sink's bounded queue and its delivery goroutine.
type queue struct {
	sink   Sink
	o      Options
	log    *zap.Logger
	ch     chan Event
	stop   chan struct{} // closed by Close: deliver what is left, then end
	done   chan struct{}
	ctx    context.Context // cancelled when Close gives up waiting
	cancel context.CancelFunc
	// dropped counts the events given up at shutdown.
	dropped atomic.Int64
}

// put queues e, dropping the oldest queued event when the queue is full:
// the newest events say most about where a debate stands now.
func (q *queue) put(e Event) {
	for {
		select {
		case q.ch <- e:
			return
		default:
		}
		select {
		case old := <-q.ch:
			q.o.Count(q.sink.Name(), "dropped")
			q.log.Warn("notification queue full; dropped the oldest event", zap.Int("queue", cap(q.ch)),
				zap.String("kind", old.Kind), zap.String("debate", old.Debate), zap.Int("turn", old.Turn))
		default:
		}
	}
}

func (q *queue) run() {
	defer close(q.done)
	for {
		select {
		case e := <-q.ch:
			q.deliver(e)
		case <-q.stop:
			for {
				select {
				case e := <-q.ch:
					q.deliver(e)
				default:
					return
				}
			}
		}
	}
}

// deliver sends e, retrying with exponential backoff.
func (q *queue) deliver(e Event) {
	wait := q.o.Backoff
	for try := 1; ; try++ {
		if q.ctx.Err() != nil {
			q.dropped.Add(1)
			q.o.Count(q.sink.Name(), "dropped")
			q.log.Warn("notification dropped at shutdown", zap.String("kind", e.Kind), zap.String("debate", e.Debate))
			return
		}
		err := q.sink.Send(q.ctx, e)
		if err == nil {
			q.o.Count(q.sink.Name(), "delivered")
			if try > 1 {
				q.log.Info("notification delivered after retries", zap.String("kind", e.Kind), zap.String("debate", e.Debate), zap.Int("tries", try))
			}
			return
		}
		var perm *permanentError
		if errors.As(err, &perm) || try >= q.o.Tries {
			q.o.Count(q.sink.Name(), "failed")
			q.log.Error("notification failed; giving up on this event", zap.String("kind", e.Kind), zap.String("debate", e.Debate),
				zap.Int("tries", try), zap.Bool("permanent", perm != nil), zap.Error(err))
			return
		}
		delay := wait
		var ra *retryAfterError
		if errors.As(err, &ra) && ra.after > delay {
			delay = min(ra.after, q.o.MaxBackoff)
		}
		q.o.Count(q.sink.Name(), "retried")
		q.log.Warn("notification failed; retrying", zap.String("kind", e.Kind), zap.String("debate", e.Debate),
			zap.Int("try", try), zap.Duration("retry_in", delay), zap.Error(err))
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-q.ctx.Done():
			t.Stop()
		}
		wait = min(wait*2, q.o.MaxBackoff)
	}
}
