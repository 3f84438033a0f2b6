// Package modelserver is a scripted stand-in for the three model APIs the
// real agent CLIs talk to: Anthropic Messages (claude), OpenAI Responses
// (codex) and Gemini generateContent (gemini), each with its streaming form.
// Tests point an unmodified CLI at it through the CLI's own settings (see
// ClaudeEnv, WriteCodexHome, WriteGeminiHome), script what "the model"
// answers — text, a shell tool call, an error status, silence — and read
// back every request the CLI sent.
//
// It listens on loopback only and keeps no state beyond its script and
// its request log.
package modelserver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Request is one HTTP request the server received, as the CLI sent it.
type Request struct {
	At     time.Time
	Vendor Vendor // "" for requests that are not model calls
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Raw    []byte // body after any Content-Encoding was undone
	Body   any    // Raw decoded as JSON; nil when it is not JSON
	Model  string // the model named in the body or path
	Stream bool   // the client asked for a streamed answer

	// Reply is what the server answered to a model call; Exhausted is set
	// when that answer was the fallback for an empty queue.
	Reply     Reply
	Exhausted bool

	tokensOnce sync.Once // Tokens
	tokens     int
	tokensErr  error
}

// WithRaw is a copy of r with another body, as a test's script sees a
// request it rewrote; what r counted of its own body is not carried over.
func (r *Request) WithRaw(raw []byte) *Request {
	return &Request{At: r.At, Vendor: r.Vendor, Method: r.Method, Path: r.Path, Query: r.Query, Header: r.Header,
		Raw: raw, Body: r.Body, Model: r.Model, Stream: r.Stream, Reply: r.Reply, Exhausted: r.Exhausted}
}

// HasText reports whether any string inside the decoded body contains s.
// Walking the decoded JSON, rather than searching Raw, finds text the
// encoder escaped (quotes, newlines, <, >).
func (r *Request) HasText(s string) bool {
	if r.Body == nil {
		return bytes.Contains(r.Raw, []byte(s))
	}
	return containsString(r.Body, s)
}

// TextWith returns the first string inside the decoded body that
// contains s (the prompt, when s is a line of it), or "".
func (r *Request) TextWith(s string) string {
	var found string
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			if strings.Contains(v, s) {
				found = v
				return true
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	walk(r.Body)
	return found
}

func containsString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case []any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	case map[string]any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}

// Server is a running fake model server.
type Server struct {
	// URL is the base URL, http://127.0.0.1:PORT, with no trailing slash.
	URL string

	ln   net.Listener
	http *http.Server
	done chan struct{} // closed by Close: releases held requests
	wg   sync.WaitGroup

	mu      sync.Mutex
	script  Script
	queues  map[Vendor][]Reply
	reqs    []*Request
	changed chan struct{} // closed and replaced on every new request
	closed  bool
	seq     int
	// prefixes are the prompt prefixes seen so far (Script.Measure).
	prefixes map[[32]byte]bool
}

// TB is the part of testing.TB that Start uses, so the package does not
// import testing.
type TB interface {
	Helper()
	Cleanup(func())
	Fatalf(format string, args ...any)
}

// Start runs a server on 127.0.0.1 with an ephemeral port for the length of
// a test, and closes it when the test ends.
func Start(tb TB, s Script) *Server {
	tb.Helper()
	srv, err := Listen("127.0.0.1:0", s)
	if err != nil {
		tb.Fatalf("modelserver.Listen: %v", err)
	}
	tb.Cleanup(srv.Close)
	return srv
}

// Listen starts a server on addr, which must be a loopback address: the
// server answers with fake credentials accepted and must not be reachable
// from elsewhere.
func Listen(addr string, s Script) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("listen address %q: not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("net.Listen: %w", err)
	}
	srv := &Server{
		URL:     "http://" + ln.Addr().String(),
		ln:      ln,
		done:    make(chan struct{}),
		script:  s,
		changed: make(chan struct{}),
		queues: map[Vendor][]Reply{
			Anthropic: append([]Reply(nil), s.Anthropic...),
			OpenAI:    append([]Reply(nil), s.OpenAI...),
			Gemini:    append([]Reply(nil), s.Gemini...),
		},
	}
	srv.http = &http.Server{
		Handler:           http.HandlerFunc(srv.serve),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.http.Serve(ln) //nolint:errcheck // Serve returns ErrServerClosed after Close.
	return srv, nil
}

