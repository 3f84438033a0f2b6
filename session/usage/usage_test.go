package usage

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The samples are the real CLIs' output, recorded against the fake model
// server (cmd/fakemodel; go test ./cmd/fakemodel/modelserver -run CLI
// -update refreshes them). Every model call there reports 1200 input and
// 34 output tokens, and a turn makes two calls.
const samples = "../../cmd/fakemodel/testdata"

func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(samples, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pty is how a session's transcript holds the output: stderr's noise
// first (warnings at start-up), stdout after, lines ended by "\r\n".
func pty(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
		if len(p) > 0 && p[len(p)-1] != '\n' {
			b = append(b, '\n')
		}
	}
	return []byte(strings.ReplaceAll(string(b), "\n", "\r\n"))
}

func TestParseSamples(t *testing.T) {
	opus := []ModelUsage{{Name: "claude-opus-4-8", InputTokens: 2400, OutputTokens: 68}}
	pro := []ModelUsage{{Name: "gemini-2.5-pro", InputTokens: 2400, OutputTokens: 68}}
	tests := []struct {
		name, format string
		text         []byte
		want         Report
	}{
		{"claude json", ClaudeJSON, sample(t, "claude-result.json"),
			Report{InputTokens: 2400, OutputTokens: 68, CostUSD: 0.0137, HasCost: true, Model: "claude-opus-4-8", Models: opus}},
		{"claude stream-json", ClaudeJSON, sample(t, "claude-stream.jsonl"),
			Report{InputTokens: 2400, OutputTokens: 68, CostUSD: 0.0137, HasCost: true, Model: "claude-opus-4-8", Models: opus}},
		{"claude in a pty", ClaudeJSON, pty([]byte("\x1b[?25l"), sample(t, "claude-result.json"), []byte("\x1b[?25h")),
			Report{InputTokens: 2400, OutputTokens: 68, CostUSD: 0.0137, HasCost: true, Model: "claude-opus-4-8", Models: opus}},
		{"claude error", ClaudeJSON, sample(t, "runs/claude-http-500-json.stdout"),
			Report{HasCost: true, IsError: true}},
		{"codex", CodexJSONL, pty(sample(t, "runs/codex-ok.stderr"), sample(t, "codex-events.jsonl")),
			Report{InputTokens: 2400, OutputTokens: 68}},
		{"gemini json", GeminiJSON, pty(sample(t, "runs/gemini-ok.stderr"), sample(t, "gemini-result.json")),
			Report{InputTokens: 2400, OutputTokens: 68, Model: "gemini-2.5-pro", Models: pro}},
		{"gemini stream-json", GeminiJSON, pty(sample(t, "runs/gemini-stream.stderr"), sample(t, "gemini-stream.jsonl")),
			Report{InputTokens: 2400, OutputTokens: 68, Model: "gemini-2.5-pro", Models: pro}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.format, tt.text)
			if !ok {
				t.Fatal("no report found")
			}
			if math.Abs(got.CostUSD-tt.want.CostUSD) > 1e-9 {
				t.Errorf("cost %v, want %v", got.CostUSD, tt.want.CostUSD)
			}
			got.CostUSD = tt.want.CostUSD
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Whole transcripts of real sessions through walkie (testdata/README.md).
func TestParseTranscripts(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	lite := ModelUsage{Name: "gemini-3.5-flash-lite", InputTokens: 1200, OutputTokens: 34}
	tests := []struct {
		name, format string
		ok           bool
		want         Report
	}{
		{"claude-turn.txt", ClaudeJSON, true, Report{InputTokens: 2400, OutputTokens: 68, CostUSD: 0.0137, HasCost: true, Model: "claude-opus-4-8",
			Models: []ModelUsage{{Name: "claude-opus-4-8", InputTokens: 2400, OutputTokens: 68}}}},
		{"codex-turn.txt", CodexJSONL, true, Report{InputTokens: 2400, OutputTokens: 68}},
		{"gemini-turn.txt", GeminiJSON, true, Report{InputTokens: 3600, OutputTokens: 102, Model: "gemini-3.8-flash",
			Models: []ModelUsage{lite, {Name: "gemini-3.8-flash", InputTokens: 2400, OutputTokens: 68}}}},
		{"claude-500.txt", ClaudeJSON, true, Report{HasCost: true, IsError: true}},
		{"codex-500.txt", CodexJSONL, false, Report{}},
		// The router's call went through before the turn's calls failed.
		{"gemini-500.txt", GeminiJSON, true, Report{InputTokens: 1200, OutputTokens: 34, IsError: true, Model: lite.Name,
			Models: []ModelUsage{lite, {Name: "gemini-3.8-flash"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Parse(tt.format, read(tt.name))
			if ok != tt.ok || math.Abs(got.CostUSD-tt.want.CostUSD) > 1e-9 {
				t.Fatalf("%+v, %v", got, ok)
			}
			got.CostUSD = tt.want.CostUSD
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestParseRuns reads every recorded run, success or failure, as a pty
// shows it (stderr and stdout mixed, in either order): a run that exited 0
// with machine output yields the two calls' tokens; one that failed yields
// no report, or one flagged as an error with no tokens to price.
func TestParseRuns(t *testing.T) {
	var cases []struct {
		CLI      string   `json:"cli"`
		Case     string   `json:"case"`
		Args     []string `json:"args"`
		ExitCode int      `json:"exit_code"`
		Stdout   string   `json:"stdout_file"`
		Stderr   string   `json:"stderr_file"`
		Sigterm  string   `json:"sigterm_by_test_after"`
	}
	if err := json.Unmarshal(sample(t, "runs/cases.json"), &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("only %d recorded runs", len(cases))
	}
	formats := map[string]string{"claude": ClaudeJSON, "codex": CodexJSONL, "gemini": GeminiJSON}
	for _, c := range cases {
		t.Run(c.Case, func(t *testing.T) {
			var out, errOut []byte
			if c.Stdout != "" {
				out = sample(t, c.Stdout)
			}
			if c.Stderr != "" {
				errOut = sample(t, c.Stderr)
			}
			args := strings.Join(c.Args, " ")
			machine := strings.Contains(args, "json") && !strings.Contains(args, "login")
			for _, text := range [][]byte{pty(errOut, out), pty(out, errOut)} {
				r, ok := Parse(formats[c.CLI], text)
				switch {
				case c.ExitCode == 0 && machine && c.Sigterm == "" && len(out) > 0:
					if !ok || r.IsError || r.InputTokens != 2400 || r.OutputTokens != 68 {
						t.Errorf("a good run: %+v, %v", r, ok)
					}
				case ok && (!r.IsError || r.InputTokens != 0 || r.OutputTokens != 0 || r.CostUSD != 0):
					t.Errorf("exit %d: %+v, want no report or an error with nothing spent", c.ExitCode, r)
				}
			}
		})
	}
}

func TestParseGemini(t *testing.T) {
	// Without -m, gemini asks a small model where to route the turn, then
	// answers with the model it picked: two models, each at its price.
	routed := `{"type":"init","timestamp":"2026-11-30T03:25:01.177Z","session_id":"0f29","model":"auto"}
{"type":"result","timestamp":"2026-11-30T03:25:01.974Z","status":"success","stats":{"total_tokens":2468,"input_tokens":2400,"output_tokens":68,"cached":0,"input":2400,"duration_ms":816,"tool_calls":0,"models":{"gemini-3.5-flash-lite":{"total_tokens":1234,"input_tokens":1200,"output_tokens":34,"cached":0,"input":1200},"gemini-3.8-flash":{"total_tokens":1400,"input_tokens":1200,"output_tokens":100,"cached":0,"input":1200}}}}
`
	r, ok := Parse(GeminiJSON, []byte(routed))
	want := Report{InputTokens: 2400, OutputTokens: 34 + 200, Model: "gemini-3.8-flash", Models: []ModelUsage{
		{Name: "gemini-3.5-flash-lite", InputTokens: 1200, OutputTokens: 34},
		{Name: "gemini-3.8-flash", InputTokens: 1200, OutputTokens: 200}, // thinking is in total_tokens only
	}}
	if !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("stream-json, two models:\n got %+v\nwant %+v", r, want)
	}

	// -o json: the whole prompt (cached or not) is input; thinking is
	// output; an error beside the stats marks the run failed.
	pretty := `Warning: 256-color support not detected.
{
  "session_id": "abb3",
  "error": {"type": "Error", "message": "boom", "code": 500},
  "stats": {"models": {"gemini-2.5-pro": {"tokens": {"input": 400, "prompt": 2400, "candidates": 68, "total": 2968, "cached": 2000, "thoughts": 500, "tool": 0}}}}
}
`
	r, ok = Parse(GeminiJSON, []byte(pretty))
	want = Report{InputTokens: 2400, CachedInputTokens: 2000, OutputTokens: 568, IsError: true, Model: "gemini-2.5-pro",
		Models: []ModelUsage{{Name: "gemini-2.5-pro", InputTokens: 2400, OutputTokens: 568}}}
	if !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("json with cache and thinking:\n got %+v\nwant %+v", r, want)
	}

	// A failed stream-json run still reports what was spent before it.
	failed := `{"type":"result","timestamp":"2026-11-30T03:25:02.750Z","status":"error","error":{"type":"unknown","message":"[API Error: 500]"},"stats":{"total_tokens":1234,"input_tokens":1200,"output_tokens":34,"models":{"gemini-3.5-flash-lite":{"total_tokens":1234,"input_tokens":1200,"output_tokens":34}}}}`
	if r, ok := Parse(GeminiJSON, []byte(failed)); !ok || !r.IsError || r.InputTokens != 1200 {
		t.Errorf("failed run: %+v, %v", r, ok)
	}
}

func TestParseClaudeModels(t *testing.T) {
	// A turn that used a second model (a subagent, say): both named, the
	// main model is the one that wrote most.
	text := `{"type":"result","is_error":false,"total_cost_usd":0.5,"usage":{"input_tokens":10,"cache_read_input_tokens":1000,"cache_creation_input_tokens":100,"output_tokens":300},"modelUsage":{"claude-haiku-4-5":{"inputTokens":5,"outputTokens":50},"claude-opus-4-8[1m]":{"inputTokens":5,"cacheReadInputTokens":1000,"cacheCreationInputTokens":100,"outputTokens":250}}}`
	r, ok := Parse(ClaudeJSON, []byte(text))
	want := Report{InputTokens: 1110, CachedInputTokens: 1000, OutputTokens: 300, CostUSD: 0.5, HasCost: true, Model: "claude-opus-4-8",
		Models: []ModelUsage{{Name: "claude-haiku-4-5", InputTokens: 5, OutputTokens: 50}, {Name: "claude-opus-4-8", InputTokens: 1105, OutputTokens: 250}}}
	if !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("\n got %+v\nwant %+v", r, want)
	}
	// Only the result object counts, not an event that happens to carry a
	// cost-like field.
	if _, ok := Parse(ClaudeJSON, []byte(`{"type":"assistant","total_cost_usd":1}`)); ok {
		t.Error("an assistant event was read as the result")
	}
	// The last result wins (a CLI that prints one per turn).
	two := `{"type":"result","total_cost_usd":1}` + "\n" + `{"type":"result","total_cost_usd":2}`
	if r, _ := Parse(ClaudeJSON, []byte(two)); r.CostUSD != 2 {
		t.Errorf("cost %v, want the last result's", r.CostUSD)
	}
}

func TestParseCodex(t *testing.T) {
	// A command's output rides in its event; a line of megabytes must not
	// hide the usage that follows it.
	big := `{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"` + strings.Repeat("x", 9<<20) + `"}}`
	text := big + "\n" + `{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":5,"output_tokens":3,"reasoning_output_tokens":2}}` + "\n"
	r, ok := Parse(CodexJSONL, []byte(text))
	if !ok || r.InputTokens != 7 || r.OutputTokens != 3 {
		t.Errorf("after a 9 MiB line: %+v, %v", r, ok)
	}
	// A reconnect is an error event, not a failure; turn.failed is.
	retried := `{"type":"error","message":"Reconnecting... 1/5"}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}`
	if r, ok := Parse(CodexJSONL, []byte(retried)); !ok || r.IsError {
		t.Errorf("a survived reconnect: %+v, %v", r, ok)
	}
	// A failed turn reports no usage: what it spent is unknown, not zero.
	if r, ok := Parse(CodexJSONL, sample(t, "runs/codex-http-500-json.stdout")); ok {
		t.Errorf("turn.failed: %+v, %v", r, ok)
	}
	// A session with a completed turn and a failed one.
	mixed := append(sample(t, "codex-events.jsonl"), sample(t, "runs/codex-http-500-json.stdout")...)
	if r, ok := Parse(CodexJSONL, mixed); !ok || !r.IsError || r.InputTokens != 2400 {
		t.Errorf("completed then failed: %+v, %v", r, ok)
	}
	// Several turns in one session add up.
	twice := append(sample(t, "codex-events.jsonl"), sample(t, "codex-events.jsonl")...)
	if r, _ := Parse(CodexJSONL, twice); r.InputTokens != 4800 || r.OutputTokens != 136 {
		t.Errorf("two turns: %+v", r)
	}
}

func TestParseNothing(t *testing.T) {
	for _, f := range []string{ClaudeJSON, CodexJSONL, GeminiJSON} {
		for _, text := range []string{"", "\n", "Not logged in · Please run /login\n", "{", "{\n", "{\"type\":", "[1,2]\n", "}\n{\n"} {
			if r, ok := Parse(f, []byte(text)); ok || !reflect.DeepEqual(r, Report{}) {
				t.Errorf("%s on %q: %+v, %v", f, text, r, ok)
			}
		}
	}
	if _, ok := Parse("text", sample(t, "claude-result.json")); ok {
		t.Error("an unknown format found a report")
	}
}

// A figure no session can have reported is refused, whatever the CLI:
// believed, a negative cost offsets a budget (issue 27, item 6), a
// negative count offsets the others, and a huge one overflows a sum into
// a plausible number. The report then carries no figures at all.
func TestParseRefusesUnbelievableFigures(t *testing.T) {
	for _, tt := range []struct {
		name, format, text, why string
	}{
		{"negative cost", ClaudeJSON, `{"type":"result","total_cost_usd":-5,"usage":{"input_tokens":10,"output_tokens":2}}`, "a cost of $-5, a negative one"},
		{"absurd cost", ClaudeJSON, `{"type":"result","total_cost_usd":1e300,"usage":{"input_tokens":10,"output_tokens":2}}`, "more than the $10000 one session can cost"},
		{"cost past the bound", ClaudeJSON, `{"type":"result","total_cost_usd":10000.01}`, "more than the $10000"},
		{"negative input", ClaudeJSON, `{"type":"result","total_cost_usd":1,"usage":{"input_tokens":-1000000,"output_tokens":2}}`, "-1000000 input tokens, a negative count"},
		{"negative cache read", ClaudeJSON, `{"type":"result","total_cost_usd":1,"usage":{"input_tokens":10,"cache_read_input_tokens":-9}}`, "-9 input tokens"},
		{"negative model tokens", ClaudeJSON, `{"type":"result","total_cost_usd":1,"modelUsage":{"m":{"inputTokens":-3}}}`, "-3 input tokens of m"},
		{"negative streamed call", ClaudeJSON, `{"type":"assistant","message":{"id":"a","usage":{"input_tokens":5,"output_tokens":-7}}}`, "-7 output tokens"},
		{"streamed calls past the bound", ClaudeJSON, `{"type":"assistant","message":{"id":"a","usage":{"input_tokens":9000000000}}}` + "\n" +
			`{"type":"assistant","message":{"id":"b","usage":{"input_tokens":9000000000}}}`, "more than the 10000000000 one session can use"},
		{"codex offset", CodexJSONL, `{"type":"turn.completed","usage":{"input_tokens":1000,"output_tokens":10}}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":-900,"output_tokens":10}}`, "-900 input tokens"},
		{"codex overflow", CodexJSONL, strings.Repeat(`{"type":"turn.completed","usage":{"input_tokens":9223372036854775807,"output_tokens":1}}`+"\n", 2), "9223372036854775807 input tokens, more than"},
		{"gemini negative thoughts", GeminiJSON, `{"type":"result","stats":{"models":{"g":{"tokens":{"prompt":10,"candidates":5,"thoughts":-5}}}}}`, "-5 output tokens"},
		{"gemini total below input", GeminiJSON, `{"type":"result","stats":{"models":{"g":{"input_tokens":10,"output_tokens":1,"total_tokens":-100}}}}`, "-100 total tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := Parse(tt.format, []byte(tt.text+"\n"))
			if !ok || !strings.Contains(r.Refused, tt.why) || !strings.HasPrefix(r.Refused, "the CLI reported ") {
				t.Fatalf("%+v, %v; want refused with %q", r, ok, tt.why)
			}
			if r.InputTokens != 0 || r.OutputTokens != 0 || r.CostUSD != 0 || r.HasCost || r.Models != nil {
				t.Errorf("a refused report carries figures: %+v", r)
			}
		})
	}
	// At the bounds, a figure is believed.
	edge := `{"type":"result","total_cost_usd":10000,"usage":{"input_tokens":10000000000,"output_tokens":0}}`
	if r, ok := Parse(ClaudeJSON, []byte(edge)); !ok || r.Refused != "" || r.CostUSD != MaxCostUSD || r.InputTokens != MaxTokens {
		t.Errorf("at the bounds: %+v, %v", r, ok)
	}
	// NaN and infinities are not JSON: such a line is no result at all.
	for _, bad := range []string{"NaN", "Infinity", "-Inf", "1e400"} {
		if r, ok := Parse(ClaudeJSON, []byte(`{"type":"result","total_cost_usd":`+bad+`}`+"\n")); ok {
			t.Errorf("total_cost_usd %s: %+v", bad, r)
		}
	}
}

func TestCheckCost(t *testing.T) {
	for _, c := range []struct {
		usd float64
		ok  bool
	}{{0, true}, {0.01, true}, {MaxCostUSD, true}, {math.Copysign(0, -1), true},
		{-0.0001, false}, {MaxCostUSD * 1.0001, false}, {math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false}} {
		if err := CheckCost(c.usd); (err == nil) != c.ok {
			t.Errorf("CheckCost(%v) = %v", c.usd, err)
		}
	}
}

// The cached part of the prompt is what each CLI says it is: claude's
// cache_read_input_tokens, codex's cached_input_tokens (summed over its
// turns), gemini's cached; it stays inside InputTokens.
func TestCachedInputTokens(t *testing.T) {
	for format, text := range map[string]string{
		ClaudeJSON: `{"type":"result","is_error":false,"total_cost_usd":0.1,"usage":{"input_tokens":100,"cache_read_input_tokens":700,"output_tokens":5}}`,
		CodexJSONL: `{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":300,"output_tokens":5}}` + "\n" +
			`{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":400,"output_tokens":5}}`,
		GeminiJSON: `{"type":"result","status":"success","stats":{"models":{"m":{"input_tokens":800,"output_tokens":5,"total_tokens":805,"cached":700}}}}`,
	} {
		r, ok := Parse(format, []byte(text))
		if !ok || r.InputTokens != 800 || r.CachedInputTokens != 700 {
			t.Errorf("%s: %+v, %v; want 800 in, 700 of them cached", format, r, ok)
		}
	}
}
