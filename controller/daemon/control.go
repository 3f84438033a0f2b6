package daemon

import (
	"cmp"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// controlRequest is the body of every POST under /api/: the debate, named
// by its file exactly as /api/debates gives it, and what the action needs.
type controlRequest struct {
	File   string `json:"file"`
	Reason string `json:"reason,omitempty"` // halt
	Rounds int    `json:"rounds,omitempty"` // extend
	Text   string `json:"text,omitempty"`   // note
}

// maxControlBody bounds a control request; a note's text is the largest part.
const maxControlBody = 1 << 20

// control serves one state-changing action. The checks that decide who
// may change state are in secure, for every route; this takes the JSON
// body (a form or text/plain post, which a browser sends cross-site
// without asking, is refused), finds the debate among those the page
// lists (the daemon's own, and the registry's, whose controller reads
// the log as the daemon's does), and maps the record's refusals to
// statuses.
func (d *Daemon) control(act func(controlRequest) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			http.Error(w, "send the request as Content-Type: application/json", http.StatusUnsupportedMediaType)
			return
		}
		var req controlRequest
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxControlBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, fmt.Sprintf("the body is not a control request: %v", err), http.StatusBadRequest)
			return
		}
		d.mu.Lock()
		_, served := d.workers[req.File]
		_, registered := d.externals[req.File]
		d.mu.Unlock()
		if !served && !registered {
			http.Error(w, fmt.Sprintf("no debate %q on this daemon's page (give its file as /api/debates shows it)", req.File), http.StatusNotFound)
			return
		}
		res, err := act(req)
		var refused *walkie.RefusedError
		var input *walkie.InputError
		switch {
		case errors.As(err, &refused):
			http.Error(w, err.Error(), http.StatusConflict)
		case errors.As(err, &input):
			http.Error(w, err.Error(), http.StatusBadRequest)
		case err != nil:
			d.log.Error("control request failed", zap.String("path", r.URL.Path), zap.String("file", req.File), zap.Error(err))
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			d.log.Info("control request", zap.String("path", r.URL.Path), zap.String("file", req.File), zap.String("remote", r.RemoteAddr))
			writeJSON(w, res)
		}
	})
}

func (d *Daemon) halt(req controlRequest) (any, error) {
	return map[string]string{"status": walkie.StatusHalted}, walkie.Halt(req.File, cmp.Or(req.Reason, "halted from the web page"))
}

func (d *Daemon) resume(req controlRequest) (any, error) {
	return map[string]string{"status": walkie.StatusOpen}, walkie.Resume(req.File)
}

func (d *Daemon) extend(req controlRequest) (any, error) {
	n, err := walkie.Extend(req.File, req.Rounds)
	return map[string]int{"max_rounds": n}, err
}

func (d *Daemon) note(req controlRequest) (any, error) {
	rc, err := walkie.Append(req.File, walkie.Post{Supervisor: true, Body: []byte(req.Text)})
	return map[string]any{"seq": rc.Entry.Seq, "queued": rc.Queued}, err
}

// sessionCookie names the page's session cookie. Cookies do not tell
// ports apart, so two daemons on one host each have their own.
func (d *Daemon) sessionCookie() string {
	_, port, _ := net.SplitHostPort(d.Addr())
	return "walkie_session_" + port
}

// startSession is GET /api/session: a request with the token (a header,
// which a page of another origin cannot send with it) gets the page's
// session cookie, so the page's links, its event streams (EventSource
// sends no header) and a browser without JavaScript can read. The cookie
// is HttpOnly and SameSite=Strict, and it dies with the daemon.
func (d *Daemon) startSession(w http.ResponseWriter, r *http.Request) {
	if d.o.Token != "" {
		http.SetCookie(w, &http.Cookie{Name: d.sessionCookie(), Value: d.session, Path: "/", HttpOnly: true,
			SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// hasSession reports whether r carries this start's session cookie.
func (d *Daemon) hasSession(r *http.Request) bool {
	c, err := r.Cookie(d.sessionCookie())
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(d.session)) == 1
}
