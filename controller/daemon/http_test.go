package daemon

import (
	"bytes"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"golang.org/x/net/html"

	"github.com/walkie-sh/walkie/session/sessiontest"
	"github.com/walkie-sh/walkie/walkie"
)

// httpDaemon starts a daemon on loopback serving one debate whose
// participants have no command, so nothing but the HTTP requests of the
// test ever changes its files. It returns the daemon and the debate.
func httpDaemon(t testing.TB, o Options) (*running, string) {
	t.Helper()
	dir := t.TempDir()
	file := newDebate(t, dir, "api", 3, "alice", "bob")
	postAs(t, file, "alice")
	o.Dir, o.Listen = dir, "127.0.0.1:0"
	if o.Config == nil {
		o.Config = testConfig(t, nil, "")
	}
	d := startDaemon(t, o)
	t.Cleanup(func() { d.stop(t) })
	sessiontest.WaitFor(t, 10*time.Second, "the daemon serves the debate", func() bool {
		return slices.ContainsFunc(d.Debates(), func(v DebateView) bool { return v.File == file && v.ID == "api" })
	})
	return d, file
}

// routeRequest turns a mux pattern into a request line: wildcards become
// a plain segment, {$} the bare path.
func routeRequest(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	path = strings.ReplaceAll(path, "{$}", "")
	return method, regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x")
}

// snapshot is every file under dir and its bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func checkUnchanged(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, b := range after {
		if a, ok := before[p]; !ok {
			t.Errorf("%s: created %s", what, filepath.Base(p))
		} else if a != b {
			t.Errorf("%s: changed %s:\n%s", what, filepath.Base(p), b)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s: removed %s", what, filepath.Base(p))
		}
	}
}

// checkHeaders asserts the headers every response must carry, and that
// none grants another origin anything.
func checkHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", what, got)
	}
	if got := h.Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("%s: Referrer-Policy %q", what, got)
	}
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("%s: Content-Security-Policy %q lacks %q", what, csp, want)
		}
	}
	if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") {
		t.Errorf("%s: Content-Security-Policy %q allows too much", what, csp)
	}
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			t.Errorf("%s: sends the CORS header %s: %q", what, k, h.Get(k))
		}
	}
}

// controlBody is a well-formed body for each state-changing route.
func controlBody(path, file string) string {
	q := strconv.Quote(file)
	switch path {
	case "/api/halt":
		return `{"file": ` + q + `, "reason": "from the test"}`
	case "/api/extend":
		return `{"file": ` + q + `, "rounds": 2}`
	case "/api/note":
		return `{"file": ` + q + `, "text": "A note from the test."}`
	}
	return `{"file": ` + q + `}`
}

