// Package usage reads what an agent CLI reports of its own consumption
// (tokens, and cost where the CLI states one) from the plain-text
// transcript of its session. It knows each CLI's output shape, nothing of
// debates or prices.
package usage

import (
	"bufio"
	"bytes"
	"encoding/json"
)

// Formats the package reads.
const (
	ClaudeJSON = "claude-json" // claude -p --output-format json: one result object
	CodexJSONL = "codex-jsonl" // codex exec --json: one event per line
	GeminiJSON = "gemini-json" // gemini -p -o json: one (pretty-printed) result object
)

// Report is what the output said.
type Report struct {
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
	HasCost      bool   // the CLI stated a cost itself
	Model        string // the model named in the output, if any
	IsError      bool   // the CLI flagged its own run as an error
}

// Parse reads the report of the given format from text. ok is false when
// the text holds no report of that format.
func Parse(format string, text []byte) (r Report, ok bool) {
	switch format {
	case ClaudeJSON:
		return parseClaude(text)
	case CodexJSONL:
		return parseCodex(text)
	case GeminiJSON:
		return parseGemini(text)
	}
	return Report{}, false
}

type claudeResult struct {
	IsError   bool     `json:"is_error"`
	TotalCost *float64 `json:"total_cost_usd"`
	Usage     struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]json.RawMessage `json:"modelUsage"`
}

// parseClaude takes the last JSON object that carries total_cost_usd.
func parseClaude(text []byte) (Report, bool) {
	var found *claudeResult
	eachObject(text, func(obj []byte) {
		var c claudeResult
		if json.Unmarshal(obj, &c) == nil && c.TotalCost != nil {
			found = &c
		}
	})
	if found == nil {
		return Report{}, false
	}
	r := Report{CostUSD: *found.TotalCost, HasCost: true, IsError: found.IsError,
		InputTokens:  found.Usage.InputTokens + found.Usage.CacheCreationInputTokens + found.Usage.CacheReadInputTokens,
		OutputTokens: found.Usage.OutputTokens}
	for m := range found.ModelUsage {
		if r.Model == "" || m < r.Model {
			r.Model = m // deterministic when several models were used
		}
	}
	return r, true
}

// parseCodex sums the usage of every turn.completed event.
func parseCodex(text []byte) (Report, bool) {
	var r Report
	ok := false
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if !bytes.HasPrefix(line, []byte("{")) {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Usage struct {
				InputTokens  int64 `json:"input_tokens"`
				CachedInput  int64 `json:"cached_input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "turn.completed":
			r.InputTokens += ev.Usage.InputTokens
			r.OutputTokens += ev.Usage.OutputTokens
			ok = true
		case "turn.failed", "error":
			r.IsError = true
		}
	}
	return r, ok
}

// parseGemini takes the last JSON object with stats.models.
func parseGemini(text []byte) (Report, bool) {
	var r Report
	ok := false
	eachObject(text, func(obj []byte) {
		var res struct {
			Error *json.RawMessage `json:"error"`
			Stats *struct {
				Models map[string]struct {
					Tokens struct {
						Input      int64 `json:"input"`
						Prompt     int64 `json:"prompt"`
						Candidates int64 `json:"candidates"`
					} `json:"tokens"`
				} `json:"models"`
			} `json:"stats"`
		}
		if json.Unmarshal(obj, &res) != nil || res.Stats == nil {
			return
		}
		r, ok = Report{IsError: res.Error != nil}, true
		for m, s := range res.Stats.Models {
			in := s.Tokens.Input
			if in == 0 {
				in = s.Tokens.Prompt
			}
			r.InputTokens += in
			r.OutputTokens += s.Tokens.Candidates
			if r.Model == "" || m < r.Model {
				r.Model = m
			}
		}
	})
	return r, ok
}

// eachObject calls fn with every JSON object that starts at the beginning
// of a line of text and decodes whole, in order. CLIs print their result
// object amid other output, sometimes over many lines.
func eachObject(text []byte, fn func(obj []byte)) {
	for off := 0; off < len(text); {
		i := bytes.IndexByte(text[off:], '\n')
		line := text[off:]
		if i >= 0 {
			line = text[off : off+i]
		}
		if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '{' {
			start := off + (len(line) - len(t))
			dec := json.NewDecoder(bytes.NewReader(text[start:]))
			var raw json.RawMessage
			if dec.Decode(&raw) == nil {
				fn(raw)
				off = start + int(dec.InputOffset())
				continue
			}
		}
		if i < 0 {
			break
		}
		off += i + 1
	}
}
