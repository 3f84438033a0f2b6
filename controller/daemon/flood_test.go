package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// These tests run the daemon with its real timeouts: a keep-alive
// connection is closed after 30 s idle, a request's headers get 10 s.
// The deadlines they wait with are only there so that a daemon that
// leaves a client waiting fails instead of hanging; they are shorter
// than the idle timeout, which before issue 27 item 11 was the only
// thing that ever freed a place.
const promptly = DefaultIdleTimeout / 2

// rawConn is one client connection driven by hand, kept open between
// requests as a browser keeps it.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

// dialFrom connects to addr from the loopback address from ("" for any).
func dialFrom(t testing.TB, addr, from string) *rawConn {
	t.Helper()
	d := net.Dialer{Timeout: promptly}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %q: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// get sends a GET for path and reads the answer's head: the body is the
// caller's to read (a stream's never ends).
func (c *rawConn) get(path string) (*http.Response, error) {
	_ = c.SetDeadline(time.Now().Add(promptly))
	defer c.SetDeadline(time.Time{})
	host := c.RemoteAddr().String()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host); err != nil {
		return nil, err
	}
	return http.ReadResponse(c.r, nil)
}

// getAll sends a GET and reads the whole answer, leaving the connection
// open (idle, for the server).
func (c *rawConn) getAll(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := c.get(path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_ = c.SetReadDeadline(time.Now().Add(promptly))
	b, err := io.ReadAll(resp.Body)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// closedByServer reports whether the server has closed c: a read gets EOF
// (or a reset) rather than waiting.
func (c *rawConn) closedByServer(within time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(within))
	defer c.SetReadDeadline(time.Time{})
	_, err := c.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// openStreams opens n fleet event streams from the address from and
// returns those the daemon took, and how many it refused with 503.
func openStreams(t testing.TB, addr, from string, n int) (open []*rawConn, refused int) {
	t.Helper()
	for i := range n {
		c := dialFrom(t, addr, from)
		resp, err := c.get("/events")
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		switch resp.StatusCode {
		case http.StatusOK:
			open = append(open, c)
		case http.StatusServiceUnavailable:
			refused++
			c.Close()
		default:
			t.Fatalf("stream %d: %s", i, resp.Status)
		}
	}
	return open, refused
}

// metric is the value of the series name in the daemon's /metrics.
func metric(t testing.TB, addr, name string) float64 {
	t.Helper()
	c := dialFrom(t, addr, "")
	defer c.Close()
	code, body := c.getAll(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	return 0
}

// Issue 27, item 11: at the connection cap, with every place held by
// idle keep-alive connections and as many event streams as the daemon
// takes (and some more), a new client is served at once: the connection
// idle longest is closed to make room, the newest ones and the streams
// stay open, and the streams past the limit are refused with 503.
func TestNewClientServedPastIdleConnectionsAndStreams(t *testing.T) {
	d, file := httpDaemon(t, Options{})
	maxConns, maxStreams := d.o.HTTPMaxConns, d.o.MaxStreams
	if maxStreams > maxConns/2 {
		t.Fatalf("%d streams of %d connections: streams could hold every place", maxStreams, maxConns)
	}
	streams, refused := openStreams(t, d.Addr(), "", maxStreams+8)
	if len(streams) != maxStreams || refused != 8 {
		t.Fatalf("%d streams open and %d refused; want %d and 8", len(streams), refused, maxStreams)
	}
	idle := make([]*rawConn, maxConns)
	var firstIdle time.Time
	for i := range idle {
		idle[i] = dialFrom(t, d.Addr(), "")
		if code, _ := idle[i].getAll(t, "/healthz"); code != 200 {
			t.Fatalf("idle connection %d: %d", i, code)
		}
		if i == 0 {
			firstIdle = time.Now()
		}
	}

	client := &http.Client{Timeout: promptly}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + d.Addr() + "/api/debates")
	if err != nil {
		t.Fatalf("a new client behind %d idle connections and %d streams: %v", maxConns, maxStreams, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), file) {
		t.Fatalf("a new client: %s\n%s", resp.Status, body)
	}

	if !idle[0].closedByServer(promptly) || time.Since(firstIdle) >= DefaultIdleTimeout {
		t.Errorf("the connection idle longest was not closed to make room")
	}
	if code, _ := idle[len(idle)-1].getAll(t, "/healthz"); code != 200 {
		t.Errorf("the newest idle connection, asked again: %d", code)
	}
	for i, s := range streams {
		if s.closedByServer(10 * time.Millisecond) {
			t.Errorf("stream %d was closed to make room", i)
		}
	}
	if n := d.conns.open(); n > maxConns {
		t.Errorf("%d connections held, over the cap of %d", n, maxConns)
	}
	if n := metric(t, d.Addr(), "walkie_http_idle_closed_total"); n < float64(maxStreams) {
		t.Errorf("walkie_http_idle_closed_total %v, want at least %d", n, maxStreams)
	}
}

// One address that holds its share of the connections, each with a
// request in progress, is refused a new one with 429 and a body that
// says so, while another address is served; when every place is busy a
// new connection gets 503, and is served again once a place comes free.
func TestConnectionFloodFromOneAddressRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs a second loopback address (127.0.0.2), which only Linux routes by default")
	}
	d, _ := httpDaemon(t, Options{MaxStreams: 10000}) // streams are the requests that stay in progress
	maxConns, share := d.o.HTTPMaxConns, perAddrConns(d.o.HTTPMaxConns)
	flood, _ := openStreams(t, d.Addr(), "127.0.0.1", share)
	if len(flood) != share {
		t.Fatalf("%d streams open of %d", len(flood), share)
	}
	one := dialFrom(t, d.Addr(), "127.0.0.1")
	code, body := one.getAll(t, "/api/debates")
	if code != http.StatusTooManyRequests || !strings.Contains(body, fmt.Sprintf("127.0.0.1 holds %d connections", share)) {
		t.Errorf("one more from the flooding address: %d %q, want 429 saying why", code, body)
	}
	other := dialFrom(t, d.Addr(), "127.0.0.2")
	if code, body := other.getAll(t, "/api/debates"); code != 200 {
		t.Errorf("another address: %d %q", code, body)
	}
	other.Close()

	rest, _ := openStreams(t, d.Addr(), "127.0.0.2", maxConns-share)
	if len(rest) != maxConns-share {
		t.Fatalf("%d more streams of %d", len(rest), maxConns-share)
	}
	third := dialFrom(t, d.Addr(), "127.0.0.3")
	code, body = third.getAll(t, "/api/debates")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, fmt.Sprintf("all %d connections have a request in progress", maxConns)) {
		t.Errorf("with every place busy: %d %q, want 503 saying why", code, body)
	}

	flood[0].Close()
	sessiontest.WaitFor(t, promptly, "a place freed by a closed stream is given", func() bool {
		c := dialFrom(t, d.Addr(), "127.0.0.1")
		defer c.Close()
		code, _ := c.getAll(t, "/api/debates")
		return code == 200
	})
	for _, reason := range []string{"per-address", "busy"} {
		if n := metric(t, d.Addr(), `walkie_http_refused_total{reason="`+reason+`"}`); n < 1 {
			t.Errorf("%s refusals counted: %v", reason, n)
		}
	}
}