// pageRequest is a request as the daemon's own page sends it: same
// origin, JSON, the CSRF token, and the token when there is one.
func pageRequest(d *running, method, path, body, token string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Host = d.Addr()
	r.Header.Set("Origin", "http://"+d.Addr())
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(CSRFHeader, d.csrf)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// Issue 22: a page that rebinds its own domain name to 127.0.0.1 reaches
// the daemon with its own name in Host. Every route, including those
// added after this test was written (they come from the table the mux is
// built from), refuses such a Host with 421 before anything else, even
// with every credential, and changes nothing.
func TestHTTPForeignHostRefusedOnEveryRoute(t *testing.T) {
	d, file := httpDaemon(t, Options{Token: "s3cret"})
	_, port, _ := strings.Cut(d.Addr(), ":")
	before := snapshot(t, d.dir)
	h := d.handler()
	foreign := []string{"evil.example.com", "evil.example.com:" + port, "localhost.evil.example.com:" + port,
		"127.0.0.1.nip.io:" + port, "localhost:1", "127.0.0.1:1", "[::1]:1", "127.0.0.1", "localhost", ""}
	routes := d.routes()
	if len(routes) < 9 {
		t.Fatalf("only %d routes: the table the mux is built from lost some", len(routes))
	}
	for _, rt := range routes {
		method, path := routeRequest(rt.pattern)
		for _, host := range foreign {
			r := pageRequest(d, method, path, controlBody(path, file), "s3cret")
			r.Host = host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			what := rt.pattern + " with Host " + strconv.Quote(host)
			if w.Code != http.StatusMisdirectedRequest {
				t.Errorf("%s: %d, want 421", what, w.Code)
			}
			checkHeaders(t, what, w.Header())
		}
	}
	checkUnchanged(t, "requests with a foreign Host", before, snapshot(t, d.dir))

	// Over the real listener too, where the server itself fills in Host.
	req, _ := http.NewRequest(http.MethodGet, "http://"+d.Addr()+"/api/debates", nil)
	req.Host = "evil.example.com:" + port
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || bytes.Contains(body, []byte(file)) {
		t.Errorf("over TCP, a foreign Host got %s: %s", resp.Status, body)
	}
	checkHeaders(t, "over TCP", resp.Header)
}

// The names the daemon does answer for: loopback names on its port, the
// names the user allowed by flag (any port without one) and in the
// config, read again on reload.
func TestHTTPAllowedHosts(t *testing.T) {
	d, _ := httpDaemon(t, Options{AllowedHosts: []string{"walkie.example.com", "proxy.lan:8443"},
		Config: testConfig(t, nil, "serve:\n  allowed_hosts: [from-config.lan]\n")})
	_, port, _ := strings.Cut(d.Addr(), ":")
	h := d.handler()
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "LocalHost:" + port: 200, "[::1]:" + port: 200,
		"walkie.example.com": 200, "walkie.example.com:443": 200, "WALKIE.example.com:" + port: 200,
		"proxy.lan:8443": 200, "proxy.lan:" + port: 421, "proxy.lan": 421,
		"from-config.lan": 200, "from-config.lan:8080": 200, "other.lan:" + port: 421,
	} {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
	for _, c := range []struct {
		listen, host string
		want         bool
	}{
		{"0.0.0.0:7433", "192.168.1.5:7433", true}, // every address: the machine's IPs
		{":7433", "[fe80::1]:7433", true},
		{"[::]:7433", "10.0.0.1:7433", true},
		{"0.0.0.0:7433", "192.168.1.5:80", false},
		{"0.0.0.0:7433", "nas.lan:7433", false}, // a name must be allowed by the user
		{"127.0.0.1:7433", "192.168.1.5:7433", false},
		{"127.0.0.2:7433", "127.0.0.2:7433", true},
		{"myhost.lan:7433", "MyHost.lan:7433", true},
		{"myhost.lan:7433", "myhost.lan.evil.example:7433", false},
	} {
		if got := newHostNames(c.listen, "7433", nil).allowed(c.host, nil); got != c.want {
			t.Errorf("listening on %s, Host %q allowed = %v, want %v", c.listen, c.host, got, c.want)
		}
	}
}

// Issue 22: a state-changing request from another site, or without the
// page's CSRF token, changes nothing on disk, on every route that may
// change state; one from the page itself does (so the check can fail).
// This is the HTTP-level form of the browser test that comes with the
// fleet page: a browser sends exactly these headers.
func TestHTTPRefusedPostsChangeNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	client := &http.Client{}
	defer client.CloseIdleConnections()
	d, file := httpDaemon(t, Options{})
	defer d.stop(t) // before goleak looks
	base := "http://" + d.Addr()
	attacks := []struct {
		name string
		set  func(r *http.Request)
		want int
	}{
		{"a cross-site Origin", func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example.com")
			r.Header.Del("Sec-Fetch-Site")
		}, 403},
		{"Sec-Fetch-Site: cross-site", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403},
		{"Sec-Fetch-Site: same-site (another port)", func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "same-site") }, 403},
		{"Origin: null", func(r *http.Request) { r.Header.Set("Origin", "null"); r.Header.Del("Sec-Fetch-Site") }, 403},
		{"no CSRF token", func(r *http.Request) { r.Header.Del(CSRFHeader) }, 403},
		{"a wrong CSRF token", func(r *http.Request) { r.Header.Set(CSRFHeader, d.csrf[1:]+"A") }, 403},
		{"a form's body", func(r *http.Request) { r.Header.Set("Content-Type", "application/x-www-form-urlencoded") }, 415},
		{"a text/plain body", func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415},
		{"a bare curl", func(r *http.Request) {
			for _, k := range []string{"Origin", "Sec-Fetch-Site", CSRFHeader} {
				r.Header.Del(k)
			}
		}, 403},
		{"GET", func(r *http.Request) { r.Method = http.MethodGet }, 405},
		{"a file the daemon does not serve", nil, 404},
	}
	var changing []string
	for _, rt := range d.routes() {
		method, path := routeRequest(rt.pattern)
		if safeMethod(method) {
			continue
		}
		changing = append(changing, path)
		for _, a := range attacks {
			before := snapshot(t, d.dir)
			body := controlBody(path, file)
			if a.set == nil {
				body = controlBody(path, filepath.Join(filepath.Dir(file), "other.walkie.md"))
			}
			r := pageRequest(d, method, base+path, body, "")
			r.RequestURI = ""
			if a.set != nil {
				a.set(r)
			}
			resp, err := client.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			what := method + " " + path + " with " + a.name
			if resp.StatusCode != a.want {
				t.Errorf("%s: %d, want %d", what, resp.StatusCode, a.want)
			}
			checkHeaders(t, what, resp.Header)
			checkUnchanged(t, what, before, snapshot(t, d.dir))
		}
	}
	if want := []string{"/api/halt", "/api/resume", "/api/extend", "/api/note"}; !slices.Equal(changing, want) {
		t.Errorf("state-changing routes %q, want %q: a new one needs a body in controlBody and a check below", changing, want)
	}

	// The page's own requests go through, each in the debate's files.
	do := func(path string) {
		t.Helper()
		r := pageRequest(d, http.MethodPost, base+path, controlBody(path, file), "")
		r.RequestURI = ""
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("the page's %s: %s %s", path, resp.Status, b)
		}
	}
	record, _ := os.ReadFile(file)
	do("/api/halt")
	if st := status(t, file); st != walkie.StatusHalted {
		t.Errorf("after the page's halt: %s", st)
	}
	do("/api/resume")
	do("/api/extend")
	if s := loadState(t, file); s.Status != "" || s.ExtraRounds != 2 {
		t.Errorf("after resume and extend: status %q, extra rounds %d", s.Status, s.ExtraRounds)
	}
	do("/api/note")
	if after, _ := os.ReadFile(file); !bytes.HasPrefix(after, record) || !bytes.Contains(after[len(record):], []byte("A note from the test.")) {
		t.Errorf("the page's note is not appended to the record:\n%s", after[len(record):])
	}
	if doc, err := walkie.Load(file); err != nil {
		t.Error(err)
	} else if err := doc.Verify(); err != nil {
		t.Errorf("the record after the page's requests: %v", err)
	}
}

