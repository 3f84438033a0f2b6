package modelserver

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	Name string
	Data map[string]any
}

func post(t *testing.T, ctx context.Context, url, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("bad SSE data %q: %v", line, err)
			}
			out = append(out, sseEvent{Name: name, Data: d})
			name = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	return out
}

func names(evs []sseEvent) []string {
	var n []string
	for _, e := range evs {
		n = append(n, e.Name)
	}
	return n
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestAnthropicStreamText(t *testing.T) {
	srv := Start(t, Script{Anthropic: []Reply{{Text: "hello <there>", Usage: &Usage{InputTokens: 7, OutputTokens: 3}}}})
	resp := post(t, testCtx(t), srv.URL+"/v1/messages?beta=true", `{"model":"claude-x","stream":true,"messages":[{"role":"user","content":"say hi"}]}`)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readSSE(t, resp.Body)
	want := []string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	for _, e := range evs {
		if e.Data["type"] != e.Name {
			t.Errorf("event %s carries type %v", e.Name, e.Data["type"])
		}
	}
	if got := get(evs[0].Data, "message", "model"); got != "claude-x" {
		t.Errorf("model %v, want the requested one", got)
	}
	if got := get(evs[0].Data, "message", "usage", "input_tokens"); got != 7.0 {
		t.Errorf("input_tokens %v, want 7", got)
	}
	if got := get(evs[3].Data, "delta", "text"); got != "hello <there>" {
		t.Errorf("text %v", got)
	}
	if got := get(evs[5].Data, "delta", "stop_reason"); got != "end_turn" {
		t.Errorf("stop_reason %v", got)
	}
	if got := get(evs[5].Data, "usage", "output_tokens"); got != 3.0 {
		t.Errorf("output_tokens %v, want 3", got)
	}
}

func TestAnthropicStreamShell(t *testing.T) {
	srv := Start(t, Script{Anthropic: []Reply{Shell(`echo "a b" >> turn.md`)}})
	resp := post(t, testCtx(t), srv.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[]}`)
	evs := readSSE(t, resp.Body)
	var start, delta, msgDelta map[string]any
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			start = e.Data
		case "content_block_delta":
			delta = e.Data
		case "message_delta":
			msgDelta = e.Data
		}
	}
	if get(start, "content_block", "type") != "tool_use" || get(start, "content_block", "name") != "Bash" {
		t.Fatalf("block start %v, want a Bash tool_use", start)
	}
	if id, _ := get(start, "content_block", "id").(string); !strings.HasPrefix(id, "toolu_") {
		t.Errorf("tool id %q", id)
	}
	if get(delta, "delta", "type") != "input_json_delta" {
		t.Fatalf("delta %v", delta)
	}
	partial, _ := get(delta, "delta", "partial_json").(string)
	var input map[string]any
	if err := json.Unmarshal([]byte(partial), &input); err != nil {
		t.Fatalf("partial_json %q: %v", partial, err)
	}
	if input["command"] != `echo "a b" >> turn.md` {
		t.Errorf("command %v", input["command"])
	}
	if !strings.Contains(partial, ">>") {
		t.Errorf("partial_json %q escapes the redirection", partial)
	}
	if get(msgDelta, "delta", "stop_reason") != "tool_use" {
		t.Errorf("stop_reason %v, want tool_use", get(msgDelta, "delta", "stop_reason"))
	}
}

func TestAnthropicNonStreamAndTool(t *testing.T) {
	srv := Start(t, Script{Anthropic: []Reply{
		Text("plain"),
		Tool("Write", map[string]any{"file_path": "/x/f.md", "content": "c"}),
	}})
	ctx := testCtx(t)
	var msg map[string]any
	if err := json.NewDecoder(post(t, ctx, srv.URL+"/v1/messages", `{"model":"m","messages":[]}`).Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg["type"] != "message" || get(msg, "content", 0, "text") != "plain" || get(msg, "usage", "output_tokens") != float64(DefaultUsage.OutputTokens) {
		t.Errorf("message %v", msg)
	}
	evs := readSSE(t, post(t, ctx, srv.URL+"/v1/messages", `{"model":"m","stream":true,"messages":[]}`).Body)
	for _, e := range evs {
		if e.Name == "content_block_start" && get(e.Data, "content_block", "name") != "Write" {
			t.Errorf("tool %v, want Write", get(e.Data, "content_block", "name"))
		}
	}
}

func TestOpenAIStream(t *testing.T) {
	srv := Start(t, Script{OpenAI: []Reply{
		{Text: "thinking aloud", Command: "echo hi >> f"},
		Text("done"),
	}})
	ctx := testCtx(t)
	body := `{"model":"gpt-x","stream":true,"input":[],"tools":[{"type":"function","name":"exec_command"},{"type":"function","name":"write_stdin"}]}`
	evs := readSSE(t, post(t, ctx, srv.URL+"/v1/responses", body).Body)
	if evs[0].Name != "response.created" || evs[len(evs)-1].Name != "response.completed" {
		t.Fatalf("events %v", names(evs))
	}
	var done []map[string]any
	for i, e := range evs {
		if e.Data["type"] != e.Name || e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d %s: type %v seq %v", i, e.Name, e.Data["type"], e.Data["sequence_number"])
		}
		if e.Name == "response.output_item.done" {
			done = append(done, e.Data["item"].(map[string]any))
		}
	}
	if len(done) != 2 || done[0]["type"] != "message" || done[1]["type"] != "function_call" {
		t.Fatalf("items %v", done)
	}
	if get(done[0], "content", 0, "text") != "thinking aloud" {
		t.Errorf("message %v", done[0])
	}
	if done[1]["name"] != "exec_command" || done[1]["arguments"] != `{"cmd":"echo hi >> f","description":"Run the command the script asked for"}` && done[1]["arguments"] != `{"cmd":"echo hi >> f"}` {
		t.Errorf("function_call %v", done[1])
	}
	if id, _ := done[1]["call_id"].(string); id == "" {
		t.Error("function_call without call_id")
	}
	usage := get(evs[len(evs)-1].Data, "response", "usage")
	if get(usage, "input_tokens") != float64(DefaultUsage.InputTokens) || get(usage, "total_tokens") != float64(DefaultUsage.InputTokens+DefaultUsage.OutputTokens) {
		t.Errorf("usage %v", usage)
	}

	evs = readSSE(t, post(t, ctx, srv.URL+"/v1/responses", `{"model":"gpt-x","stream":true,"input":[]}`).Body)
	if got := get(evs[len(evs)-1].Data, "response", "output", 0, "content", 0, "text"); got != "done" {
		t.Errorf("final text %v", got)
	}
}

func TestOpenAIShellToolFollowsOffer(t *testing.T) {
	for _, tc := range []struct {
		tools, name string
		want        map[string]any
	}{
		{`[{"type":"function","name":"exec_command"}]`, "exec_command", map[string]any{"cmd": "ls"}},
		{`[{"type":"function","name":"shell_command"}]`, "shell_command", map[string]any{"command": "ls"}},
		{`[{"type":"function","name":"shell"}]`, "shell", map[string]any{"command": []any{"bash", "-lc", "ls"}}},
	} {
		srv := Start(t, Script{OpenAI: []Reply{Shell("ls")}})
		var resp map[string]any
		body := `{"model":"m","input":[],"tools":` + tc.tools + `}`
		if err := json.NewDecoder(post(t, testCtx(t), srv.URL+"/v1/responses", body).Body).Decode(&resp); err != nil {
			t.Fatal(err)
		}
		item := get(resp, "output", 0)
		var args any
		if err := json.Unmarshal([]byte(get(item, "arguments").(string)), &args); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(args)
		want, _ := json.Marshal(tc.want)
		if get(item, "name") != tc.name || string(got) != string(want) {
			t.Errorf("tools %s: call %v %s, want %s %s", tc.tools, get(item, "name"), got, tc.name, want)
		}
	}
}

func TestGeminiForms(t *testing.T) {
	srv := Start(t, Script{Gemini: []Reply{
		Text(`{"complexity_score":1}`),
		Shell("echo g >> f"),
		Text("chunked"),
	}})
	ctx := testCtx(t)
	var plain map[string]any
	if err := json.NewDecoder(post(t, ctx, srv.URL+"/v1beta/models/gemini-lite:generateContent", `{"contents":[]}`).Body).Decode(&plain); err != nil {
		t.Fatal(err)
	}
	if get(plain, "candidates", 0, "content", "parts", 0, "text") != `{"complexity_score":1}` || get(plain, "candidates", 0, "finishReason") != "STOP" {
		t.Errorf("generateContent %v", plain)
	}
	if get(plain, "usageMetadata", "promptTokenCount") != float64(DefaultUsage.InputTokens) {
		t.Errorf("usage %v", get(plain, "usageMetadata"))
	}

	evs := readSSE(t, post(t, ctx, srv.URL+"/v1beta/models/gemini-pro:streamGenerateContent?alt=sse", `{"contents":[]}`).Body)
	if len(evs) != 1 {
		t.Fatalf("%d SSE chunks, want 1", len(evs))
	}
	fc := get(evs[0].Data, "candidates", 0, "content", "parts", 0, "functionCall")
	if get(fc, "name") != "run_shell_command" || get(fc, "args", "command") != "echo g >> f" {
		t.Errorf("functionCall %v", fc)
	}
	if get(evs[0].Data, "modelVersion") != "gemini-pro" {
		t.Errorf("modelVersion %v", get(evs[0].Data, "modelVersion"))
	}

	var arr []any
	if err := json.NewDecoder(post(t, ctx, srv.URL+"/v1beta/models/gemini-pro:streamGenerateContent", `{"contents":[]}`).Body).Decode(&arr); err != nil {
		t.Fatal(err)
	}
	if get(arr, 0, "candidates", 0, "content", "parts", 0, "text") != "chunked" {
		t.Errorf("streamGenerateContent without alt=sse: %v", arr)
	}

	reqs := srv.ModelRequests(Gemini)
	if len(reqs) != 3 || reqs[0].Model != "gemini-lite" || reqs[0].Stream || !reqs[1].Stream {
		t.Errorf("recorded %d requests: %+v", len(reqs), reqs)
	}
}

func TestErrorBodies(t *testing.T) {
	srv := Start(t, Script{
		Anthropic: []Reply{Error(529, "overloaded")},
		OpenAI:    []Reply{Error(500, "boom")},
		Gemini:    []Reply{Error(429, "quota")},
	})
	ctx := testCtx(t)
	for _, tc := range []struct {
		path   string
		status int
		check  func(map[string]any) bool
	}{
		{"/v1/messages", 529, func(b map[string]any) bool {
			return b["type"] == "error" && get(b, "error", "type") == "overloaded_error" && get(b, "error", "message") == "overloaded"
		}},
		{"/v1/responses", 500, func(b map[string]any) bool {
			return get(b, "error", "type") == "server_error" && get(b, "error", "message") == "boom"
		}},
		{"/v1beta/models/g:streamGenerateContent?alt=sse", 429, func(b map[string]any) bool {
			return get(b, "error", "code") == 429.0 && get(b, "error", "status") == "RESOURCE_EXHAUSTED"
		}},
	} {
		resp := post(t, ctx, srv.URL+tc.path, `{"stream":true}`)
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status || !tc.check(body) {
			t.Errorf("%s: status %d body %v", tc.path, resp.StatusCode, body)
		}
	}
}

func TestHeadAndUnknownPaths(t *testing.T) {
	srv := Start(t, Script{})
	ctx := testCtx(t)
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, srv.URL+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("HEAD / = %d, want 404", resp.StatusCode)
	}
	if r := post(t, ctx, srv.URL+"/v1/elsewhere", `{}`); r.StatusCode != 404 {
		t.Errorf("unknown path = %d", r.StatusCode)
	}
	if r := post(t, ctx, srv.URL+"/v1/messages/count_tokens", `{}`); r.StatusCode != 200 {
		t.Errorf("count_tokens = %d", r.StatusCode)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3", n)
	}
	if n := len(srv.ModelRequests(Anthropic)); n != 0 {
		t.Errorf("%d model requests, want none", n)
	}
}

func TestRecordsRequests(t *testing.T) {
	srv := Start(t, Script{})
	ctx := testCtx(t)
	prompt := "Append turn 3 to <debate.walkie.md> & \"sign\"\nplease"
	body, _ := json.Marshal(map[string]any{"model": "claude-x", "stream": false, "messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}}})
	post(t, ctx, srv.URL+"/v1/messages?beta=true", string(body), "X-Api-Key", "k1", "Anthropic-Version", "2023-06-01")

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"contents":[{"parts":[{"text":"zipped prompt"}]}]}`))
	zw.Close()
	post(t, ctx, srv.URL+"/v1beta/models/g:generateContent", gz.String(), "Content-Encoding", "gzip")

	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Vendor != Anthropic || r.Path != "/v1/messages" || r.Query.Get("beta") != "true" || r.Model != "claude-x" || r.Stream {
		t.Errorf("request %+v", r)
	}
	if r.Header.Get("X-Api-Key") != "k1" {
		t.Errorf("header %v", r.Header)
	}
	if !r.HasText(prompt) || !srv.Saw("<debate.walkie.md>") || srv.Saw("never sent") {
		t.Error("prompt text not found in the decoded body")
	}
	if r.Reply.Text != Exhausted || !r.Exhausted {
		t.Errorf("empty script answered %+v (exhausted %t)", r.Reply, r.Exhausted)
	}
	if !reqs[1].HasText("zipped prompt") {
		t.Errorf("gzip body not decoded: %q", reqs[1].Raw)
	}
}

