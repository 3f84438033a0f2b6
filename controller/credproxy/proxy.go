// Package credproxy keeps the agents' API keys out of their sessions. It is
// a local HTTP proxy on loopback: each session gets a route of its own (a
// path prefix) and a stand-in key for each real one; the CLI is pointed at
// the route with the stand-in, and the proxy, which alone holds the real
// key, checks the stand-in, puts the real key in its place and forwards
// the call to the configured upstream. What the agent's shell can read
// (env, /proc/self/environ, the CLI's files in its HOME) holds only the
// stand-in, which is worth nothing once the session ends.
//
// clis.go knows how each preset's CLI takes its key and its base URL.
package credproxy

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Place is where an API takes its key.
type Place struct {
	// Header names the header ("x-api-key", "x-goog-api-key",
	// "Authorization"); Bearer puts "Bearer " before the key there.
	Header string
	Bearer bool
	// Query names a query parameter the key may come in instead
	// (Gemini's "key").
	Query string
}

// Credential is one real key and where it goes.
type Credential struct {
	Key   string
	Place Place
}

// Proxy is a running credential proxy. Its methods may be called from any
// goroutine.
type Proxy struct {
	ln  net.Listener
	srv *http.Server
	url string

	mu     sync.Mutex
	routes map[string]*route
}

// route is one session's way through: its upstream and, per credential,
// the stand-in the session holds.
type route struct {
	upstream *url.URL
	creds    []Credential
	standins []string
	rp       *httputil.ReverseProxy
}

// Start listens on a random loopback port.
func Start() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("credential proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, url: "http://" + ln.Addr().String(), routes: map[string]*route{}}
	// No write timeout: a model's answer streams for as long as it takes.
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy; calls in flight are cut.
func (p *Proxy) Close() error { return p.srv.Close() }

// Add opens a route to upstream for a session holding creds. It returns
// the base URL the CLI is to use in place of upstream (the upstream's path
// is kept behind it), one stand-in per credential, in order, and remove,
// which closes the route. The upstream must be https, or http on loopback
// (a local gateway, a test's fake model): a key is never sent in clear
// over a network.
func (p *Proxy) Add(upstream string, creds ...Credential) (base string, standins []string, remove func(), err error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" {
		return "", nil, nil, fmt.Errorf("credential proxy: upstream %q is not a URL", upstream)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname())) {
		return "", nil, nil, fmt.Errorf("credential proxy: upstream %s is not https: the real key would cross the network in clear", upstream)
	}
	if len(creds) == 0 {
		return "", nil, nil, errors.New("credential proxy: no key to hold")
	}
	id := random(12)
	r := &route{upstream: u, creds: creds}
	for range creds {
		r.standins = append(r.standins, "walkie-standin-"+random(24))
	}
	r.rp = &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { r.rewrite(pr, "/"+id) },
		FlushInterval: -1, // server-sent events go out as they come
		ErrorHandler:  unreachable,
	}
	p.mu.Lock()
	p.routes[id] = r
	p.mu.Unlock()
	remove = func() {
		p.mu.Lock()
		delete(p.routes, id)
		p.mu.Unlock()
	}
	return p.url + "/" + id + strings.TrimRight(u.Path, "/"), r.standins, remove, nil
}

// unreachable answers a call the upstream could not be reached for (or
// that broke off) as the network would have: the connection closes with
// no answer. A 502 of the proxy's own would read to the CLI, and to
// walkie's judge, as the model's server failing, where the CLI's own
// handling of a network gone (its retries, its wait) is what applies.
func unreachable(w http.ResponseWriter, _ *http.Request, err error) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, herr := hj.Hijack(); herr == nil {
			conn.Close()
			return
		}
	}
	http.Error(w, "walkie credential proxy: upstream: "+err.Error(), http.StatusBadGateway)
}

// ServeHTTP finds the request's route by its first path element and lets
// it through only with one of the route's stand-ins.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	id, _, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/"), "/")
	p.mu.Lock()
	r := p.routes[id]
	p.mu.Unlock()
	if r == nil || !r.admits(req) {
		http.Error(w, "walkie credential proxy: no such session, or not its key", http.StatusUnauthorized)
		return
	}
	r.rp.ServeHTTP(w, req)
}

// admits reports whether req carries one of the route's stand-ins where
// its credential goes.
func (r *route) admits(req *http.Request) bool {
	for i, c := range r.creds {
		if got, ok := carried(req, c.Place); ok && equal(got, r.standins[i]) {
			return true
		}
	}
	return false
}

// rewrite sends the request upstream with the real keys in place of the
// stand-ins: the route's prefix goes, the upstream's own path (its base
// URL's, which the CLI was given behind the prefix) stays.
func (r *route) rewrite(pr *httputil.ProxyRequest, prefix string) {
	out := pr.Out
	out.URL.Scheme, out.URL.Host = r.upstream.Scheme, r.upstream.Host
	out.URL.Path = strings.TrimPrefix(out.URL.Path, prefix)
	out.URL.RawPath = ""
	out.Host = r.upstream.Host
	for i, c := range r.creds {
		got, ok := carried(out, c.Place)
		inQuery := queryOf(out, c.Place) != ""
		// Whatever else the request holds there is no key of ours: it
		// goes either way.
		clear(out, c.Place)
		if !ok || !equal(got, r.standins[i]) {
			continue
		}
		if c.Place.Header != "" {
			v := c.Key
			if c.Place.Bearer {
				v = "Bearer " + v
			}
			out.Header.Set(c.Place.Header, v)
		}
		if inQuery {
			q := out.URL.Query()
			q.Set(c.Place.Query, c.Key)
			out.URL.RawQuery = q.Encode()
		}
	}
}

// carried is the key a request carries in place, if any.
func carried(req *http.Request, pl Place) (string, bool) {
	if pl.Header != "" {
		if v := req.Header.Get(pl.Header); v != "" {
			if pl.Bearer {
				b, ok := strings.CutPrefix(v, "Bearer ")
				return b, ok
			}
			return v, true
		}
	}
	if v := queryOf(req, pl); v != "" {
		return v, true
	}
	return "", false
}

func queryOf(req *http.Request, pl Place) string {
	if pl.Query == "" {
		return ""
	}
	return req.URL.Query().Get(pl.Query)
}

func clear(req *http.Request, pl Place) {
	if pl.Header != "" {
		req.Header.Del(pl.Header)
	}
	if pl.Query != "" {
		q := req.URL.Query()
		q.Del(pl.Query)
		req.URL.RawQuery = q.Encode()
	}
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}