func loadState(t *testing.T, file string) *walkie.State {
	t.Helper()
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		t.Fatal(err)
	}
	st, err := walkie.LoadState(walkie.StateDir(file, meta.ID))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// With a token, every state change needs it (the page's CSRF token is
// not enough: anyone who can load the page has that), the scheme in any
// case; a cross-site request is refused even with it; and the token
// appears in no log line.
func TestHTTPTokenGuardsStateChanges(t *testing.T) {
	const token = "s3cret-token-value"
	core, logs := observer.New(zap.DebugLevel)
	d, file := httpDaemon(t, Options{Token: token, Log: zap.New(core)})
	h := d.handler()
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		checkHeaders(t, r.Method+" "+r.URL.Path, w.Header())
		return w
	}
	before := snapshot(t, d.dir)
	for _, c := range []struct {
		name string
		auth string
		set  func(r *http.Request)
		want int
	}{
		{"no token", "", nil, 401},
		{"a wrong token", "Bearer nope", nil, 401},
		{"the token as Basic", "Basic " + token, nil, 401},
		{"the token without a scheme", token, nil, 401},
		{"the token, cross-site", "Bearer " + token, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403},
		{"the token, from another Origin", "Bearer " + token, func(r *http.Request) {
			r.Header.Set("Origin", "http://evil.example.com")
			r.Header.Del("Sec-Fetch-Site")
		}, 403},
	} {
		r := pageRequest(d, http.MethodPost, "/api/halt", controlBody("/api/halt", file), "")
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		if c.set != nil {
			c.set(r)
		}
		if w := serve(r); w.Code != c.want {
			t.Errorf("halt with %s: %d, want %d", c.name, w.Code, c.want)
		}
	}
	checkUnchanged(t, "refused state changes", before, snapshot(t, d.dir))

	for _, scheme := range []string{"bearer", "BEARER", "Bearer", "bEaReR"} {
		r := httptest.NewRequest(http.MethodGet, "/api/debates", nil)
		r.Host = d.Addr()
		r.Header.Set("Authorization", scheme+" "+token)
		if w := serve(r); w.Code != 200 {
			t.Errorf("GET /api/debates with the scheme %q: %d", scheme, w.Code)
		}
	}
	r := pageRequest(d, http.MethodPost, "/api/halt", controlBody("/api/halt", file), "")
	r.Header.Set("Authorization", "bearer "+token)
	if w := serve(r); w.Code != 200 || status(t, file) != walkie.StatusHalted {
		t.Errorf("halt with the token: %d %s, status %s", w.Code, w.Body, status(t, file))
	}
	for _, e := range logs.All() {
		line := e.Message + " " + strings.Join(slices.Collect(maps.Keys(e.ContextMap())), " ")
		for _, v := range e.ContextMap() {
			if s, ok := v.(string); ok {
				line += " " + s
			}
		}
		if strings.Contains(line, token) {
			t.Errorf("the token is in the log: %s", line)
		}
	}
}