func TestScriptOrderDefaultAndFunc(t *testing.T) {
	srv := Start(t, Script{
		Anthropic: []Reply{Text("one")},
		Default:   Text("fallback"),
		Func: func(r *Request) (Reply, bool) {
			if r.HasText("route me") {
				return Text("routed"), true
			}
			return Reply{}, false
		},
	})
	ctx := testCtx(t)
	text := func(body string) string {
		var m map[string]any
		json.NewDecoder(post(t, ctx, srv.URL+"/v1/messages", body).Body).Decode(&m)
		s, _ := get(m, "content", 0, "text").(string)
		return s
	}
	got := []string{text(`{"messages":["route me"]}`), text(`{}`), text(`{}`)}
	if strings.Join(got, ",") != "routed,one,fallback" {
		t.Errorf("answers %v", got)
	}
	if srv.Remaining(Anthropic) != 0 {
		t.Errorf("remaining %d", srv.Remaining(Anthropic))
	}
	if reqs := srv.ModelRequests(Anthropic); !reqs[2].Exhausted || reqs[1].Exhausted {
		t.Error("Exhausted flags wrong")
	}
}

func TestHangHoldsUntilClientLeaves(t *testing.T) {
	srv := Start(t, Script{OpenAI: []Reply{Hang(), Text("after")}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(`{"stream":true}`))
	start := time.Now()
	_, err := http.DefaultClient.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hanging request ended with %v, want the client's deadline", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("returned after %v", d)
	}
	// The next call is answered normally.
	if r := post(t, testCtx(t), srv.URL+"/v1/responses", `{"stream":true}`); r.StatusCode != 200 {
		t.Errorf("status %d", r.StatusCode)
	}
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", Script{Gemini: []Reply{Hang(), Stall("half an ans")}})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	go func() {
		resp, err := http.Post(srv.URL+"/v1beta/models/g:generateContent", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	ctx := testCtx(t)
	if err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The stalled stream delivers its opening, then nothing.
	resp := post(t, ctx, srv.URL+"/v1beta/models/g:streamGenerateContent?alt=sse", `{}`)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "half an ans") {
		t.Fatalf("stall opening %q, %v", line, err)
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close blocked on held requests")
	}
	if err := <-errs; err == nil {
		t.Error("hanging request got an answer")
	}
	srv.Close() // twice is fine
}

