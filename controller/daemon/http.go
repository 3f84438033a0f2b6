package daemon

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/fleet"
	"github.com/walkie-sh/walkie/walkie"
)

// Debates lists every debate the page shows, sorted by file: the
// daemon's own, and those of the registry outside its directory.
func (d *Daemon) Debates() []DebateView {
	d.mu.Lock()
	ws := make([]*worker, 0, len(d.workers))
	for _, w := range d.workers {
		ws = append(ws, w)
	}
	out := make([]DebateView, 0, len(ws)+len(d.externals))
	for _, x := range d.externals {
		if _, own := d.workers[x.reg.File]; !own && x.view.File != "" {
			v := x.view
			v.Elsewhere = true
			out = append(out, v)
		}
	}
	d.mu.Unlock()
	now := time.Now()
	for _, w := range ws {
		out = append(out, w.snapshot(now))
	}
	slices.SortFunc(out, func(a, b DebateView) int { return strings.Compare(a.File, b.File) })
	return out
}

// Bounds of a request beyond its headers' (daemon.go): its response must
// be written within responseTimeout (an event stream sets a deadline of
// its own for each write instead: fleet's stream.write), and a body,
// which only the POST routes read, within bodyTimeout. There is no
// ReadTimeout: it would end an event stream's request.
const (
	responseTimeout = time.Minute
	bodyTimeout     = 10 * time.Second
)

// perAddrConns is how many of the connections one address may hold: most
// of them (a person's browser and scripts share one), never all.
func perAddrConns(maxConns int) int { return max(maxConns*3/4, 1) }

// defaultMaxStreams leaves at least half of the connections to requests.
func defaultMaxStreams(maxConns int) int { return min(fleet.DefaultMaxStreams, max(maxConns/2, 1)) }

// startHTTP serves the HTTP API on d's listener, if it has one. stop
// shuts the server down and waits for it.
func (d *Daemon) startHTTP() (stop func()) {
	if d.ln == nil {
		return func() {}
	}
	srv := &http.Server{Handler: d.handler(), ReadHeaderTimeout: headerTimeout, WriteTimeout: responseTimeout,
		IdleTimeout: d.o.HTTPIdleTimeout, MaxHeaderBytes: maxHeaderBytes, ConnState: d.conns.track,
		ErrorLog: zap.NewStdLog(d.log.Named("http"))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(d.conns.listener(d.ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("http server stopped", zap.Error(err))
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		d.conns.wait()
	}
}

// summary is the line under the page's title.
func (d *Daemon) summary() string {
	return fmt.Sprintf("serving %s · %s running", d.dir, walkie.Count(d.limits.Running(), "session", "sessions"))
}

// route is one entry of the HTTP API. The mux is built from routes()
// alone, so the tests that attack every route see a new one the moment
// it is added.
type route struct {
	pattern string // a ServeMux pattern, method first
	public  bool   // served without the token: holds no debate data
	// page: a page a person opens; without the token it shows the prompt
	// for it, and nothing else.
	page bool
	h    http.Handler
}

// routes is the HTTP API:
//
//	GET  /healthz          liveness; never needs the token
//	GET  /api/debates      every debate as JSON
//	GET  /metrics          Prometheus
//	GET  /                 the fleet page: every debate, live
//	GET  /events           its event stream
//	GET  /d/KEY            one debate's page
//	GET  /d/KEY/events     its event stream (Last-Event-ID: SEQ.TURNS)
//	GET  /d/KEY/transcript/N  attempt N's transcript (its last MiB)
//	GET  /t/KEY            a trials directory's distribution, drawn
//	GET  /api/session      with the token: the page's session cookie
//	GET  /static/NAME      the pages' script and style sheet
//	GET  /favicon.ico      nothing (204)
//	POST /api/halt         {"file", "reason"}
//	POST /api/resume       {"file"}
//	POST /api/extend       {"file", "rounds"}
//	POST /api/note         {"file", "text"}: a supervisor entry
//
// Every request also passes secure (Host, headers, and for a POST the
// origin and CSRF checks), whatever its route.
func (d *Daemon) routes() []route {
	hf := func(f func(http.ResponseWriter, *http.Request)) http.Handler { return http.HandlerFunc(f) }
	return []route{
		{"GET /healthz", true, false, hf(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"status": "ok", "pid": os.Getpid(), "dir": d.dir,
				"uptime_s": time.Since(d.started).Round(time.Second).Seconds()})
		})},
		{"GET /api/debates", false, false, hf(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, map[string]any{"dir": d.dir, "sessions_running": d.limits.Running(), "debates": d.Debates()})
		})},
		{"GET /metrics", false, false, promhttp.HandlerFor(d.metrics.reg, promhttp.HandlerOpts{})},
		{"GET /{$}", false, true, hf(d.page.FleetPage)},
		{"GET /events", false, false, hf(d.page.FleetEvents)},
		{"GET /d/{key}", false, true, hf(d.page.DebatePage)},
		{"GET /d/{key}/events", false, false, hf(d.page.DebateEvents)},
		{"GET /d/{key}/transcript/{n}", false, true, hf(d.page.Transcript)},
		{"GET /t/{key}", false, true, hf(d.page.TrialsPage)},
		{"GET /api/session", false, false, hf(d.startSession)},
		{"GET /favicon.ico", true, false, hf(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent) // none: a browser asks for it, and a 404 is a console error
		})},
		{"GET /static/{name}", true, false, hf(func(w http.ResponseWriter, r *http.Request) {
			http.ServeFileFS(w, r, fleet.Static, r.PathValue("name"))
		})},
		{"POST /api/halt", false, false, d.control(d.halt)},
		{"POST /api/resume", false, false, d.control(d.resume)},
		{"POST /api/extend", false, false, d.control(d.extend)},
		{"POST /api/note", false, false, d.control(d.note)},
	}
}

