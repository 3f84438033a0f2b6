package modelserver

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// The prompt cache, as measure models it: a provider keeps the prompts
// it was sent, and a new prompt that begins as an earlier one did is read
// from the cache up to where the two part. Prompts are compared by their
// parts in the order the model reads them: tools, the system prompt,
// then each message. Real caches work at finer steps (Anthropic at the
// breakpoints the CLI marks, OpenAI by 128 tokens past the first 1,024),
// so this counts a little more as cached than a provider would when a
// message changes in its middle, and the same when only new messages
// follow, which is how a CLI's calls grow.

// measure is the usage a provider would report for req: its tokens, the
// part of them an earlier prompt began with, and the reply's tokens.
func (s *Server) measure(req *Request, reply Reply) (Usage, error) {
	total, err := req.Tokens()
	if err != nil {
		return Usage{}, err
	}
	parts, err := promptParts(req)
	if err != nil {
		return Usage{}, err
	}
	s.mu.Lock()
	if s.prefixes == nil {
		s.prefixes = map[[32]byte]bool{}
	}
	var chain [32]byte
	cached, seen := 0, true
	for _, p := range parts {
		h := sha256.New()
		h.Write(chain[:])
		h.Write(p.sum[:])
		copy(chain[:], h.Sum(nil))
		if seen = seen && s.prefixes[chain]; seen {
			cached += p.tokens
		}
		s.prefixes[chain] = true
	}
	s.mu.Unlock()
	out, err := replyTokens(reply)
	if err != nil {
		return Usage{}, err
	}
	return Usage{InputTokens: total, CachedInputTokens: min(cached, total), OutputTokens: out}, nil
}

type promptPart struct {
	sum    [32]byte
	tokens int
}

// promptParts are the parts of a request's prompt in the order the model
// reads them, each with its hash and its tokens.
func promptParts(req *Request) ([]promptPart, error) {
	m, _ := req.Body.(map[string]any)
	var heads []string
	var list string
	switch req.Vendor {
	case Anthropic:
		heads, list = []string{"tools", "system"}, "messages"
	case OpenAI:
		heads, list = []string{"tools", "instructions"}, "input"
	case Gemini:
		heads, list = []string{"tools", "systemInstruction"}, "contents"
	}
	var vals []any
	for _, k := range heads {
		if v, ok := m[k]; ok {
			vals = append(vals, v)
		}
	}
	if l, ok := m[list].([]any); ok {
		vals = append(vals, l...)
	}
	parts := make([]promptPart, 0, len(vals))
	for _, v := range vals {
		b, err := compactJSON(v)
		if err != nil {
			return nil, err
		}
		n, err := CountTokens(b)
		if err != nil {
			return nil, err
		}
		parts = append(parts, promptPart{sum: sha256.Sum256(b), tokens: n})
	}
	return parts, nil
}

// replyTokens is the size of what the model answers: its text and the
// arguments of its calls.
func replyTokens(r Reply) (int, error) {
	b, err := json.Marshal(struct {
		Text     string     `json:"text,omitempty"`
		Command  string     `json:"command,omitempty"`
		Commands []string   `json:"commands,omitempty"`
		Tool     *ToolCall  `json:"tool,omitempty"`
		Tools    []ToolCall `json:"tools,omitempty"`
	}{r.Text, r.Command, r.Commands, r.Tool, r.Tools})
	if err != nil {
		return 0, fmt.Errorf("reply: %w", err)
	}
	return CountTokens(b)
}
