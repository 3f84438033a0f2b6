package modelserver

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// o200k_base counts as OpenAI's tokenizer does (figures from tiktoken).
func TestCountTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "hello world": 2} {
		if n, err := CountTokens([]byte(s)); err != nil || n != want {
			t.Errorf("%q: %d, %v; want %d", s, n, err, want)
		}
	}
}

// Measure reports what a request costs: its tokens, the prefix an earlier
// request began with as cached, in each vendor's way of saying it.
func TestMeasureUsage(t *testing.T) {
	srv := Start(t, Script{Measure: true, Default: Text("ok")})
	system := strings.Repeat("You are a careful agent. ", 200)
	body := func(msgs ...string) string {
		var ms []map[string]any
		for _, m := range msgs {
			ms = append(ms, map[string]any{"role": "user", "content": m})
		}
		b, _ := json.Marshal(map[string]any{"model": "m", "system": system, "messages": ms})
		return string(b)
	}
	ctx := context.Background()
	for i, msgs := range [][]string{{"first question"}, {"first question", "a longer second message that follows it"}, {"another first"}} {
		resp := post(t, ctx, srv.URL+"/v1/messages", body(msgs...))
		var got struct {
			Usage struct {
				Input  int `json:"input_tokens"`
				Cached int `json:"cache_read_input_tokens"`
			} `json:"usage"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		r := srv.ModelRequests(Anthropic)[i]
		total, err := r.Tokens()
		if err != nil {
			t.Fatal(err)
		}
		sys, _ := CountTokens([]byte(`"` + strings.TrimSpace(system) + ` "`))
		switch {
		case got.Usage.Input+got.Usage.Cached != total:
			t.Errorf("call %d: input %d + cached %d is not its %d tokens", i, got.Usage.Input, got.Usage.Cached, total)
		case i == 0 && got.Usage.Cached != 0:
			t.Errorf("the first call read %d tokens from a cache", got.Usage.Cached)
		case i == 1 && got.Usage.Cached < sys:
			t.Errorf("call 2 begins as call 1 did, system prompt and first message, and only %d of them are cached", got.Usage.Cached)
		case i == 2 && (got.Usage.Cached < sys || got.Usage.Cached >= total-2):
			t.Errorf("call 3 shares only the system prompt (%d tokens) with the others, and %d are cached", sys, got.Usage.Cached)
		}
	}
}

// A reply of several calls answers them all in one message, as a model
// asks for independent reads at once; the next request's tool results
// are what the tools returned, and Reached finds what was read whole.
func TestSeveralCallsAndToolResults(t *testing.T) {
	srv := Start(t, Script{Anthropic: []Reply{{Commands: []string{"sed -n '1,2p' f", "tail -n +3 f"}}}})
	resp := post(t, context.Background(), srv.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"go"}]}`)
	var got struct {
		Content []struct {
			Type  string         `json:"type"`
			ID    string         `json:"id"`
			Input map[string]any `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Content) != 2 || got.StopReason != "tool_use" || got.Content[0].ID == got.Content[1].ID || got.Content[1].Input["command"] != "tail -n +3 f" {
		t.Fatalf("answer %s", b)
	}
	post(t, context.Background(), srv.URL+"/v1/messages", `{"model":"m","messages":[{"role":"user","content":"go"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"line one nonceA\n"},
		{"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"…12 tokens truncated… nonceC"}]}]}]}`)
	r := srv.ModelRequests(Anthropic)[1]
	reached := Reached([]*Request{r}, []string{"nonceA", "nonceB", "nonceC"})
	if !reached["nonceA"] || reached["nonceB"] || !reached["nonceC"] || len(r.ToolResults()) != 2 {
		t.Errorf("reached %v from %q", reached, r.ToolResults())
	}
}

// A compact marker (format 4) costs at most 40 tokens, from the first
// entry to the ten-thousandth; today's (format 3) cost about three times
// as much.
func TestCompactMarkerTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"claude", "codex"}, MaxRounds: 10, Briefing: []byte("Decide.\n")}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if _, err := walkie.Append(file, walkie.Post{From: []string{"claude", "codex"}[i%2], Body: []byte("An argument.\n")}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var markers []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "<!-- walkie ") {
			markers = append(markers, l+"\n")
		}
	}
	if len(markers) != 6 {
		t.Fatalf("%d markers", len(markers))
	}
	// The largest sequence numbers a record reaches cost the most.
	last := markers[len(markers)-1]
	markers = append(markers, strings.Replace(last, "seq=6 ", "seq=9999 ", 1), strings.Replace(last, "seq=6 ", "seq=123456 ", 1))
	for _, m := range markers {
		if n, _ := CountTokens([]byte(m)); n > 40 {
			t.Errorf("%q costs %d tokens, over 40", m, n)
		}
	}
}