// Close stops the server: held (hanging) requests are released, every
// connection is closed, and Close returns once all handlers have finished.
// It is safe to call more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	close(s.done)
	s.http.Close() //nolint:errcheck // only reports the listener's close error.
	s.wg.Wait()
}

// Requests returns every request received so far, oldest first.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

// ModelRequests returns the model calls received so far for vendor v.
func (s *Server) ModelRequests(v Vendor) []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*Request
	for _, r := range s.reqs {
		if r.Vendor == v {
			out = append(out, r)
		}
	}
	return out
}

// Saw reports whether any model call received so far contains text s in
// its body (see Request.HasText).
func (s *Server) Saw(text string) bool {
	for _, r := range s.Requests() {
		if r.Vendor != "" && r.HasText(text) {
			return true
		}
	}
	return false
}

// WaitRequests blocks until at least n model calls have arrived or ctx ends.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got := 0
		for _, r := range s.reqs {
			if r.Vendor != "" {
				got++
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d model requests, got %d: %w", n, got, context.Cause(ctx))
		}
	}
}

// Remaining reports how many scripted replies vendor v has not yet used.
func (s *Server) Remaining(v Vendor) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queues[v])
}

// route says which vendor a path belongs to and whether it is a model call.
type route struct {
	vendor Vendor
	model  string // from the path (gemini)
	stream bool   // from the path (gemini)
}

func classify(method, path string) (route, bool) {
	if method != http.MethodPost {
		return route{}, false
	}
	switch path {
	case "/v1/messages":
		return route{vendor: Anthropic}, true
	case "/v1/responses":
		return route{vendor: OpenAI}, true
	}
	// Gemini puts the model and the method in the path:
	// /v1beta/models/gemini-2.5-pro:streamGenerateContent.
	for _, prefix := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
		rest, ok := strings.CutPrefix(path, prefix)
		if !ok {
			continue
		}
		model, method, ok := strings.Cut(rest, ":")
		if !ok {
			return route{}, false
		}
		switch method {
		case "generateContent":
			return route{vendor: Gemini, model: model}, true
		case "streamGenerateContent":
			return route{vendor: Gemini, model: model, stream: true}, true
		}
	}
	return route{}, false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	// Add under the lock that Close takes before Wait, so no Add can race
	// with the Wait.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "fakemodel: closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	raw, err := readBody(r)
	req := &Request{
		At:     time.Now(),
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
		Raw:    raw,
	}
	if len(raw) > 0 {
		var body any
		if json.Unmarshal(raw, &body) == nil {
			req.Body = body
		}
	}
	if err != nil {
		s.record(req)
		http.Error(w, "fakemodel: reading body: "+err.Error(), http.StatusBadRequest)
		return
	}

	rt, isModel := classify(r.Method, r.URL.Path)
	if !isModel {
		s.record(req)
		s.serveOther(w, r, req)
		return
	}
	req.Vendor = rt.vendor
	req.Model, req.Stream = rt.model, rt.stream
	if m, ok := field[string](req.Body, "model"); ok {
		req.Model = m
	}
	if st, ok := field[bool](req.Body, "stream"); ok {
		req.Stream = st
	}
	reply, exhausted, seq := s.next(req)
	if s.script.Measure && reply.Usage == nil {
		u, err := s.measure(req, reply)
		if err != nil {
			s.record(req)
			http.Error(w, "fakemodel: "+err.Error(), http.StatusInternalServerError)
			return
		}
		reply.Usage = &u
	}
	req.Reply, req.Exhausted = reply, exhausted
	s.record(req)

	ctx := r.Context()
	if reply.Delay > 0 {
		t := time.NewTimer(reply.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.done:
			t.Stop()
			panic(http.ErrAbortHandler)
		}
	}
	if reply.Hang {
		s.hold(ctx)
		return
	}
	if reply.Status != 0 {
		writeError(w, rt.vendor, reply)
		return
	}
	a := answer{reply: reply, seq: seq, model: req.Model, stream: req.Stream, req: req, hold: func() { s.hold(ctx) }}
	switch rt.vendor {
	case Anthropic:
		a.anthropic(w)
	case OpenAI:
		a.openai(w)
	case Gemini:
		// streamGenerateContent without alt=sse answers one JSON array.
		a.sse = r.URL.Query().Get("alt") == "sse"
		a.gemini(w)
	}
}