// Every refusal is one structured log line, but a page that sends
// thousands cannot flood the log: at most 20 a second of each kind.
func TestHTTPRefusalsAreLogged(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	d, _ := httpDaemon(t, Options{Log: zap.New(core)})
	h := d.handler()
	refuse := func() {
		r := httptest.NewRequest(http.MethodGet, "/api/debates", nil)
		r.Host = "evil.example.com"
		r.RemoteAddr = "127.0.0.1:5555"
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	refused := func() []observer.LoggedEntry {
		return logs.FilterMessage("http request refused: host not allowed").All()
	}
	refuse()
	got := refused()
	if len(got) != 1 {
		t.Fatalf("%d log lines for one refusal, want 1", len(got))
	}
	want := map[string]any{"status": int64(421), "method": "GET", "path": "/api/debates", "host": "evil.example.com", "remote": "127.0.0.1:5555"}
	if ctx := got[0].ContextMap(); !maps.Equal(ctx, want) {
		t.Errorf("log fields %v, want %v", ctx, want)
	}
	start := time.Now()
	for range 500 {
		refuse()
	}
	seconds := int(time.Since(start)/time.Second) + 2 // the burst may straddle the sampler's ticks
	if n := len(refused()); n < 20 || n > 1+20*seconds {
		t.Errorf("%d log lines for 501 refusals within %ds; want the first 20 of each second", n, seconds-1)
	}
}

// The page has no inline script or style and no event-handler attribute
// (the policy would block them, and an agent's text could never become
// one); what it loads is served, typed, by the daemon; it carries the
// CSRF token of this start; and its script reads no token from the URL.
func TestHTTPPageLoadsOnlyItsOwnFiles(t *testing.T) {
	d, _ := httpDaemon(t, Options{})
	h := d.handler()
	get := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = d.Addr()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		checkHeaders(t, path, w.Header())
		return w
	}
	page := get("/")
	if page.Code != 200 || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", page.Code, page.Header().Get("Content-Type"))
	}
	var loads []string
	csrf := ""
	z := html.NewTokenizer(page.Body)
	inScript := false
	for tt := z.Next(); tt != html.ErrorToken; tt = z.Next() {
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Key] = a.Val
				if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
					t.Errorf("<%s %s=%q>: inline script or style", tok.Data, a.Key, a.Val)
				}
			}
			switch {
			case tok.Data == "script":
				if attr["src"] == "" {
					t.Error("an inline <script>")
				}
				loads = append(loads, attr["src"])
				inScript = true
			case tok.Data == "style":
				t.Error("an inline <style>")
			case tok.Data == "link" && attr["rel"] == "stylesheet":
				loads = append(loads, attr["href"])
			case tok.Data == "meta" && attr["name"] == "walkie-csrf":
				csrf = attr["content"]
			}
		case html.TextToken:
			if inScript && strings.TrimSpace(tok.Data) != "" {
				t.Errorf("inline script text %q", tok.Data)
			}
		case html.EndTagToken:
			inScript = false
		}
	}
	if csrf != d.csrf || len(csrf) < 20 {
		t.Errorf("the page's CSRF token %q, want this start's %q", csrf, d.csrf)
	}
	if !slices.Equal(loads, []string{"static/style.css", "static/app.js"}) {
		t.Errorf("the page loads %q", loads)
	}
	types := map[string]string{".js": "text/javascript", ".css": "text/css"}
	for _, l := range loads {
		w := get("/" + l)
		if ct := w.Header().Get("Content-Type"); w.Code != 200 || !strings.HasPrefix(ct, types[filepath.Ext(l)]) {
			t.Errorf("GET /%s: %d %s", l, w.Code, ct)
		}
		if l == "static/app.js" {
			for _, bad := range []string{"location.hash", "location.search", "URLSearchParams", "innerHTML", "localStorage"} {
				if strings.Contains(w.Body.String(), bad) {
					t.Errorf("app.js uses %s: the token must stay out of URLs and storage beyond the tab, and text out of HTML", bad)
				}
			}
		}
	}
	if w := get("/static/"); w.Code != 404 {
		t.Errorf("GET /static/: %d (a listing?)", w.Code)
	}
}

