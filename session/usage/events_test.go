package usage

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every line of the recorded streams: each CLI's own events are events,
// and exactly the last one of a turn is final; noise is neither.
func TestEventSamples(t *testing.T) {
	tests := []struct {
		format, file string
		finals       int
	}{
		{ClaudeJSON, "claude-turn.txt", 1},
		{CodexJSONL, "codex-turn.txt", 1},
		{GeminiJSON, "gemini-turn.txt", 1},
		{ClaudeJSON, "claude-500.txt", 1},
		{CodexJSONL, "codex-500.txt", 1},
		{GeminiJSON, "gemini-500.txt", 1},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			lines := bytes.Split(readTestdata(t, tt.file), []byte("\n"))
			events, finals, lastFinal := 0, 0, -1
			for i, l := range lines {
				ev, fin := Event(tt.format, l)
				if fin && !ev {
					t.Fatalf("line %d final but not an event", i+1)
				}
				if ev {
					events++
				}
				if fin {
					finals++
					lastFinal = i
				}
			}
			if finals != tt.finals || events < 2 {
				t.Fatalf("%d events, %d final, want %d final", events, finals, tt.finals)
			}
			// Nothing but blank lines and noise after the final event.
			for _, l := range lines[lastFinal+1:] {
				if ev, _ := Event(tt.format, l); ev {
					t.Errorf("an event after the final one: %.80s", l)
				}
			}
		})
	}
}

func TestEvent(t *testing.T) {
	tests := []struct {
		format, line string
		event, final bool
	}{
		{ClaudeJSON, `{"type":"result","subtype":"success"}`, true, true},
		{ClaudeJSON, `  {"type":"result"}`, true, true},
		{ClaudeJSON, `{"type":"assistant","message":{}}`, true, false},
		{ClaudeJSON, `{"type":"turn.completed"}`, true, false},
		{CodexJSONL, `{"type":"turn.completed","usage":{}}`, true, true},
		{CodexJSONL, `{"type":"turn.failed","error":{}}`, true, true},
		{CodexJSONL, `{"type":"result"}`, true, false},
		{GeminiJSON, `{"type":"result","status":"error"}`, true, true},
		{GeminiJSON, `{"type":"message","role":"assistant"}`, true, false},
		// Not events: another key first, a quote of one inside text, noise.
		{ClaudeJSON, `{"subtype":"x","type":"result"}`, false, false},
		{ClaudeJSON, `the model said {"type":"result"}`, false, false},
		{ClaudeJSON, `{"type":""}`, false, false},
		{ClaudeJSON, `{"type":"result`, false, false},
		{CodexJSONL, `Reading additional input from stdin...`, false, false},
		{"none", `{"type":"result"}`, false, false},
	}
	for _, tt := range tests {
		ev, fin := Event(tt.format, []byte(tt.line))
		if ev != tt.event || fin != tt.final {
			t.Errorf("%s %q: event %v final %v, want %v %v", tt.format, tt.line, ev, fin, tt.event, tt.final)
		}
	}
}

// A claude session ended before its result: the usage of the model calls
// it streamed, one figure per call however many events carried it, marked
// partial.
func TestParseClaudeStreamed(t *testing.T) {
	full := sample(t, "claude-stream.jsonl")
	cut := full[:bytes.Index(full, []byte(`{"type":"result"`))]
	r, ok := Parse(ClaudeJSON, cut)
	want := Report{InputTokens: 2400, OutputTokens: 2, Partial: true, Model: "claude-opus-4-8",
		Models: []ModelUsage{{Name: "claude-opus-4-8", InputTokens: 2400, OutputTokens: 2}}}
	if !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("cut before the result:\n got %+v, %v\nwant %+v", r, ok, want)
	}
	// Two content blocks of one call: one call, its larger figures.
	twoBlocks := `{"type":"assistant","message":{"id":"m1","model":"claude-opus-4-8[1m]","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}
{"type":"assistant","message":{"id":"m1","model":"claude-opus-4-8[1m]","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":40}}}
{"type":"assistant","message":{"id":"m2","model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":3}}}`
	r, ok = Parse(ClaudeJSON, []byte(twoBlocks))
	want = Report{InputTokens: 105, CachedInputTokens: 90, OutputTokens: 43, Partial: true, Model: "claude-opus-4-8",
		Models: []ModelUsage{{Name: "claude-haiku-4-5", InputTokens: 5, OutputTokens: 3}, {Name: "claude-opus-4-8", InputTokens: 100, OutputTokens: 40}}}
	if !ok || !reflect.DeepEqual(r, want) {
		t.Errorf("two blocks of one call:\n got %+v, %v\nwant %+v", r, ok, want)
	}
	// The result, when it came, is the figure: never partial.
	if r, _ := Parse(ClaudeJSON, full); r.Partial || !r.HasCost {
		t.Errorf("with the result: %+v", r)
	}
	// An assistant event without usage is no figure.
	if r, ok := Parse(ClaudeJSON, []byte(`{"type":"assistant","message":{"id":"m1"}}`)); ok {
		t.Errorf("no usage: %+v", r)
	}
}

