package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
)

var (
	me   = session.ProcIdentity{Pid: 100, StartTicks: 1}
	dead = session.ProcIdentity{Pid: 200, StartTicks: 2}
)

// onlyMe is alive for the test's own holder.
func onlyMe(id session.ProcIdentity) bool { return id == me }

// Each limit holds an agent back on its own, says which it is and until
// when, and lets go at the moment it should.
func TestBookAdmit(t *testing.T) {
	noon := time.Date(2026, 12, 1, 12, 0, 0, 0, time.Local)
	lim := config.Limits{
		PerAgentSessions:     map[string]int{"a": 1},
		PerAgentTurnsPerHour: map[string]int{"b": 2},
		PerAgentDailyUSD:     map[string]float64{"c": 5},
	}
	for _, c := range []struct {
		name  string
		setup func(b *Book)
		agent string
		at    time.Time
		limit string
		until time.Time
		why   string
	}{
		{"free", func(*Book) {}, "a", noon, "", time.Time{}, ""},
		{"a running", func(b *Book) { b.Take("a", noon.Add(-time.Minute), me, "1") }, "a", noon, LimitAgentSessions, time.Time{},
			"held by per_agent_sessions: a runs 1 of its 1 sessions at once on this machine; until one ends"},
		{"a given back", func(b *Book) { b.Give("a", b.Take("a", noon.Add(-time.Minute), me, "1"), 0, noon) }, "a", noon, "", time.Time{}, ""},
		{"a held by a dead process", func(b *Book) { b.Take("a", noon.Add(-time.Minute), dead, "1") }, "a", noon, "", time.Time{}, ""},
		{"b twice in the hour", func(b *Book) {
			b.Give("b", b.Take("b", noon.Add(-50*time.Minute), me, "1"), 0, noon)
			b.Give("b", b.Take("b", noon.Add(-10*time.Minute), me, "2"), 0, noon)
		}, "b", noon, LimitAgentTurnsByHour, noon.Add(10 * time.Minute), "held by per_agent_turns_per_hour: b started 2 sessions in the last 1h0m0s (limit 2); next at 12:10:00"},
		{"b once in the hour", func(b *Book) {
			b.Give("b", b.Take("b", noon.Add(-70*time.Minute), me, "1"), 0, noon)
			b.Give("b", b.Take("b", noon.Add(-10*time.Minute), me, "2"), 0, noon)
		}, "b", noon, "", time.Time{}, ""},
		{"c spent its day", func(b *Book) { b.Give("c", b.Take("c", noon.Add(-time.Hour), me, "1"), 5.01, noon) }, "c", noon, LimitAgentDailyUSD,
			time.Date(2026, 12, 2, 0, 0, 0, 0, time.Local), "held by per_agent_daily_usd: c spent $5.01 of its $5.00 today; until 2026-12-02 00:00:00"},
		{"c spent yesterday", func(b *Book) { b.Give("c", b.Take("c", noon.Add(-24*time.Hour), me, "1"), 9, noon.Add(-24*time.Hour)) }, "c", noon, "", time.Time{}, ""},
		{"c under its budget", func(b *Book) { b.Give("c", b.Take("c", noon.Add(-time.Hour), me, "1"), 4.99, noon) }, "c", noon, "", time.Time{}, ""},
		{"another agent's limit", func(b *Book) { b.Take("a", noon, me, "1") }, "b", noon, "", time.Time{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &Book{}
			c.setup(b)
			b.Prune(c.at, time.Hour, onlyMe)
			h := b.Admit(c.agent, lim, c.at, time.Hour)
			switch {
			case c.limit == "" && h != nil:
				t.Fatalf("held: %s", h.Why)
			case c.limit == "":
				return
			case h == nil:
				t.Fatalf("admitted, want held by %s", c.limit)
			}
			if h.Limit != c.limit || !h.Until.Equal(c.until) || h.Why != c.why {
				t.Errorf("held by %s until %s: %q\nwant %s until %s: %q", h.Limit, h.Until, h.Why, c.limit, c.until, c.why)
			}
		})
	}
}

// A slot taken back (its session never started) costs nothing: neither
// the slot nor the start.
func TestBookForget(t *testing.T) {
	now := time.Now()
	b := &Book{}
	h := b.Take("a", now, me, "x")
	b.Forget("a", h)
	b.Prune(now, time.Hour, onlyMe)
	if len(b.Agents) != 0 {
		t.Errorf("book after a forgotten slot: %+v", b.Agents["a"])
	}
}

// The book's file is walkie's own: whatever is in it is read, or refused
// with what is wrong; it never panics, and what it reads it writes back
// the same.
func TestParseBook(t *testing.T) {
	for _, c := range []struct{ name, data, err string }{
		{"empty", "", ""},
		{"a book", `{"version":1,"agents":{"a":{"starts":["2026-12-01T12:00:00Z"],"day":"2026-12-01","spent_usd":1.5}}}`, ""},
		{"not json", "{", "not a ledger of limits"},
		{"unknown key", `{"version":1,"agent":{}}`, "unknown field"},
		{"version", `{"version":2}`, "ledger version 2"},
		{"no account", `{"version":1,"agents":{"a":null}}`, `agent "a": no account`},
		{"out of order", `{"version":1,"agents":{"a":{"starts":["2026-12-01T12:00:00Z","2026-12-01T11:00:00Z"]}}}`, "starts out of order"},
		{"negative spending", `{"version":1,"agents":{"a":{"spent_usd":-1}}}`, "spent -1"},
		{"two books", `{"version":1}{"version":1}`, "data after the book"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := ParseBook([]byte(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseBook(b.Marshal())
			if err != nil || string(again.Marshal()) != string(b.Marshal()) {
				t.Errorf("round trip: %v\n%s", err, again.Marshal())
			}
		})
	}
}

func FuzzParseBook(f *testing.F) {
	f.Add([]byte(`{"version":1,"agents":{"a":{"starts":["2026-12-01T12:00:00Z"],"running":[{"id":"x","holder":{"pid":1,"start_ticks":2},"at":"2026-12-01T12:00:00Z"}],"day":"2026-12-01","spent_usd":1.5}}}`))
	f.Add([]byte(""))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBook(data)
		if err != nil {
			return
		}
		if _, err := ParseBook(b.Marshal()); err != nil {
			t.Fatalf("a book read back fails: %v", err)
		}
	})
}

// A ledger file that is not a book refuses every slot with the file and
// the fix, rather than counting from nothing as if nobody had run.
func TestLedgerFileRefusedWhenDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(path, []byte("{not a book"), 0o600); err != nil {
		t.Fatal(err)
	}
	l := NewLimiter(config.Limits{}, 0, Open(path), nil)
	defer l.Close()
	_, _, err := l.Try("a")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("Try on a damaged ledger: %v", err)
	}
}