// The built binary, as a person runs it: `walkie serve --allowed-host`
// answers for that name and refuses another with 421, the headers are
// there, a token given in the environment is needed and never logged,
// and a bad --allowed-host is refused at start with exit 2.
func TestServeBinaryHTTPSurface(t *testing.T) {
	bin := walkieBin(t)
	dir := t.TempDir()
	bad := exec.Command(bin, "serve", "--dir", dir, "--listen", "", "--allowed-host", "https://walkie.example.com")
	if out, err := bad.CombinedOutput(); bad.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "is not a host name") {
		t.Errorf("a URL as --allowed-host: %v\n%s", err, out)
	}

	const token = "tok-from-the-environment"
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "serve", "--dir", dir, "--listen", "127.0.0.1:0", "--allowed-host", "walkie.example.com", "--log-format", "json")
	cmd.Env = append(os.Environ(), "WALKIE_TOKEN="+token)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addrRE := regexp.MustCompile(`"http":"([^"]+)"`)
	sessiontest.WaitFor(t, 10*time.Second, "the daemon logs its address", func() bool { return addrRE.MatchString(logs.String()) })
	addr := addrRE.FindStringSubmatch(logs.String())[1]
	client := &http.Client{}
	defer client.CloseIdleConnections()
	for _, c := range []struct {
		host, auth string
		want       int
	}{
		{"evil.example.com", "Bearer " + token, 421},
		{"walkie.example.com", "Bearer " + token, 200},
		{addr, "bearer " + token, 200},
		{addr, "", 401},
		{addr, "Bearer wrong", 401},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/debates", nil)
		req.Host = c.host
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("Host %s, Authorization %q: %s, want %d", c.host, c.auth, resp.Status, c.want)
		}
		checkHeaders(t, "the binary, Host "+c.host, resp.Header)
	}
	sessiontest.WaitFor(t, 5*time.Second, "the refusal logged", func() bool {
		return strings.Contains(logs.String(), `"msg":"http request refused: host not allowed"`) &&
			strings.Contains(logs.String(), `"host":"evil.example.com"`)
	})
	if strings.Contains(logs.String(), token) {
		t.Errorf("the token is in the log:\n%s", logs.String())
	}
}
