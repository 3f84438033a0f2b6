package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// BookVersion is the version of the book's JSON this code reads and
// writes.
const BookVersion = 1

// Book is the ledger's content: per agent, what the limits are counted
// against. It is plain data; every method is a pure function of it and
// its arguments, so the rules are tested without a file or a clock.
type Book struct {
	Version int                 `json:"version"`
	Agents  map[string]*Account `json:"agents,omitempty"`
}

// Account is one agent's line of the book.
type Account struct {
	// Starts are the sessions started within the last window, oldest
	// first: what per_agent_turns_per_hour counts.
	Starts []time.Time `json:"starts,omitempty"`
	// Running are the sessions in progress: per_agent_sessions.
	Running []Hold `json:"running,omitempty"`
	// Day is the local date SpentUSD is for ("2026-12-01"):
	// per_agent_daily_usd.
	Day      string  `json:"day,omitempty"`
	SpentUSD float64 `json:"spent_usd,omitempty"`
}

// Hold is one session slot taken and not yet given back.
type Hold struct {
	ID string `json:"id"`
	// Holder is the process that took it: a hold whose process is gone
	// (killed, crashed) is dropped at the next look, so a dead walkie
	// never keeps an agent's slot.
	Holder session.ProcIdentity `json:"holder"`
	At     time.Time            `json:"at"`
}

// Held says why an agent may not start a session now: which limit, and
// until when. It is the error of a session refused by a limit.
type Held struct {
	Agent string
	// Limit is the config key that holds it back: max_sessions,
	// per_agent_sessions, per_agent_turns_per_hour, per_agent_daily_usd.
	Limit string
	// Why says it in one line a person understands.
	Why string
	// Until is when the limit lets go by itself; zero when it waits for
	// a session to end.
	Until time.Time
}

func (h *Held) Error() string { return h.Why }

// The limits, by their config key.
const (
	LimitSessions         = "max_sessions"
	LimitAgentSessions    = "per_agent_sessions"
	LimitAgentTurnsByHour = "per_agent_turns_per_hour"
	LimitAgentDailyUSD    = "per_agent_daily_usd"
)

// account is agent's line, made when missing.
func (b *Book) account(agent string) *Account {
	if b.Agents == nil {
		b.Agents = map[string]*Account{}
	}
	a := b.Agents[agent]
	if a == nil {
		a = &Account{}
		b.Agents[agent] = a
	}
	return a
}

// Prune drops what no longer counts at now: starts older than the window,
// holds whose process is gone (alive says which are not), and a day's
// spending once the day is over. It reports whether anything changed.
func (b *Book) Prune(now time.Time, window time.Duration, alive func(session.ProcIdentity) bool) bool {
	changed := false
	cut, today := now.Add(-window), day(now)
	for agent, a := range b.Agents {
		i := 0
		for i < len(a.Starts) && !a.Starts[i].After(cut) {
			i++
		}
		if i > 0 {
			a.Starts, changed = slices.Delete(a.Starts, 0, i), true
		}
		if n := len(a.Running); n > 0 {
			a.Running = slices.DeleteFunc(a.Running, func(h Hold) bool { return !alive(h.Holder) })
			changed = changed || len(a.Running) != n
		}
		if a.Day != "" && a.Day != today {
			a.Day, a.SpentUSD, changed = "", 0, true
		}
		if len(a.Starts) == 0 && len(a.Running) == 0 && a.Day == "" {
			delete(b.Agents, agent)
			changed = true
		}
	}
	return changed
}