// The read-only turns: claude's and gemini's CLIs refused the write, and
// said why in the tool result; codex ran nothing; all three claimed to
// have appended.
func TestExplainReadOnly(t *testing.T) {
	tests := []struct {
		format, file string
		refused      string // in the last refusal
		n            int
	}{
		{ClaudeJSON, "claude-readonly.txt", "Output redirection to '/tmp/debate/d.walkie.md' was blocked", 1},
		{GeminiJSON, "gemini-readonly.txt", "Access denied: plan path (/tmp/debate/d.walkie.md) must be within the designated plans directory", 1},
		{CodexJSONL, "codex-readonly.txt", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			w := Explain(tt.format, readTestdata(t, tt.file))
			if len(w.Refused) != tt.n || tt.n > 0 && !strings.Contains(w.Refused[0], tt.refused) {
				t.Errorf("refused %q", w.Refused)
			}
			if w.Message != "I appended my turn." || w.Error != "" {
				t.Errorf("message %q, error %q", w.Message, w.Error)
			}
			line := w.String()
			if tt.n > 0 && !strings.Contains(line, "a tool call was refused or failed: \""+tt.refused) {
				t.Errorf("line %q", line)
			}
			if !strings.HasSuffix(line, `its last message: "I appended my turn."`) {
				t.Errorf("line %q", line)
			}
		})
	}
}

func TestExplainErrors(t *testing.T) {
	tests := []struct {
		format, file, err string
	}{
		{ClaudeJSON, "claude-500.txt", "API Error: 500"},
		{CodexJSONL, "codex-500.txt", "We’re currently experiencing high demand"},
		{GeminiJSON, "gemini-500.txt", `[API Error: {"error":{"code":500`},
	}
	for _, tt := range tests {
		w := Explain(tt.format, readTestdata(t, tt.file))
		if !strings.HasPrefix(w.Error, tt.err) {
			t.Errorf("%s: error %q, want it to start %q", tt.file, w.Error, tt.err)
		}
		// The error says it all: the last message is not quoted after it.
		if s := w.String(); !strings.HasPrefix(s, "the CLI reported \"") || strings.Contains(s, "last message") {
			t.Errorf("%s: %q", tt.file, s)
		}
	}
}

func TestExplainShapes(t *testing.T) {
	// A failed codex command: its last line of output says why.
	codex := `{"type":"item.completed","item":{"type":"command_execution","command":"/bin/bash -lc 'echo x >> f'","aggregated_output":"line one\n/bin/bash: f: Read-only file system\n","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"type":"agent_message","text":"I could not write the file."}}`
	w := Explain(CodexJSONL, []byte(codex))
	want := Why{Refused: []string{"/bin/bash -lc 'echo x >> f': /bin/bash: f: Read-only file system"}, Message: "I could not write the file."}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("codex:\n got %+v\nwant %+v", w, want)
	}
	// claude denials the stream did not show as tool results; a list of
	// text blocks as a tool result; a refusal in words only.
	claude := `{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":[{"type":"text","text":"denied"},{"type":"text","text":"twice"}]}]}}
{"type":"result","is_error":false,"result":"I won't do that.","total_cost_usd":0,"permission_denials":[{"tool_name":"Bash"},{"tool_name":"Write"}]}`
	w = Explain(ClaudeJSON, []byte(claude))
	want = Why{Refused: []string{"denied twice", "permission denied: Write"}, Message: "I won't do that."}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("claude:\n got %+v\nwant %+v", w, want)
	}
	if s := w.String(); s != `2 tool calls were refused or failed, the last: "permission denied: Write"; its last message: "I won't do that."` {
		t.Errorf("claude line %q", s)
	}
	// gemini streams a message as deltas; a tool call starts another.
	gemini := `{"type":"message","role":"assistant","content":"Let me ","delta":true}
{"type":"message","role":"assistant","content":"look.","delta":true}
{"type":"tool_use","tool_name":"read_file"}
{"type":"message","role":"assistant","content":"I decline ","delta":true}
{"type":"message","role":"assistant","content":"to write.","delta":true}`
	if w := Explain(GeminiJSON, []byte(gemini)); w.Message != "I decline to write." {
		t.Errorf("gemini message %q", w.Message)
	}
	// Long text is clipped, on one line.
	long := Why{Message: strings.Repeat("word\n", 200)}
	if s := long.String(); strings.Contains(s, "\n") || len([]rune(s)) > quoteLimit+30 || !strings.HasSuffix(s, `…"`) {
		t.Errorf("long: %q", s)
	}
	if !(Why{}).IsZero() || (Why{Message: "x"}).IsZero() || (Why{}).String() != "" {
		t.Error("IsZero or an empty line")
	}
}

func fuzzExplain(f *testing.F, format string, files ...string) {
	for _, name := range files {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":7}]}}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		w := Explain(format, text)
		if !reflect.DeepEqual(w, Explain(format, text)) {
			t.Fatal("two answers")
		}
		if s := w.String(); strings.ContainsAny(s, "\n\r") || (s == "") != w.IsZero() {
			t.Fatalf("line %q for %+v", s, w)
		}
		for _, l := range bytes.Split(text, []byte("\n")) {
			if ev, fin := Event(format, l); fin && !ev {
				t.Fatalf("final but no event: %q", l)
			}
		}
	})
}

func FuzzExplainClaude(f *testing.F) {
	fuzzExplain(f, ClaudeJSON, "claude-readonly.txt", "claude-500.txt", "claude-turn.txt")
}

func FuzzExplainCodex(f *testing.F) {
	fuzzExplain(f, CodexJSONL, "codex-readonly.txt", "codex-500.txt", "codex-turn.txt")
}

func FuzzExplainGemini(f *testing.F) {
	fuzzExplain(f, GeminiJSON, "gemini-readonly.txt", "gemini-500.txt", "gemini-turn.txt")
}