func TestDelay(t *testing.T) {
	srv := Start(t, Script{Anthropic: []Reply{{Text: "slow", Delay: 200 * time.Millisecond}}})
	start := time.Now()
	post(t, testCtx(t), srv.URL+"/v1/messages", `{}`)
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("answered after %v, want ≥ 200ms", d)
	}
}

func TestWaitRequestsTimesOut(t *testing.T) {
	srv := Start(t, Script{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.WaitRequests(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRequests = %v", err)
	}
}

func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		if srv, err := Listen(addr, Script{}); err == nil {
			srv.Close()
			t.Errorf("Listen(%q) accepted a non-loopback address", addr)
		}
	}
}

func TestClosedURLRefuses(t *testing.T) {
	u, err := ClosedURL()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(u+"/v1/messages", "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
		t.Fatal("closed port answered")
	}
}

func TestReadScript(t *testing.T) {
	s, err := ReadScript(strings.NewReader(`{
		"anthropic": [{"command": "echo hi >> f"}, {"text": "done", "usage": {"input_tokens": 5, "output_tokens": 2}}],
		"openai": [{"hang": true}, {"text": "late", "delay": "1.5s"}],
		"gemini": [{"status": 500, "message": "boom"}, {"tool": {"name": "write_file", "args": {"file_path": "f"}}}],
		"default": {"text": "bye"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Anthropic[0].Command != "echo hi >> f" || s.Anthropic[1].Usage.InputTokens != 5 ||
		!s.OpenAI[0].Hang || s.OpenAI[1].Delay != 1500*time.Millisecond ||
		s.Gemini[0].Status != 500 || s.Gemini[1].Tool.Name != "write_file" || s.Default.Text != "bye" {
		t.Errorf("script %+v", s)
	}
	if _, err := ReadScript(strings.NewReader(`{"anthropic":[{"txt":"typo"}]}`)); err == nil {
		t.Error("unknown field accepted")
	}
	if _, err := ReadScript(strings.NewReader(`{"openai":[{"delay":"soon"}]}`)); err == nil {
		t.Error("bad delay accepted")
	}
}

func TestHomeHelpers(t *testing.T) {
	dir := t.TempDir()
	env, err := WriteCodexHome(filepath.Join(dir, "codex"), "http://127.0.0.1:1234/")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "codex", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`model_provider = "fake"`, `base_url = "http://127.0.0.1:1234/v1"`, `wire_api = "responses"`, `env_key = "FAKE_API_KEY"`, "request_max_retries = 0", "stream_max_retries = 0"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.toml lacks %s:\n%s", want, cfg)
		}
	}
	if strings.Join(env, " ") != "CODEX_HOME="+filepath.Join(dir, "codex")+" FAKE_API_KEY="+FakeAPIKey {
		t.Errorf("codex env %v", env)
	}

	env, err = WriteGeminiHome(dir, "http://127.0.0.1:1234")
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, ".gemini", "settings.json"))
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatal(err)
	}
	if get(settings, "security", "auth", "selectedType") != "gemini-api-key" || get(settings, "general", "maxAttempts") != 1.0 ||
		get(settings, "telemetry", "enabled") != false || get(settings, "privacy", "usageStatisticsEnabled") != false {
		t.Errorf("settings %v", settings)
	}
	if !contains(env, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:1234") || !contains(env, "HOME="+dir) || !contains(env, "GEMINI_API_KEY="+FakeAPIKey) {
		t.Errorf("gemini env %v", env)
	}
	if env := ClaudeEnv("http://127.0.0.1:1"); !contains(env, "ANTHROPIC_BASE_URL=http://127.0.0.1:1") || !contains(env, "CLAUDE_CODE_MAX_RETRIES=0") {
		t.Errorf("claude env %v", env)
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
