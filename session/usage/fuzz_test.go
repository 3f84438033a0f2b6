package usage

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzParse checks what must hold for any transcript: no panic; the same
// answer twice; the answer unchanged by start-up noise before the output
// or by a pty's "\r\n" line ends; per-model figures sorted, adding up to
// the totals, and naming the main model.
func fuzzParse(f *testing.F, format string, seeds ...string) {
	for _, s := range seeds {
		f.Add(sample(f, s))
	}
	for _, name := range []string{"claude", "codex", "gemini"} {
		for _, kind := range []string{"turn", "500"} {
			if b, err := os.ReadFile(filepath.Join("testdata", name+"-"+kind+".txt")); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte("{\n\"stats\": {\"models\": {\"m\": {\"tokens\": {\"prompt\": 1}}}}\n}\n"))
	f.Add([]byte("{\"a\":1} trailing\r\n{"))
	// Figures no session can have reported (issue 27, item 6).
	f.Add([]byte(`{"type":"result","total_cost_usd":-6,"usage":{"input_tokens":-1}}` + "\n"))
	f.Add([]byte(`{"type":"turn.completed","usage":{"input_tokens":9223372036854775807}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":9223372036854775807}}` + "\n"))
	f.Add([]byte(`{"type":"result","stats":{"models":{"g":{"input_tokens":1,"total_tokens":-9223372036854775808}}}}` + "\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		r, ok := Parse(format, text)
		if again, ok2 := Parse(format, text); ok != ok2 || !reflect.DeepEqual(r, again) {
			t.Fatalf("two answers: %+v, %+v", r, again)
		}
		if !ok && !reflect.DeepEqual(r, Report{}) {
			t.Fatalf("no report, yet %+v", r)
		}
		noisy := append([]byte("Warning: 256-color support not detected.\n"), text...)
		if r2, ok2 := Parse(format, noisy); ok != ok2 || !reflect.DeepEqual(r, r2) {
			t.Fatalf("start-up noise changed %+v, %v into %+v, %v", r, ok, r2, ok2)
		}
		if !bytes.Contains(text, []byte("\r")) {
			crlf := bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
			if r2, ok2 := Parse(format, crlf); ok != ok2 || !reflect.DeepEqual(r, r2) {
				t.Fatalf("\\r\\n line ends changed %+v, %v into %+v, %v", r, ok, r2, ok2)
			}
		}
		if r.Refused != "" && (r.InputTokens != 0 || r.OutputTokens != 0 || r.CostUSD != 0 || r.HasCost || r.Models != nil) {
			t.Fatalf("refused (%s), yet figures: %+v", r.Refused, r)
		}
		if err := believable(r); err != nil {
			t.Fatalf("%v in %+v", err, r)
		}
		var in, out int64
		for i, m := range r.Models {
			if i > 0 && r.Models[i-1].Name > m.Name {
				t.Fatalf("models out of order: %+v", r.Models)
			}
			in, out = in+m.InputTokens, out+m.OutputTokens
		}
		if len(r.Models) > 0 && format == GeminiJSON && (in != r.InputTokens || out != r.OutputTokens) {
			t.Fatalf("models add up to %d/%d, totals %d/%d", in, out, r.InputTokens, r.OutputTokens)
		}
		named := len(r.Models) == 0 && r.Model == ""
		for _, m := range r.Models {
			named = named || m.Name == r.Model
		}
		if !named {
			t.Fatalf("main model %q is not one of %+v", r.Model, r.Models)
		}
	})
}

// believable says what is wrong with the figures of a report Parse let
// through: none may be negative, past the bounds, or not a number.
func believable(r Report) error {
	figures := []int64{r.InputTokens, r.OutputTokens}
	for _, m := range r.Models {
		figures = append(figures, m.InputTokens, m.OutputTokens)
	}
	for _, n := range figures {
		if n < 0 || n > MaxTokens {
			return fmt.Errorf("a token count of %d let through", n)
		}
	}
	if r.CostUSD < 0 || r.CostUSD > MaxCostUSD || math.IsNaN(r.CostUSD) {
		return fmt.Errorf("a cost of %v let through", r.CostUSD)
	}
	return nil
}

func FuzzParseClaude(f *testing.F) {
	fuzzParse(f, ClaudeJSON, "claude-result.json", "claude-stream.jsonl", "runs/claude-http-401.stdout")
}

func FuzzParseCodex(f *testing.F) {
	fuzzParse(f, CodexJSONL, "codex-events.jsonl", "runs/codex-http-500-json.stdout", "runs/codex-connection-refused.stdout")
}

func FuzzParseGemini(f *testing.F) {
	fuzzParse(f, GeminiJSON, "gemini-result.json", "gemini-stream.jsonl", "runs/gemini-http-500-json.stderr")
}
