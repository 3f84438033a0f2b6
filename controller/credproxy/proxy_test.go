package credproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// upstream records what reached it and answers with a stream.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []*http.Request
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Clone(r.Context()))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"ok\":true}\n\n")
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last(t *testing.T) *http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("nothing reached the upstream")
	}
	return u.seen[len(u.seen)-1]
}

func startProxy(t *testing.T) *Proxy {
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func call(t *testing.T, url string, header map[string]string) (int, string) {
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The stand-in gets a call through with the real key in its place, on
// the upstream's own path; without it, or with another session's, or once
// the route is removed, nothing goes through.
func TestProxyTradesTheStandInForTheKey(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t)
	base, standins, remove, err := p.Add(up.URL+"/api", Credential{Key: "sk-real", Place: Place{Header: "x-api-key"}})
	if err != nil {
		t.Fatal(err)
	}
	other, otherStandins, removeOther, _ := p.Add(up.URL, Credential{Key: "sk-other", Place: Place{Header: "x-api-key"}})
	defer removeOther()
	if !strings.HasPrefix(standins[0], "walkie-standin-") || strings.Contains(base, "sk-real") {
		t.Fatalf("base %s, stand-in %s", base, standins[0])
	}
	code, body := call(t, base+"/v1/messages?beta=true", map[string]string{"x-api-key": standins[0]})
	if code != 200 || !strings.Contains(body, `"ok":true`) {
		t.Fatalf("%d %s", code, body)
	}
	r := up.last(t)
	if r.Header.Get("x-api-key") != "sk-real" || r.URL.Path != "/api/v1/messages" || r.URL.RawQuery != "beta=true" {
		t.Errorf("upstream saw key %q at %s?%s", r.Header.Get("x-api-key"), r.URL.Path, r.URL.RawQuery)
	}
	for _, tc := range []struct {
		name, url string
		header    map[string]string
	}{
		{"no key", base + "/v1/messages", nil},
		{"the real key itself", base + "/v1/messages", map[string]string{"x-api-key": "sk-real"}},
		{"another session's stand-in", base + "/v1/messages", map[string]string{"x-api-key": otherStandins[0]}},
		{"a route that is not there", strings.Replace(base, "/api", "", 1) + "x/v1", map[string]string{"x-api-key": standins[0]}},
	} {
		n := len(up.seen)
		if code, _ := call(t, tc.url, tc.header); code != http.StatusUnauthorized || len(up.seen) != n {
			t.Errorf("%s: %d, and the upstream was reached %d times more", tc.name, code, len(up.seen)-n)
		}
	}
	remove()
	if code, _ := call(t, base+"/v1/messages", map[string]string{"x-api-key": standins[0]}); code != http.StatusUnauthorized {
		t.Errorf("after remove: %d", code)
	}
	if code, _ := call(t, other+"/v1", map[string]string{"x-api-key": otherStandins[0]}); code != 200 || up.last(t).Header.Get("x-api-key") != "sk-other" {
		t.Errorf("the other session's route: %d", code)
	}
}

// Bearer tokens and Gemini's query parameter.
func TestProxyPlaces(t *testing.T) {
	up := newUpstream(t)
	p := startProxy(t)
	base, s, remove, err := p.Add(up.URL, Credential{Key: "real-bearer", Place: Place{Header: "Authorization", Bearer: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	if code, _ := call(t, base+"/v1/responses", map[string]string{"Authorization": "Bearer " + s[0]}); code != 200 || up.last(t).Header.Get("Authorization") != "Bearer real-bearer" {
		t.Errorf("bearer: %d %q", code, up.last(t).Header.Get("Authorization"))
	}
	gbase, gs, gremove, _ := p.Add(up.URL, Credential{Key: "real-g", Place: Place{Header: "x-goog-api-key", Query: "key"}})
	defer gremove()
	if code, _ := call(t, gbase+"/v1beta/models/m:generateContent?alt=sse&key="+gs[0], nil); code != 200 {
		t.Fatalf("query key: %d", code)
	}
	if r := up.last(t); r.URL.Query().Get("key") != "real-g" || r.URL.Query().Get("alt") != "sse" || strings.Contains(r.URL.RawQuery, gs[0]) {
		t.Errorf("upstream query %q", r.URL.RawQuery)
	}
}

func TestProxyRefusesPlainHTTPUpstreams(t *testing.T) {
	p := startProxy(t)
	for _, u := range []string{"http://api.example.com", "ftp://x", "not a url"} {
		if _, _, _, err := p.Add(u, Credential{Key: "k", Place: Place{Header: "x-api-key"}}); err == nil {
			t.Errorf("%s accepted", u)
		}
	}
	for _, u := range []string{"https://api.example.com/v1", "http://127.0.0.1:9", "http://localhost:9"} {
		if _, _, remove, err := p.Add(u, Credential{Key: "k", Place: Place{Header: "x-api-key"}}); err != nil {
			t.Errorf("%s refused: %v", u, err)
		} else {
			remove()
		}
	}
}

// What each CLI's session is changed into: stand-ins in the environment,
// the route as its base URL, and for codex the -c overrides.
func TestGuard(t *testing.T) {
	p := startProxy(t)
	noHome := func(string) ([]byte, bool) { return nil, false }
	env := func(ch Change, k string) string { return value(ch.Env, k) }

	ch, err := Guard(p, "claude", []string{"claude", "-p", "x"}, []string{"ANTHROPIC_API_KEY=sk-ant", "ANTHROPIC_BASE_URL=https://gw.example.com"}, noHome)
	if err != nil || !strings.HasPrefix(env(ch, "ANTHROPIC_API_KEY"), "walkie-standin-") || !strings.HasPrefix(env(ch, "ANTHROPIC_BASE_URL"), p.url+"/") || ch.Argv != nil {
		t.Errorf("claude: %+v %v", ch, err)
	}
	ch.Remove()

	ch, _ = Guard(p, "claude", []string{"claude"}, []string{"PATH=/bin"}, noHome)
	if len(ch.Env) != 0 || !strings.Contains(ch.Note, "no API key") {
		t.Errorf("claude without a key: %+v", ch)
	}

	ch, _ = Guard(p, "gemini", []string{"gemini"}, []string{"GEMINI_API_KEY=g"}, noHome)
	if !strings.HasPrefix(env(ch, "GEMINI_API_KEY"), "walkie-standin-") || !strings.HasPrefix(env(ch, "GOOGLE_GEMINI_BASE_URL"), p.url) {
		t.Errorf("gemini: %+v", ch)
	}
	ch.Remove()

	argv := []string{"codex", "exec", "--json", "do it"}
	ch, _ = Guard(p, "codex", argv, []string{"OPENAI_API_KEY=sk-oai"}, noHome)
	if !strings.HasPrefix(env(ch, "OPENAI_API_KEY"), "walkie-standin-") || override(ch.Argv, "model_provider") != proxyProvider ||
		!strings.HasPrefix(override(ch.Argv, "model_providers."+proxyProvider+".base_url"), p.url) || ch.Argv[len(ch.Argv)-1] != "do it" || !slices.Equal(argv, []string{"codex", "exec", "--json", "do it"}) {
		t.Errorf("codex, built-in provider: %+v", ch)
	}
	ch.Remove()

	toml := "model_provider = \"fake\"\n[model_providers.fake]\nbase_url = \"http://127.0.0.1:1/v1\"\nenv_key = \"FAKE_API_KEY\"\n"
	home := func(rel string) ([]byte, bool) { return []byte(toml), rel == ".codex/config.toml" }
	ch, err = Guard(p, "codex", argv, []string{"FAKE_API_KEY=real"}, home)
	if err != nil || !strings.HasPrefix(env(ch, "FAKE_API_KEY"), "walkie-standin-") || !strings.HasPrefix(override(ch.Argv, "model_providers.fake.base_url"), p.url+"/") || !strings.HasSuffix(override(ch.Argv, "model_providers.fake.base_url"), "/v1") {
		t.Errorf("codex, its own provider: %+v %v", ch, err)
	}
	ch.Remove()
}

// An upstream that cannot be reached is a connection closed with no
// answer, as the network would have it: no status of the proxy's own for
// the CLI to take for the model's.
func TestProxyUnreachableUpstream(t *testing.T) {
	up := httptest.NewServer(http.NotFoundHandler())
	gone := up.URL
	up.Close()
	p := startProxy(t)
	base, s, remove, err := p.Add(gone, Credential{Key: "k", Place: Place{Header: "x-api-key"}})
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	req, _ := http.NewRequest("POST", base+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", s[0])
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %s, want the connection closed", resp.Status)
	}
}