// handler is the HTTP API behind its checks.
func (d *Daemon) handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range d.routes() {
		h := rt.h
		if !rt.public && d.o.Token != "" {
			h = d.requireToken(h, rt.page)
		}
		mux.Handle(rt.pattern, h)
	}
	return d.secure(mux)
}

// CSRFHeader carries the page's CSRF token on a state-changing request.
const CSRFHeader = "X-Walkie-CSRF"

// contentSecurityPolicy lets the page load the daemon's own script, style
// sheet and API and nothing else: no inline script, no other origin, no
// framing. An agent's text that escaped escaping still could not run.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// secure puts the headers every response carries, refuses a Host the
// daemon does not answer for (DNS rebinding), and lets a request that may
// change state through only from the daemon's own page or a non-browser
// client with the right token. It sends no CORS headers, so a page of
// another origin can neither read a response nor pass a preflight.
func (d *Daemon) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !d.hosts.allowed(r.Host, d.cfg.Load().Serve.AllowedHosts) {
			d.refuse(w, r, http.StatusMisdirectedRequest, "http request refused: host not allowed",
				"walkie serve does not answer for this Host; add it with --allowed-host or serve.allowed_hosts (docs/operations.md)")
			return
		}
		if !safeMethod(r.Method) {
			// A body sent a byte a minute must not hold the connection.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(bodyTimeout))
			if code, msg := d.mayChange(r); code != 0 {
				if code == http.StatusUnauthorized {
					h.Set("WWW-Authenticate", `Bearer realm="walkie"`)
				}
				d.refuse(w, r, code, "http request refused: "+msg, msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// safeMethod is a method that changes nothing (the routes never do on these).
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// mayChange checks a request that may change state, on any route: it must
// not come from another site (Sec-Fetch-Site, else Origin against Host),
// and it must carry the token when one is set, else the CSRF token of the
// page this daemon served. It returns 0 or the status to refuse with.
func (d *Daemon) mayChange(r *http.Request) (int, string) {
	if err := d.crossOrigin.Check(r); err != nil {
		return http.StatusForbidden, "cross-origin request"
	}
	if d.o.Token != "" {
		switch {
		case d.bearer(r):
			return 0, ""
		case !d.hasSession(r):
			return http.StatusUnauthorized, "a bearer token is required"
		}
		// The page's session cookie goes with any request the browser
		// makes: the page's CSRF token must come with it.
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(d.csrf)) != 1 {
		return http.StatusForbidden, "the page's CSRF token is missing or stale (reload the page)"
	}
	return 0, ""
}

// requireToken refuses a request without the bearer token or the page's
// session cookie; a page gets the prompt for the token instead.
func (d *Daemon) requireToken(next http.Handler, page bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.bearer(r) && !d.hasSession(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="walkie"`)
			if page {
				d.page.Login(w, r, fleet.BaseOf(r.URL.Path))
				return
			}
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer reports whether r carries the token as `Authorization: Bearer
// TOKEN`, the scheme in any case (RFC 9110 §11.1), compared in constant time.
func (d *Daemon) bearer(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(d.o.Token)) == 1
}

// refuse answers a refused request and logs it: one line per request,
// sampled so a hostile page cannot flood the log. Nothing secret is
// logged (never a header's value but Origin and Sec-Fetch-Site).
func (d *Daemon) refuse(w http.ResponseWriter, r *http.Request, code int, logMsg, body string) {
	d.httpLog.Warn(logMsg, zapRequest(r, code)...)
	http.Error(w, body, code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