// The same flood in a daemon with 256 descriptors, where the cap is 64
// connections and 32 streams: 40 streams and 1,000 clients that keep
// their connections open once answered are all served, each in turn, a
// new client is served, the connections idle longest were closed to make
// room (long before the idle timeout), and a debate dropped in meanwhile
// converges: no descriptor the debates need is taken.
func TestConnectionFloodUnder256Descriptors(t *testing.T) {
	const clients = 1000
	dir := t.TempDir()
	h := startHelperDaemon(t, helperSpec{Dir: dir, NoFile: 256,
		Config: writeConfig(t, fakeAgent("fa", "--sign-from", "2"), fakeAgent("fb", "--sign-from", "2"))})
	streams, refused := openStreams(t, h.addr, "", 40)
	if len(streams) != 32 || refused != 8 {
		t.Fatalf("%d streams open and %d refused under 256 descriptors; want 32 and 8", len(streams), refused)
	}

	start := time.Now()
	var served, closed atomic.Int32
	var wg sync.WaitGroup
	conns := make([]net.Conn, clients)
	for i := range clients {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		conns[i] = c
		if _, err := fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", h.addr); err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		// Read the answer, then nothing more: the connection stays open
		// until the daemon closes it, or the test ends.
		wg.Go(func() {
			r := bufio.NewReader(c)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode == 200 {
				served.Add(1)
			}
			if _, err := r.ReadByte(); errors.Is(err, io.EOF) {
				closed.Add(1)
			}
		})
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	file := newDebate(t, dir, "flood", 3, "fa", "fb")

	sessiontest.WaitFor(t, promptly, "every client answered", func() bool { return served.Load() == clients })
	// All but those that still hold a place were closed by the daemon,
	// long before any of them had been idle for the idle timeout.
	sessiontest.WaitFor(t, promptly, "the idle connections closed to make room", func() bool { return closed.Load() >= clients-64 })
	if time.Since(start) >= DefaultIdleTimeout {
		t.Errorf("the flood took %v, past the idle timeout: connections were not closed to make room", time.Since(start))
	}
	c := dialFrom(t, h.addr, "")
	if code, body := c.getAll(t, "/api/debates"); code != 200 {
		t.Fatalf("a new client behind %d idle connections and 32 streams: %d %s", clients, code, body)
	}
	if n := metric(t, h.addr, "walkie_http_idle_closed_total"); n < clients-64 {
		t.Errorf("walkie_http_idle_closed_total %v, want at least %d", n, clients-64)
	}

	sessiontest.WaitFor(t, time.Minute, "the debate dropped in during the flood converged", func() bool {
		return status(t, file) == walkie.StatusConverged && settled(t, file)
	})
	checkRecord(t, file)
	for i, s := range streams {
		if s.closedByServer(10 * time.Millisecond) {
			t.Errorf("stream %d was closed", i)
		}
	}
	if h.logged("too many open files") {
		t.Errorf("the daemon ran out of descriptors:\n%s", strings.Join(h.lines(), "\n"))
	}
}
