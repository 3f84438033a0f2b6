// Package usage reads what an agent CLI reports of its own consumption
// (tokens, and cost where the CLI states one) from the plain-text
// transcript of its session. It knows each CLI's output shape, nothing of
// debates or prices.
//
// A transcript is what a pty showed: stdout and stderr mixed, with the
// CLI's warnings, stack traces and progress lines around its machine
// output. The parsers therefore look only at JSON that starts a line, and
// skip whatever does not decode.
package usage

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Formats the package reads.
const (
	// ClaudeJSON is claude -p with --output-format json (one result
	// object) or stream-json (one event per line, the same result object
	// last).
	ClaudeJSON = "claude-json"
	// CodexJSONL is codex exec --json: one event per line.
	CodexJSONL = "codex-jsonl"
	// GeminiJSON is gemini -p with -o json (one pretty-printed result
	// object) or -o stream-json (one event per line, a result event last).
	GeminiJSON = "gemini-json"
)

// Report is what the output said.
type Report struct {
	// InputTokens counts every prompt token, cached or not: the pricing
	// table has no cache discount, so an estimate errs high, not low.
	InputTokens int64
	// CachedInputTokens is the part of InputTokens the provider read from
	// its prompt cache, as the CLI reports it (0 when it reports none).
	CachedInputTokens int64
	// OutputTokens counts generated tokens, thinking included (vendors
	// bill it as output).
	OutputTokens int64
	CostUSD      float64
	HasCost      bool         // the CLI stated a cost itself
	Model        string       // the model that wrote most of the output, when the output names one
	Models       []ModelUsage // per model, by name, when the output names them (gemini routes between two)
	IsError      bool         // the CLI reported its own run as failed
	// Partial: the CLI printed no final figure (it was ended before its
	// result), and the totals sum the usage it streamed per message
	// instead: what was spent at least, not all of it.
	Partial bool
	// Refused says why the figures the output holds cannot be believed
	// (a negative count or cost, one past MaxTokens or MaxCostUSD; see
	// CheckTokens and CheckCost). The report then carries no figures:
	// what the session cost is unknown.
	Refused string
}

// ModelUsage is one model's share of a Report.
type ModelUsage struct {
	Name         string
	InputTokens  int64
	OutputTokens int64
}

// Parse reads the report of the given format from text. ok is false when
// the text holds no report of that format (the CLI failed before it
// printed one, or was ended first). A report whose figures cannot be
// believed comes with no figures and the reason in Refused.
func Parse(format string, text []byte) (r Report, ok bool) {
	var t tally
	switch format {
	case ClaudeJSON:
		r, ok = parseClaude(text, &t)
	case CodexJSONL:
		r, ok = parseCodex(text, &t)
	case GeminiJSON:
		r, ok = parseGemini(text, &t)
	default:
		return Report{}, false
	}
	if !ok {
		return Report{}, false
	}
	if err := r.check(&t); err != nil {
		return Report{IsError: r.IsError, Refused: "the CLI reported " + err.Error()}, true
	}
	return r, true
}

// finish sorts the per-model figures and names the main model.
func (r *Report) finish() {
	slices.SortFunc(r.Models, func(a, b ModelUsage) int { return strings.Compare(a.Name, b.Name) })
	var top int64 = -1
	for _, m := range r.Models {
		if m.OutputTokens > top {
			r.Model, top = m.Name, m.OutputTokens
		}
	}
}

type claudeResult struct {
	Type      string   `json:"type"`
	IsError   bool     `json:"is_error"`
	TotalCost *float64 `json:"total_cost_usd"`
	Usage     struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
	ModelUsage map[string]struct {
		InputTokens              int64 `json:"inputTokens"`
		OutputTokens             int64 `json:"outputTokens"`
		CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
		CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	} `json:"modelUsage"`
}