// hold blocks until the client gives up or the server closes: the
// "response that never comes". On close it aborts the connection, so the
// client sees a broken connection rather than an empty 200.
func (s *Server) hold(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
		panic(http.ErrAbortHandler)
	}
}

// next picks the reply for a model call and numbers the call, so ids in
// the answer (message, call and response ids) are unique per server.
func (s *Server) next(req *Request) (Reply, bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if f := s.script.Func; f != nil {
		// Func runs under the lock so scripted sequences stay ordered even
		// when a CLI fires requests in parallel.
		if r, ok := f(req); ok {
			return r, false, s.seq
		}
	}
	q := s.queues[req.Vendor]
	if len(q) > 0 {
		s.queues[req.Vendor] = q[1:]
		return q[0], false, s.seq
	}
	if !reflect.DeepEqual(s.script.Default, Reply{}) {
		return s.script.Default, true, s.seq
	}
	return Text(Exhausted), true, s.seq
}

func (s *Server) record(req *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
}

// serveOther answers requests that are not model calls. claude probes
// HEAD / before its first call and is content with a 404.
func (s *Server) serveOther(w http.ResponseWriter, r *http.Request, req *Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens" {
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": DefaultUsage.InputTokens})
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]any{
		"error": map[string]any{
			"type":    "not_found_error",
			"message": fmt.Sprintf("fakemodel: no route for %s %s", r.Method, r.URL.Path),
		},
	})
}

func readBody(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, fmt.Errorf("gzip.NewReader: %w", err)
		}
		defer zr.Close()
		body = zr
	default:
		// Keep the bytes as sent so the request is still on record.
		raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		return raw, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	return io.ReadAll(io.LimitReader(body, 64<<20))
}

// field reads a top-level key of a decoded JSON object.
func field[T any](body any, key string) (T, bool) {
	var zero T
	m, ok := body.(map[string]any)
	if !ok {
		return zero, false
	}
	v, ok := m[key].(T)
	return v, ok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client may be gone; nothing to do.
}

// writeError answers with status and the error body shape of the vendor,
// which is what each CLI parses to print its message.
func writeError(w http.ResponseWriter, v Vendor, r Reply) {
	msg := r.Message
	if msg == "" {
		msg = http.StatusText(r.Status)
	}
	var body any
	switch v {
	case Anthropic:
		body = map[string]any{
			"type":  "error",
			"error": map[string]any{"type": anthropicErrorType(r.Status), "message": msg},
		}
	case OpenAI:
		body = map[string]any{
			"error": map[string]any{"message": msg, "type": openaiErrorType(r.Status), "param": nil, "code": nil},
		}
	case Gemini:
		body = map[string]any{
			"error": map[string]any{"code": r.Status, "message": msg, "status": geminiStatus(r.Status)},
		}
	}
	if r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable {
		// Without a hint some clients back off for a long time; a short
		// one keeps retry tests quick.
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, r.Status, body)
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func openaiErrorType(status int) string {
	switch {
	case status == 401:
		return "invalid_api_key"
	case status == 429:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func geminiStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// ClosedURL returns the URL of a loopback port that was just listened on
// and closed, so connecting to it is refused: "no server at all".
func ClosedURL() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("net.Listen: %w", err)
	}
	u := "http://" + ln.Addr().String()
	if err := ln.Close(); err != nil {
		return "", fmt.Errorf("close listener: %w", err)
	}
	return u, nil
}
