package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Vendor names a wire format the server speaks.
type Vendor string

const (
	// Anthropic is the Messages API (claude): POST /v1/messages.
	Anthropic Vendor = "anthropic"
	// OpenAI is the Responses API (codex): POST /v1/responses.
	OpenAI Vendor = "openai"
	// Gemini is the Generative Language API (gemini):
	// POST /v1beta/models/M:generateContent and :streamGenerateContent.
	Gemini Vendor = "gemini"
)

// Usage is the token count a reply reports. The CLIs print these figures
// in their own output, which is how walkie learns what a turn cost.
// InputTokens counts the whole prompt, CachedInputTokens the part of it
// read from a prompt cache; each vendor's wire form says it its own way
// (Anthropic's input_tokens leaves the cached part out).
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	OutputTokens      int `json:"output_tokens"`
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
}

// DefaultUsage is reported when a reply sets no Usage: fixed figures, so a
// test can assert exactly what a CLI printed.
var DefaultUsage = Usage{InputTokens: 1200, OutputTokens: 34}

// Reply is one scripted answer to one model request. Exactly one of the
// forms applies, checked in this order:
//
//   - Hang: no byte is ever sent; the request is held until the client
//     goes away or the server closes (a network that never answers).
//   - Status != 0: that HTTP status with the vendor's error body.
//   - Command != "": a tool call asking the CLI to run this shell command
//     (claude Bash, codex exec_command, gemini run_shell_command), after
//     Text if that is set too.
//   - Tool != nil: a call of any other tool the CLI offers, by its own name
//     and arguments (claude Write, gemini write_file, …), after Text.
//   - otherwise the final text Text.
//
// Stall sends the start of a streamed answer (headers, the opening events
// and Text as a partial delta) and then holds the connection like Hang: a
// model that stops mid-answer. Delay waits before answering, bounded by the
// request's context.
type Reply struct {
	Text    string    `json:"text,omitempty"`
	Command string    `json:"command,omitempty"`
	Tool    *ToolCall `json:"tool,omitempty"`
	// Commands and Tools are more calls in the same answer, after Command
	// and Tool: a model that asks for several things at once, as models
	// do for reads that do not depend on each other.
	Commands []string      `json:"commands,omitempty"`
	Tools    []ToolCall    `json:"tools,omitempty"`
	Status   int           `json:"status,omitempty"`
	Message  string        `json:"message,omitempty"`
	Hang     bool          `json:"hang,omitempty"`
	Stall    bool          `json:"stall,omitempty"`
	Delay    time.Duration `json:"-"`
	Usage    *Usage        `json:"usage,omitempty"`
}

// ToolCall is a call of a tool by the name the CLI gave it, with its
// arguments as the CLI's tool schema describes them.
type ToolCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// Text is a final answer.
func Text(s string) Reply { return Reply{Text: s} }

// Shell is a tool call that makes the CLI run cmd through its shell tool.
func Shell(cmd string) Reply { return Reply{Command: cmd} }

// Error is an HTTP error status with a vendor-shaped error body.
func Error(status int, message string) Reply { return Reply{Status: status, Message: message} }

// Tool is a call of the CLI's tool name with args.
func Tool(name string, args map[string]any) Reply {
	return Reply{Tool: &ToolCall{Name: name, Args: args}}
}

// Hang is a response that never comes.
func Hang() Reply { return Reply{Hang: true} }

// Stall starts streaming partial and then never finishes.
func Stall(partial string) Reply { return Reply{Stall: true, Text: partial} }

func (r Reply) usage() Usage {
	if r.Usage != nil {
		return *r.Usage
	}
	return DefaultUsage
}

