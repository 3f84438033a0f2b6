package daemon

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// The daemon holds a bounded number of HTTP connections, so that no
// client can take the descriptors its debates need. At the cap a client
// must still be answered at once: a thousand idle keep-alive connections
// left a new client waiting 88 s, and 64 event streams under a 256
// descriptor limit took every place (issue 27, item 11). So a new
// connection takes the place of the one idle longest: a keep-alive
// connection between requests, or one that has sent no whole request
// for silentGrace. One address holds at most perAddr of the places.
// With none idle, a new connection waits for one whose request came in
// the last answerWait to be answered (a burst of requests); when every
// place has a request in progress for longer, or a connection that stays
// silent, it gets a 503 (429 when its own address holds its share) that
// says so, instead of waiting in the kernel's queue. The accept loop is
// never held longer than answerWait by one connection, and a client
// cannot renew the wait without a place of its own.

// silentGrace is how long a connection may go without sending a whole
// request before its place may be given to another: net/http's own
// Shutdown treats a new connection as idle after the same 5 s.
const silentGrace = 5 * time.Second

// answerWait is how long a request is expected to take to be answered,
// for a new connection waiting for a place.
const answerWait = time.Second

// refusalsAtOnce bounds the refusals being written at once: each holds a
// descriptor beyond the cap for a moment. Past it a connection is closed
// without a word.
const refusalsAtOnce = 16

// refusalWait bounds the writing of a refusal, and the reading of what
// the client sent meanwhile (read so that closing does not reset the
// connection before the client reads the answer).
const refusalWait = 2 * time.Second

// admission admits the daemon's HTTP connections under its caps. Its
// listener admits, makes room or refuses at Accept; the server's
// ConnState hook (track) tells it which connections are idle.
type admission struct {
	max, perAddr int
	log          *zap.Logger // sampled: a flood must not flood the log
	refusing     chan struct{}
	refusals     sync.WaitGroup
	closed       chan struct{} // the listener was closed: stop waiting
	closeOnce    sync.Once

	mu      sync.Mutex
	conns   map[net.Conn]*connEntry
	byAddr  map[string]int
	changed chan struct{} // closed, and made again, when a connection goes idle or away

	closedIdle prometheus.Counter
	refused    *prometheus.CounterVec
}

type connEntry struct {
	addr  string
	state http.ConnState
	since time.Time // when it took its state: accepted, became idle, or active
}

func newAdmission(max, perAddr int, log *zap.Logger, reg prometheus.Registerer) *admission {
	a := &admission{max: max, perAddr: perAddr, log: log, refusing: make(chan struct{}, refusalsAtOnce), closed: make(chan struct{}),
		conns: map[net.Conn]*connEntry{}, byAddr: map[string]int{}, changed: make(chan struct{}),
		closedIdle: prometheus.NewCounter(prometheus.CounterOpts{Name: "walkie_http_idle_closed_total",
			Help: "HTTP connections closed while idle to admit a new one at the connection cap."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "walkie_http_refused_total",
			Help: "HTTP connections refused because every place was busy (busy: 503) or their address held its share (per-address: 429)."}, []string{"reason"}),
	}
	reg.MustRegister(a.closedIdle, a.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "walkie_http_connections",
		Help: "HTTP connections held now."}, func() float64 { return float64(a.open()) }))
	return a
}

// listener admits the connections ln accepts.
func (a *admission) listener(ln net.Listener) net.Listener { return &admitListener{Listener: ln, a: a} }

type admitListener struct {
	net.Listener
	a *admission
}

// Close stops the listener, and any wait for a place.
func (l *admitListener) Close() error {
	l.a.closeOnce.Do(func() { close(l.a.closed) })
	return l.Listener.Close()
}

// Accept returns the next connection admitted; refused ones are answered
// in the background and never reach the server.
func (l *admitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.a.admit(c) {
			return c, nil
		}
	}
}

// open is the number of connections held.
func (a *admission) open() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.conns)
}

// admit takes c in. At its address's share or the cap it takes the place
// of the connection idle longest (one closed frees a place of both);
// with none idle, it waits for a request that came in lately to be
// answered, and is refused when there is none.
func (a *admission) admit(c net.Conn) bool {
	addr := remoteHost(c)
	for {
		a.mu.Lock()
		scope, full := a.fullLocked(addr)
		if !full {
			a.takeLocked(c, addr)
			a.mu.Unlock()
			return true
		}
		now := time.Now()
		idlest, soonest := a.idlestLocked(scope, now)
		if idlest != nil {
			a.dropLocked(idlest)
			a.takeLocked(c, addr)
			a.mu.Unlock()
			idlest.Close()
			a.closedIdle.Inc()
			a.log.Debug("closed the http connection idle longest to admit a new one", zap.String("remote", addr))
			return true
		}
		changed := a.changed
		a.mu.Unlock()
		if soonest.IsZero() {
			a.refuseFull(c, addr, scope)
			return false
		}
		t := time.NewTimer(soonest.Sub(now))
		select {
		case <-changed:
		case <-t.C:
		case <-a.closed:
			t.Stop()
			c.Close()
			return false
		}
		t.Stop()
	}
}