// Admit checks agent against lim's per-agent limits at now; nil admits
// it. Only the per-agent limits are the book's: max_sessions counts one
// process's sessions (the Limiter's).
func (b *Book) Admit(agent string, lim config.Limits, now time.Time, window time.Duration) *Held {
	a := b.Agents[agent]
	if a == nil {
		a = &Account{}
	}
	if n := lim.PerAgentSessions[agent]; n > 0 && len(a.Running) >= n {
		return &Held{Agent: agent, Limit: LimitAgentSessions,
			Why: fmt.Sprintf("held by per_agent_sessions: %s runs %d of its %d sessions at once on this machine; until one ends", agent, len(a.Running), n)}
	}
	if rate := lim.PerAgentTurnsPerHour[agent]; rate > 0 && len(a.Starts) >= rate {
		// The window must lose len-rate+1 starts; the last of those to
		// go is Starts[len-rate].
		until := a.Starts[len(a.Starts)-rate].Add(window)
		return &Held{Agent: agent, Limit: LimitAgentTurnsByHour, Until: until,
			Why: fmt.Sprintf("held by per_agent_turns_per_hour: %s started %d sessions in the last %s (limit %d); next at %s",
				agent, len(a.Starts), window, rate, until.Local().Format(time.TimeOnly))}
	}
	if budget := lim.PerAgentDailyUSD[agent]; budget > 0 && a.Day == day(now) && a.SpentUSD >= budget {
		until := nextDay(now)
		return &Held{Agent: agent, Limit: LimitAgentDailyUSD, Until: until,
			Why: fmt.Sprintf("held by per_agent_daily_usd: %s spent %s of its %s today; until %s",
				agent, walkie.Money(a.SpentUSD), walkie.Money(budget), until.Local().Format(time.DateTime))}
	}
	return nil
}

// Take records a session of agent started at now by holder, and returns
// its hold.
func (b *Book) Take(agent string, now time.Time, holder session.ProcIdentity, id string) Hold {
	a := b.account(agent)
	h := Hold{ID: id, Holder: holder, At: now}
	i, _ := slices.BinarySearchFunc(a.Starts, now, func(x, t time.Time) int { return x.Compare(t) })
	a.Starts = slices.Insert(a.Starts, i, now)
	a.Running = append(a.Running, h)
	return h
}

// Give ends agent's session h, which cost usd (0 when not known), spent
// at now.
func (b *Book) Give(agent string, h Hold, usd float64, now time.Time) {
	a := b.account(agent)
	a.Running = slices.DeleteFunc(a.Running, func(x Hold) bool { return x.ID == h.ID })
	if usd > 0 {
		if today := day(now); a.Day != today {
			a.Day, a.SpentUSD = today, 0
		}
		a.SpentUSD += usd
	}
}

// Forget takes back a hold whose session never started: its slot and its
// start, so a grant the caller gave up on costs nothing.
func (b *Book) Forget(agent string, h Hold) {
	a := b.account(agent)
	a.Running = slices.DeleteFunc(a.Running, func(x Hold) bool { return x.ID == h.ID })
	if i := slices.IndexFunc(a.Starts, func(t time.Time) bool { return t.Equal(h.At) }); i >= 0 {
		a.Starts = slices.Delete(a.Starts, i, i+1)
	}
}

// day is the local date of t: the daily budget's day.
func day(t time.Time) string { return t.Local().Format(time.DateOnly) }

// nextDay is the local midnight after t.
func nextDay(t time.Time) time.Time {
	y, m, d := t.Local().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.Local)
}

// ParseBook reads a book's JSON. Empty data is an empty book; anything
// else must be a book of this version, each account well formed.
func ParseBook(data []byte) (*Book, error) {
	b := &Book{Version: BookVersion}
	if len(bytes.TrimSpace(data)) == 0 {
		return b, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(b); err != nil {
		return nil, fmt.Errorf("not a ledger of limits: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a ledger of limits: data after the book")
	}
	if b.Version != BookVersion {
		return nil, fmt.Errorf("ledger version %d; this walkie reads version %d", b.Version, BookVersion)
	}
	for agent, a := range b.Agents {
		switch {
		case a == nil:
			return nil, fmt.Errorf("agent %q: no account", agent)
		case !slices.IsSortedFunc(a.Starts, func(x, y time.Time) int { return x.Compare(y) }):
			return nil, fmt.Errorf("agent %q: starts out of order", agent)
		case a.SpentUSD < 0 || a.SpentUSD != a.SpentUSD:
			return nil, fmt.Errorf("agent %q: spent %v", agent, a.SpentUSD)
		}
	}
	return b, nil
}

// Marshal is the book's JSON, as the ledger file holds it.
func (b *Book) Marshal() []byte {
	b.Version = BookVersion
	out, _ := json.MarshalIndent(b, "", "  ")
	return append(out, '\n')
}