// claudeMessage is a stream-json assistant event: one model call's
// message, with that call's usage.
type claudeMessage struct {
	Type    string `json:"type"`
	Message struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *struct {
			InputTokens              int64 `json:"input_tokens"`
			OutputTokens             int64 `json:"output_tokens"`
			CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// parseClaude takes the last result object: the only one that carries
// total_cost_usd. Without one (the session was ended before claude printed
// it), it sums the usage of stream-json's assistant events, one per model
// call: those carry the call's output count as of the call's first event,
// so the output is undercounted, and the report is Partial.
func parseClaude(text []byte, t *tally) (Report, bool) {
	var found *claudeResult
	var calls []claudeMessage
	eachObject(text, func(obj []byte) {
		var c claudeResult
		if json.Unmarshal(obj, &c) == nil && c.TotalCost != nil && (c.Type == "" || c.Type == "result") {
			found = &c
			return
		}
		var m claudeMessage
		if json.Unmarshal(obj, &m) == nil && m.Type == "assistant" && m.Message.Usage != nil {
			calls = append(calls, m)
		}
	})
	if found == nil {
		return claudeStreamed(calls, t)
	}
	u := found.Usage
	r := Report{CostUSD: *found.TotalCost, HasCost: true, IsError: found.IsError,
		InputTokens:       t.tokens("input tokens", u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens),
		CachedInputTokens: t.tokens("cached input tokens", u.CacheReadInputTokens),
		OutputTokens:      t.tokens("output tokens", u.OutputTokens)}
	for name, m := range found.ModelUsage {
		// "claude-opus-4-8[1m]": the suffix names the context window, not
		// another model.
		name, _, _ = strings.Cut(name, "[")
		r.Models = append(r.Models, ModelUsage{Name: name,
			InputTokens:  t.tokens("input tokens of "+name, m.InputTokens, m.CacheReadInputTokens, m.CacheCreationInputTokens),
			OutputTokens: t.tokens("output tokens of "+name, m.OutputTokens)})
	}
	r.finish()
	return r, true
}

// claudeStreamed sums the usage of the model calls claude streamed. A
// call's content blocks come as events of their own, each with the call's
// usage so far: per call, the largest figures count once.
func claudeStreamed(events []claudeMessage, t *tally) (Report, bool) {
	if len(events) == 0 {
		return Report{}, false
	}
	type call struct {
		model           string
		in, cached, out int64
	}
	byID := map[string]*call{}
	var order []*call
	for i, e := range events {
		id := e.Message.ID
		if id == "" {
			id = "#" + strconv.Itoa(i) // no id: a call of its own
		}
		c := byID[id]
		if c == nil {
			c = &call{model: e.Message.Model}
			byID[id] = c
			order = append(order, c)
		}
		u := e.Message.Usage
		c.in = max(c.in, t.tokens("input tokens", u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens))
		c.cached = max(c.cached, t.tokens("cached input tokens", u.CacheReadInputTokens))
		c.out = max(c.out, t.tokens("output tokens", u.OutputTokens))
	}
	r := Report{Partial: true}
	models := map[string]*ModelUsage{}
	for _, c := range order {
		r.InputTokens = t.tokens("input tokens", r.InputTokens, c.in)
		r.CachedInputTokens = t.tokens("cached input tokens", r.CachedInputTokens, c.cached)
		r.OutputTokens = t.tokens("output tokens", r.OutputTokens, c.out)
		name, _, _ := strings.Cut(c.model, "[")
		m := models[name]
		if m == nil {
			models[name] = &ModelUsage{Name: name}
			m = models[name]
		}
		m.InputTokens = t.tokens("input tokens", m.InputTokens, c.in)
		m.OutputTokens = t.tokens("output tokens", m.OutputTokens, c.out)
	}
	for _, m := range models {
		if m.Name != "" {
			r.Models = append(r.Models, *m)
		}
	}
	r.finish()
	return r, true
}

// parseCodex sums the usage of every turn.completed event. codex's events
// do not name the model. Its input_tokens already include the cached ones,
// and output_tokens the reasoning ones.
func parseCodex(text []byte, t *tally) (Report, bool) {
	var r Report
	ok := false
	eachLine(text, func(line []byte) {
		if len(line) == 0 || line[0] != '{' {
			return
		}
		var ev struct {
			Type  string `json:"type"`
			Usage struct {
				InputTokens       int64 `json:"input_tokens"`
				CachedInputTokens int64 `json:"cached_input_tokens"`
				OutputTokens      int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch ev.Type {
		case "turn.completed":
			r.InputTokens = t.tokens("input tokens", r.InputTokens, ev.Usage.InputTokens)
			r.CachedInputTokens = t.tokens("cached input tokens", r.CachedInputTokens, ev.Usage.CachedInputTokens)
			r.OutputTokens = t.tokens("output tokens", r.OutputTokens, ev.Usage.OutputTokens)
			ok = true
		case "turn.failed":
			// "error" events are not failures: codex prints them for every
			// reconnect it then survives.
			r.IsError = true
		}
	})
	if !ok {
		// turn.failed carries no usage, and calls made before it may
		// have cost something: no figure at all, rather than a zero.
		return Report{}, false
	}
	return r, true
}

// geminiTokens is a model's token counts in either output mode.
type geminiTokens struct {
	// -o json: stats.models.M.tokens
	Prompt     *int64 `json:"prompt"`
	Input      int64  `json:"input"` // the prompt less its cached part
	Candidates int64  `json:"candidates"`
	Cached     int64  `json:"cached"` // of the prompt, read from the cache
	Thoughts   int64  `json:"thoughts"`
	Tool       int64  `json:"tool"`
	// -o stream-json: stats.models.M
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// counts returns the model's input and output, thinking counted as output.
func (g geminiTokens) counts(stream bool, t *tally) (in, out int64) {
	if stream {
		// stream-json leaves thinking out of output_tokens but keeps it in
		// total_tokens.
		in = t.tokens("input tokens", g.InputTokens)
		return in, max(t.tokens("output tokens", g.OutputTokens), t.tokens("total tokens", g.TotalTokens)-in)
	}
	in = g.Input
	if g.Prompt != nil {
		in = *g.Prompt
	}
	return t.tokens("input tokens", in, g.Tool), t.tokens("output tokens", g.Candidates, g.Thoughts)
}

// parseGemini takes the last object with stats.models: -o json's result
// (which may carry an error beside its stats) or stream-json's result event.
func parseGemini(text []byte, t *tally) (Report, bool) {
	var r Report
	ok := false
	eachObject(text, func(obj []byte) {
		var res struct {
			Type   string           `json:"type"`
			Status string           `json:"status"`
			Error  *json.RawMessage `json:"error"`
			Stats  *struct {
				Models map[string]struct {
					Tokens *geminiTokens `json:"tokens"`
					geminiTokens
				} `json:"models"`
			} `json:"stats"`
		}
		if json.Unmarshal(obj, &res) != nil || res.Stats == nil || res.Stats.Models == nil {
			return
		}
		// The last object is the report: what the ones before it said,
		// believable or not, is replaced.
		*t = tally{}
		r, ok = Report{IsError: res.Error != nil || res.Status == "error"}, true
		for name, m := range res.Stats.Models {
			var in, out int64
			if m.Tokens != nil {
				in, out = m.Tokens.counts(false, t)
			} else {
				in, out = m.geminiTokens.counts(true, t)
			}
			r.InputTokens = t.tokens("input tokens", r.InputTokens, in)
			r.OutputTokens = t.tokens("output tokens", r.OutputTokens, out)
			cached := m.geminiTokens.Cached
			if m.Tokens != nil {
				cached = m.Tokens.Cached
			}
			r.CachedInputTokens = t.tokens("cached input tokens", r.CachedInputTokens, cached)
			r.Models = append(r.Models, ModelUsage{Name: name, InputTokens: in, OutputTokens: out})
		}
		r.finish()
	})
	return r, ok
}

// eachLine calls fn with every line of text, without its line break and
// leading blanks, however long: a codex event that carries a command's
// whole output can run to megabytes.
func eachLine(text []byte, fn func(line []byte)) {
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		fn(bytes.TrimLeft(bytes.TrimRight(line, "\r"), " \t"))
	}
}

// eachObject calls fn with every JSON object in text, in order, that
// either starts a line and ends on it (the JSON and JSONL forms) or begins
// with a line holding just "{" (a pretty-printed object, as gemini's -o
// json prints). CLIs print their result amid other output. A line that
// starts an object is decoded on its own, so the work stays linear in the
// text but for the rare lone "{".
func eachObject(text []byte, fn func(obj []byte)) {
	for off := 0; off < len(text); {
		end := len(text)
		next := end
		if i := bytes.IndexByte(text[off:], '\n'); i >= 0 {
			end, next = off+i, off+i+1
		}
		line := bytes.TrimSpace(text[off:end])
		switch {
		case len(line) > 1 && line[0] == '{':
			// One line, one object; anything after it on the line (a
			// terminal's leftovers) is ignored.
			var raw json.RawMessage
			if json.NewDecoder(bytes.NewReader(line)).Decode(&raw) == nil {
				fn(raw)
			}
		case len(line) == 1 && line[0] == '{':
			// Decode across lines, from the brace on; on success go on
			// after the object, else with the next line.
			start := off + bytes.IndexByte(text[off:end], '{')
			dec := json.NewDecoder(bytes.NewReader(text[start:]))
			var raw json.RawMessage
			if dec.Decode(&raw) == nil {
				fn(raw)
				next = start + int(dec.InputOffset())
			}
		}
		off = next
	}
}