// Kind is a short label of the reply's form for logs: "text", "shell",
// "tool NAME", "error 500", "hang" or "stall".
func (r Reply) Kind() string {
	switch {
	case r.Hang:
		return "hang"
	case r.Status != 0:
		return fmt.Sprintf("error %d", r.Status)
	case r.Stall:
		return "stall"
	case r.Command != "" || len(r.Commands) > 0:
		return "shell"
	case r.Tool != nil:
		return "tool " + r.Tool.Name
	case len(r.Tools) > 0:
		return "tool " + r.Tools[0].Name
	default:
		return "text"
	}
}

// Script decides the server's answers. Each model request takes the next
// reply from its vendor's queue; when a queue runs dry the server answers
// Default, or, when Default is the zero Reply, the text Exhausted so the CLI
// ends its turn cleanly (Request.Exhausted tells a test it happened).
// Func, when set, is asked first for every model request; returning false
// falls back to the queues.
//
// Only model calls consume replies: HEAD /, count_tokens and unknown paths
// are answered by the server itself. Note that gemini without -m first asks
// a small model, through generateContent, for a JSON routing verdict; a
// script for it must either pass -m to the CLI or answer that call.
type Script struct {
	Anthropic []Reply `json:"anthropic,omitempty"`
	OpenAI    []Reply `json:"openai,omitempty"`
	Gemini    []Reply `json:"gemini,omitempty"`
	Default   Reply   `json:"default,omitzero"`

	// Measure reports, for every reply that sets no Usage, the request's
	// own size in tokens (Request.Tokens) as its input, with the prefix an
	// earlier request began with too as cached (a provider's prompt
	// cache), and the reply's own size as its output: the figures a real
	// API would bill, so the CLIs print them and walkie logs them.
	Measure bool `json:"measure,omitempty"`

	Func func(r *Request) (Reply, bool) `json:"-"`
}

// Exhausted is the text answered when a vendor's queue is empty and the
// script has no Default.
const Exhausted = "fakemodel: no scripted reply left"

// scriptFile is the JSON form of a Script for the fakemodel command, with
// delays written as Go durations ("1.5s").
type scriptFile struct {
	Anthropic []replyFile `json:"anthropic"`
	OpenAI    []replyFile `json:"openai"`
	Gemini    []replyFile `json:"gemini"`
	Default   *replyFile  `json:"default"`
}

type replyFile struct {
	Reply
	Delay string `json:"delay"`
}

func (f replyFile) reply() (Reply, error) {
	r := f.Reply
	if f.Delay != "" {
		d, err := time.ParseDuration(f.Delay)
		if err != nil {
			return Reply{}, fmt.Errorf("delay %q: %w", f.Delay, err)
		}
		r.Delay = d
	}
	return r, nil
}

// ReadScript decodes a script written as JSON, for example
//
//	{"anthropic": [{"command": "echo hi >> out"}, {"text": "done"}],
//	 "gemini": [{"status": 500, "message": "boom"}],
//	 "openai": [{"hang": true}, {"text": "late", "delay": "2s"}]}
func ReadScript(r io.Reader) (Script, error) {
	var f scriptFile
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Script{}, fmt.Errorf("decode script: %w", err)
	}
	var s Script
	conv := func(name string, in []replyFile) ([]Reply, error) {
		out := make([]Reply, 0, len(in))
		for i, rf := range in {
			r, err := rf.reply()
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", name, i, err)
			}
			out = append(out, r)
		}
		return out, nil
	}
	var err error
	if s.Anthropic, err = conv("anthropic", f.Anthropic); err != nil {
		return Script{}, err
	}
	if s.OpenAI, err = conv("openai", f.OpenAI); err != nil {
		return Script{}, err
	}
	if s.Gemini, err = conv("gemini", f.Gemini); err != nil {
		return Script{}, err
	}
	if f.Default != nil {
		if s.Default, err = f.Default.reply(); err != nil {
			return Script{}, fmt.Errorf("default: %w", err)
		}
	}
	return s, nil
}

// LoadScript reads a JSON script file (see ReadScript).
func LoadScript(path string) (Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return Script{}, err
	}
	defer f.Close()
	s, err := ReadScript(f)
	if err != nil {
		return Script{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
