package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The shell tool each CLI offers its model, and the argument that holds the
// command line. Measured against claude 2.1.197, codex 0.171.0 and gemini
// 0.61.0; see docs/agents.md.
const (
	claudeShellTool = "Bash"
	codexShellTool  = "exec_command"
	geminiShellTool = "run_shell_command"
)

// answer writes one scripted reply in one vendor's wire format.
type answer struct {
	reply  Reply
	seq    int
	model  string
	stream bool
	sse    bool // gemini: streamGenerateContent?alt=sse
	req    *Request
	hold   func() // blocks until the client or the server goes away
}

// sseWriter writes Server-Sent Events and flushes each one, so the client
// sees every event as it would from the real API.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	s := &sseWriter{w: w, f: f}
	s.flush()
	return s
}

func (s *sseWriter) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// event writes "event: NAME" (when name is set) and one JSON data line.
func (s *sseWriter) event(name string, data any) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", marshal(data))
	s.flush()
}

type obj = map[string]any

// ---- Anthropic Messages ----

func (a *answer) anthropic(w http.ResponseWriter) {
	u := a.reply.usage()
	msgID := fmt.Sprintf("msg_fake_%d", a.seq)
	model := a.model
	if model == "" {
		model = "claude-fake"
	}
	var blocks []obj
	if a.reply.Text != "" {
		blocks = append(blocks, obj{"type": "text", "text": a.reply.Text})
	}
	stop := "end_turn"
	for i, c := range a.calls(claudeShellTool, "command") {
		stop = "tool_use"
		blocks = append(blocks, obj{
			"type":  "tool_use",
			"id":    callID("toolu_fake", a.seq, i),
			"name":  c.Name,
			"input": c.Args,
		})
	}
	// Anthropic counts the cached part of a prompt apart from the rest.
	usage := obj{
		"input_tokens":                u.InputTokens - u.CachedInputTokens,
		"output_tokens":               u.OutputTokens,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     u.CachedInputTokens,
	}
	if !a.stream {
		if a.reply.Stall {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			flush(w)
			a.hold()
			return
		}
		if blocks == nil {
			blocks = []obj{{"type": "text", "text": ""}}
		}
		writeJSON(w, http.StatusOK, obj{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	s := startSSE(w)
	s.event("message_start", obj{"type": "message_start", "message": obj{
		"id": msgID, "type": "message", "role": "assistant", "model": model,
		"content": []obj{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": obj{
			"input_tokens": u.InputTokens - u.CachedInputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": u.CachedInputTokens,
		},
	}})
	if a.reply.Stall {
		s.event("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}})
		if a.reply.Text != "" {
			s.event("content_block_delta", obj{"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": a.reply.Text}})
		}
		a.hold()
		return
	}
	s.event("ping", obj{"type": "ping"})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			s.event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
			s.event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			input := marshal(b["input"])
			s.event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{
				"type": "tool_use", "id": b["id"], "name": b["name"], "input": obj{},
			}})
			s.event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": input}})
		}
		s.event("content_block_stop", obj{"type": "content_block_stop", "index": i})
	}
	s.event("message_delta", obj{
		"type":  "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil},
		"usage": obj{"output_tokens": u.OutputTokens},
	})
	s.event("message_stop", obj{"type": "message_stop"})
}

// ---- OpenAI Responses ----

// codexShellCall names the shell tool and encodes its arguments in the form
// the request offered: codex has shipped exec_command {"cmd"},
// shell_command {"command": string} and shell {"command": [argv]}, and
// answers "unsupported call" to a tool it did not offer.
func codexShellCall(req *Request, command string) (name string, args map[string]any) {
	offered := map[string]bool{}
	if tools, ok := field[[]any](req.Body, "tools"); ok {
		for _, t := range tools {
			if n, ok := field[string](t, "name"); ok {
				offered[n] = true
			}
		}
	}
	switch {
	case offered[codexShellTool] || len(offered) == 0:
		return codexShellTool, obj{"cmd": command}
	case offered["shell_command"]:
		return "shell_command", obj{"command": command}
	case offered["shell"]:
		return "shell", obj{"command": []string{"bash", "-lc", command}}
	}
	return codexShellTool, obj{"cmd": command}
}

