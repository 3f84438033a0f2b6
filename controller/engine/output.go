package engine

import "sync"

// startGate holds what the agent is doing until Started has returned.
// A session's output is read from the moment its process runs, often
// before Started is called, and what it is doing is reported only when
// it changes: a line told before a consumer knows the session started
// was dropped by it and never told again (an agent that prints once and
// thinks for a minute showed nothing for that minute). The last line held
// is told once the start has been.
type startGate struct {
	out func(string)

	mu      sync.Mutex
	open    bool
	held    string
	holding bool
}

// line tells out now, or holds it until opened. Both run under the lock
// so that a line told after the opening never overtakes the one held.
func (g *startGate) line(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.out(s)
		return
	}
	g.held, g.holding = s, true
}

// opened tells the line held, if any, and every later one at once.
func (g *startGate) opened() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	if g.holding {
		g.out(g.held)
		g.held, g.holding = "", false
	}
}