// fullLocked says whether a connection from addr finds no free place: its
// address at its share (scope addr) or the daemon at its cap (scope "").
func (a *admission) fullLocked(addr string) (scope string, full bool) {
	switch {
	case a.byAddr[addr] >= a.perAddr:
		return addr, true
	case len(a.conns) >= a.max:
		return "", true
	}
	return "", false
}

func (a *admission) takeLocked(c net.Conn, addr string) {
	a.conns[c] = &connEntry{addr: addr, state: http.StateNew, since: time.Now()}
	a.byAddr[addr]++
}

// refuseFull refuses c for want of a place in scope.
func (a *admission) refuseFull(c net.Conn, addr, scope string) {
	if scope != "" {
		a.refuse(c, http.StatusTooManyRequests, "per-address", fmt.Sprintf(
			"walkie serve: %s holds %d connections, its most, each with a request in progress; close some, or try again shortly\n", addr, a.perAddr))
		return
	}
	a.refuse(c, http.StatusServiceUnavailable, "busy", fmt.Sprintf(
		"walkie serve: all %d connections have a request in progress; try again shortly\n", a.max))
}

// idlestLocked is the connection (of scope, unless scope is "") idle the
// longest: between requests, or silent for silentGrace. With none, soonest
// is when the wait for a request that came in lately ends (it may be
// answered sooner); zero when there is none to wait for.
func (a *admission) idlestLocked(scope string, now time.Time) (idlest net.Conn, soonest time.Time) {
	var since time.Time
	for c, e := range a.conns {
		if scope != "" && e.addr != scope {
			continue
		}
		age := now.Sub(e.since)
		switch {
		case e.state == http.StateIdle, e.state == http.StateNew && age >= silentGrace:
			if idlest == nil || e.since.Before(since) {
				idlest, since = c, e.since
			}
		case age < answerWait:
			if at := e.since.Add(answerWait); soonest.IsZero() || at.Before(soonest) {
				soonest = at
			}
		}
	}
	return idlest, soonest
}

// dropLocked forgets c, whose place is free at once; the caller closes it.
func (a *admission) dropLocked(c net.Conn) {
	e := a.conns[c]
	delete(a.conns, c)
	if a.byAddr[e.addr]--; a.byAddr[e.addr] <= 0 {
		delete(a.byAddr, e.addr)
	}
}

// track is the server's ConnState hook.
func (a *admission) track(c net.Conn, s http.ConnState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.conns[c]
	if e == nil {
		return // closed to make room: its place is already given
	}
	e.state, e.since = s, time.Now()
	switch s {
	case http.StateClosed, http.StateHijacked:
		a.dropLocked(c)
	case http.StateActive:
		return
	}
	close(a.changed) // a place, or an idle connection, for a waiting one
	a.changed = make(chan struct{})
}

// refuse answers c with code and body, then closes it, in the
// background; the answer is all HTTP/1.1 a client needs to read it, and
// carries the headers every answer of the daemon does.
func (a *admission) refuse(c net.Conn, code int, reason, body string) {
	a.refused.WithLabelValues(reason).Inc()
	a.log.Warn("http connection refused: "+reason, zap.Int("status", code), zap.String("remote", remoteHost(c)))
	select {
	case a.refusing <- struct{}{}:
	default:
		c.Close()
		return
	}
	a.refusals.Go(func() {
		defer func() { <-a.refusing }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(refusalWait))
		_, err := fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"+
			"Retry-After: 5\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"+
			"Cross-Origin-Resource-Policy: same-origin\r\nContent-Security-Policy: %s\r\n\r\n%s",
			code, http.StatusText(code), len(body), contentSecurityPolicy, body)
		if tc, ok := c.(*net.TCPConn); ok && err == nil {
			_ = tc.CloseWrite()
			_, _ = io.Copy(io.Discard, io.LimitReader(c, maxHeaderBytes))
		}
	})
}

// wait waits for the refusals being written.
func (a *admission) wait() { a.refusals.Wait() }

// remoteHost is the address c comes from, without its port.
func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}
