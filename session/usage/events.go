package usage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// eventPrefix starts every line of the three CLIs' event streams: each
// event is one JSON object whose first key is its type.
var eventPrefix = []byte(`{"type":"`)

// Event reads one complete line of a session's plain-text output. event
// says it is an event of format's stream (the CLI streams events), final
// that it is the CLI's last: claude's and gemini's result, codex's
// turn.completed or turn.failed, after which the CLI has nothing more to
// report and only exits. A line of any length may be given; only its
// start is read.
func Event(format string, line []byte) (event, final bool) {
	line = bytes.TrimLeft(line, " \t")
	rest, ok := bytes.CutPrefix(line, eventPrefix)
	if !ok {
		return false, false
	}
	typ, _, ok := bytes.Cut(rest, []byte(`"`))
	if !ok || len(typ) == 0 {
		return false, false
	}
	switch format {
	case ClaudeJSON, GeminiJSON:
		return true, string(typ) == "result"
	case CodexJSONL:
		return true, string(typ) == "turn.completed" || string(typ) == "turn.failed"
	}
	return false, false
}

// Why is what a CLI's own output says about how its session went: the
// tool calls it refused or that failed (with the CLI's own error text), the
// error it reported for the run, and the agent's last message. It is what
// a person needs when a turn was not written: "no new turn" says nothing
// of a write the CLI's permissions refused, or an agent that declined.
type Why struct {
	Refused []string // the errors of tool calls refused or failed, in order
	Error   string   // the run's own error, when the CLI reported one
	Message string   // the agent's last message
}

// IsZero reports whether the output said nothing of use.
func (w Why) IsZero() bool { return len(w.Refused) == 0 && w.Error == "" && w.Message == "" }

// quoteLimit bounds each quote in a Why's line: a person reads it in a
// log line, and the transcript has the whole.
const quoteLimit = 240

// String is the Why in one line, the most telling part first: the run's
// error, then the last refused tool call (and how many there were), then
// the agent's last words.
func (w Why) String() string {
	var parts []string
	if w.Error != "" {
		parts = append(parts, "the CLI reported "+quote(w.Error))
	}
	switch n := len(w.Refused); {
	case n == 1:
		parts = append(parts, "a tool call was refused or failed: "+quote(w.Refused[0]))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d tool calls were refused or failed, the last: %s", n, quote(w.Refused[n-1])))
	}
	if w.Message != "" && w.Error == "" {
		parts = append(parts, "its last message: "+quote(w.Message))
	}
	return strings.Join(parts, "; ")
}

// quote is s on one line, clipped, in double quotes.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > quoteLimit {
		s = string(r[:quoteLimit-1]) + "…"
	}
	return `"` + s + `"`
}

// Explain reads what format's output says about the session (see Why).
func Explain(format string, text []byte) Why {
	var w Why
	switch format {
	case ClaudeJSON:
		eachObject(text, func(obj []byte) { explainClaude(&w, obj) })
	case CodexJSONL:
		eachObject(text, func(obj []byte) { explainCodex(&w, obj) })
	case GeminiJSON:
		fresh := true
		eachObject(text, func(obj []byte) { explainGemini(&w, &fresh, obj) })
	}
	return w
}

func explainClaude(w *Why, obj []byte) {
	var ev struct {
		Type    string `json:"type"`
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
		Message struct {
			Content []struct {
				Type    string          `json:"type"`
				Text    string          `json:"text"`
				IsError bool            `json:"is_error"`
				Content json.RawMessage `json:"content"`
			} `json:"content"`
		} `json:"message"`
		Denials []struct {
			Tool string `json:"tool_name"`
		} `json:"permission_denials"`
	}
	if json.Unmarshal(obj, &ev) != nil {
		return
	}
	switch ev.Type {
	case "assistant":
		for _, c := range ev.Message.Content {
			if c.Type == "text" && strings.TrimSpace(c.Text) != "" {
				w.Message = c.Text
			}
		}
	case "user":
		for _, c := range ev.Message.Content {
			if c.Type == "tool_result" && c.IsError {
				w.Refused = append(w.Refused, contentText(c.Content))
			}
		}
	case "result", "":
		if ev.IsError {
			w.Error = ev.Result
		} else if strings.TrimSpace(ev.Result) != "" {
			w.Message = ev.Result
		}
		// A denial claude did not report as a tool result of its own.
		if len(ev.Denials) > len(w.Refused) {
			for _, d := range ev.Denials[len(w.Refused):] {
				w.Refused = append(w.Refused, "permission denied: "+d.Tool)
			}
		}
	}
}

// contentText is a tool result's content: a string, or a list of text
// blocks.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, " ")
}

func explainCodex(w *Why, obj []byte) {
	var ev struct {
		Type  string `json:"type"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Item struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Command  string `json:"command"`
			Output   string `json:"aggregated_output"`
			ExitCode *int   `json:"exit_code"`
			Status   string `json:"status"`
		} `json:"item"`
	}
	if json.Unmarshal(obj, &ev) != nil {
		return
	}
	switch ev.Type {
	case "turn.failed":
		w.Error = ev.Error.Message
	case "item.completed":
		it := ev.Item
		switch {
		case it.Type == "agent_message" && strings.TrimSpace(it.Text) != "":
			w.Message = it.Text
		case it.Type == "command_execution" && (it.Status == "failed" || it.ExitCode != nil && *it.ExitCode != 0):
			out := strings.TrimSpace(it.Output)
			if i := strings.LastIndexByte(out, '\n'); i >= 0 {
				out = out[i+1:] // the last line says why
			}
			w.Refused = append(w.Refused, strings.TrimSpace(it.Command+": "+out))
		}
	}
}

// explainGemini reads one gemini event. Its assistant messages stream as
// deltas: *fresh says the next one starts a new message (after a tool
// call), which replaces the last.
func explainGemini(w *Why, fresh *bool, obj []byte) {
	var ev struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content string `json:"content"`
		Delta   bool   `json:"delta"`
		Status  string `json:"status"`
		Output  string `json:"output"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(obj, &ev) != nil {
		return
	}
	switch {
	case ev.Type == "message" && ev.Role == "assistant":
		if *fresh || !ev.Delta {
			w.Message = ""
		}
		w.Message += ev.Content
		*fresh = false
	case ev.Type == "tool_use":
		*fresh = true
	case ev.Type == "tool_result" && ev.Status == "error":
		msg := ev.Output
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		w.Refused = append(w.Refused, msg)
	case (ev.Type == "result" || ev.Type == "") && ev.Error != nil:
		// stream-json's failed result, or -o json's error object.
		w.Error = ev.Error.Message
	}
}