func (a *answer) openai(w http.ResponseWriter) {
	u := a.reply.usage()
	respID := fmt.Sprintf("resp_fake_%d", a.seq)
	model := a.model
	if model == "" {
		model = "gpt-fake"
	}
	var items []obj
	if a.reply.Text != "" && !a.reply.Stall {
		items = append(items, obj{
			"type": "message", "id": fmt.Sprintf("msg_fake_%d", a.seq), "status": "completed", "role": "assistant",
			"content": []obj{{"type": "output_text", "text": a.reply.Text, "annotations": []any{}}},
		})
	}
	for i, c := range a.calls(codexShellTool, "cmd") {
		name, args := c.Name, c.Args
		if c.shell != "" {
			name, args = codexShellCall(a.req, c.shell)
		}
		// Responses carries arguments as a JSON string, not an object.
		items = append(items, obj{
			"type": "function_call", "id": callID("fc_fake", a.seq, i), "status": "completed",
			"call_id": callID("call_fake", a.seq, i), "name": name, "arguments": marshal(args),
		})
	}
	usage := obj{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  obj{"cached_tokens": u.CachedInputTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens":          u.InputTokens + u.OutputTokens,
	}
	created := time.Now().Unix()
	response := func(status string, output []obj, usage any) obj {
		if output == nil {
			output = []obj{}
		}
		return obj{
			"id": respID, "object": "response", "created_at": created, "status": status,
			"model": model, "output": output, "usage": usage,
		}
	}
	if !a.stream {
		if a.reply.Stall {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			flush(w)
			a.hold()
			return
		}
		writeJSON(w, http.StatusOK, response("completed", items, usage))
		return
	}

	s := startSSE(w)
	n := 0
	ev := func(name string, data obj) {
		data["type"] = name
		data["sequence_number"] = n
		n++
		s.event(name, data)
	}
	ev("response.created", obj{"response": response("in_progress", nil, nil)})
	ev("response.in_progress", obj{"response": response("in_progress", nil, nil)})
	if a.reply.Stall {
		item := obj{"type": "message", "id": fmt.Sprintf("msg_fake_%d", a.seq), "status": "in_progress", "role": "assistant", "content": []obj{}}
		ev("response.output_item.added", obj{"output_index": 0, "item": item})
		if a.reply.Text != "" {
			ev("response.output_text.delta", obj{"item_id": item["id"], "output_index": 0, "content_index": 0, "delta": a.reply.Text})
		}
		a.hold()
		return
	}
	for i, it := range items {
		added := obj{}
		for k, v := range it {
			added[k] = v
		}
		added["status"] = "in_progress"
		if it["type"] == "message" {
			added["content"] = []obj{}
		}
		ev("response.output_item.added", obj{"output_index": i, "item": added})
		if it["type"] == "message" {
			ev("response.output_text.delta", obj{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": a.reply.Text})
			ev("response.output_text.done", obj{"item_id": it["id"], "output_index": i, "content_index": 0, "text": a.reply.Text})
		}
		ev("response.output_item.done", obj{"output_index": i, "item": it})
	}
	ev("response.completed", obj{"response": response("completed", items, usage)})
}

// ---- Gemini generateContent ----

func (a *answer) gemini(w http.ResponseWriter) {
	u := a.reply.usage()
	model := a.model
	if model == "" {
		model = "gemini-fake"
	}
	usage := obj{
		"promptTokenCount":        u.InputTokens,
		"candidatesTokenCount":    u.OutputTokens,
		"totalTokenCount":         u.InputTokens + u.OutputTokens,
		"cachedContentTokenCount": u.CachedInputTokens,
	}
	chunk := func(parts []obj, finish string, usage any) obj {
		cand := obj{"content": obj{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		c := obj{"candidates": []obj{cand}, "modelVersion": model, "responseId": fmt.Sprintf("fake-%d", a.seq)}
		if usage != nil {
			c["usageMetadata"] = usage
		}
		return c
	}

	if a.reply.Stall {
		if a.stream && a.sse {
			s := startSSE(w)
			if a.reply.Text != "" {
				s.event("", chunk([]obj{{"text": a.reply.Text}}, "", nil))
			}
		} else {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			flush(w)
		}
		a.hold()
		return
	}

	var parts []obj
	if a.reply.Text != "" {
		parts = append(parts, obj{"text": a.reply.Text})
	}
	for _, c := range a.calls(geminiShellTool, "command") {
		parts = append(parts, obj{"functionCall": obj{"name": c.Name, "args": c.Args}})
	}
	if parts == nil {
		parts = []obj{{"text": ""}}
	}
	final := chunk(parts, "STOP", usage)
	switch {
	case !a.stream:
		writeJSON(w, http.StatusOK, final)
	case a.sse:
		s := startSSE(w)
		s.event("", final)
	default:
		writeJSON(w, http.StatusOK, []obj{final})
	}
}

// call is one tool call of an answer; shell is its command line when it
// is a shell command.
type call struct {
	Name  string
	Args  map[string]any
	shell string
}

// calls are the tool calls the reply asks for, in order: the vendor's
// shell tool (named shellTool, command line in argument cmdArg) for
// Command and each of Commands, then Tool and each of Tools as given. A
// stalled reply never gets as far as a call.
func (a *answer) calls(shellTool, cmdArg string) []call {
	if a.reply.Stall {
		return nil
	}
	var out []call
	shell := func(cmd string) {
		out = append(out, call{Name: shellTool, Args: obj{cmdArg: cmd, "description": "Run the command the script asked for"}, shell: cmd})
	}
	tool := func(t ToolCall) {
		args := t.Args
		if args == nil {
			args = obj{}
		}
		out = append(out, call{Name: t.Name, Args: args})
	}
	if a.reply.Command != "" {
		shell(a.reply.Command)
	}
	for _, c := range a.reply.Commands {
		shell(c)
	}
	if a.reply.Tool != nil {
		tool(*a.reply.Tool)
	}
	for _, t := range a.reply.Tools {
		tool(t)
	}
	return out
}

// callID numbers the calls of one answer: the first keeps the form of a
// single call's id, so samples of one call read as before.
func callID(prefix string, seq, i int) string {
	if i == 0 {
		return fmt.Sprintf("%s_%d", prefix, seq)
	}
	return fmt.Sprintf("%s_%d_%d", prefix, seq, i)
}

// marshal encodes v as JSON without HTML escaping, so a command such as
// "echo x >> f" reaches the CLI byte for byte as the script wrote it.
func marshal(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("modelserver: marshal %T: %v", v, err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
