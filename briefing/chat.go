package briefing

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Chat formats ParseChat recognises.
const (
	FormatText   = "text"   // plain text or markdown, kept as it is
	FormatClaude = "claude" // a Claude Code session log (~/.claude/projects/…/ID.jsonl)
	FormatCodex  = "codex"  // a Codex session log (~/.codex/sessions/…/rollout-….jsonl)
)

// Roles of a chat message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one stretch of text by one side of a conversation.
type Message struct {
	Role string
	Text string
}

// Chat is a conversation as the distilling agent reads it.
type Chat struct {
	Format   string
	Messages []Message // for session logs; nil for FormatText
	// Skipped counts log lines that were not JSON (a log cut short while
	// its CLI was writing it ends in one).
	Skipped int
	text    string // FormatText: the input itself
}

// ErrNoText is returned for a chat with nothing a person or an assistant said.
var ErrNoText = errors.New("no user or assistant text found")

// ParseChat reads a chat transcript. A file whose first non-blank line is
// a JSON object is read as a session log, Claude Code's or Codex's (told
// apart by their records); anything else is plain text or markdown and is
// kept as it is. From a log only the text the user typed and the text the
// assistant answered is kept: tool calls and their results, thinking,
// system and developer instructions, and context the CLI injected on its
// own are left out.
func ParseChat(data []byte) (*Chat, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not UTF-8 text")
	}
	if !looksLikeJSONL(data) {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, ErrNoText
		}
		return &Chat{Format: FormatText, text: string(data)}, nil
	}
	recs, skipped, err := splitJSONL(data)
	if err != nil {
		return nil, err
	}
	c := &Chat{Skipped: skipped}
	switch logKind(recs) {
	case FormatClaude:
		c.Format, c.Messages = FormatClaude, claudeMessages(recs)
	case FormatCodex:
		c.Format, c.Messages = FormatCodex, codexMessages(recs)
	default:
		return nil, errors.New("a JSON lines file, but neither a Claude Code nor a Codex session log (give a plain-text or markdown transcript instead)")
	}
	c.Messages = merge(c.Messages)
	if len(c.Messages) == 0 {
		return nil, fmt.Errorf("%s session log: %w", c.Format, ErrNoText)
	}
	return c, nil
}

// Text renders the chat for the distilling agent: plain text as it was;
// a log as the speakers' turns, each under a "USER:" or "ASSISTANT:" line.
func (c *Chat) Text() string {
	if c.Format == FormatText {
		return c.text
	}
	var b strings.Builder
	for i, m := range c.Messages {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(strings.ToUpper(m.Role) + ":\n")
		b.WriteString(m.Text)
		b.WriteString("\n")
	}
	return b.String()
}

func looksLikeJSONL(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		return t[0] == '{' && json.Unmarshal(t, &obj) == nil
	}
	return false
}

// record is one log line, decoded lazily.
type record map[string]json.RawMessage

func (r record) str(key string) string {
	var s string
	if v, ok := r[key]; ok {
		_ = json.Unmarshal(v, &s)
	}
	return s
}

func (r record) flag(key string) bool {
	var b bool
	if v, ok := r[key]; ok {
		_ = json.Unmarshal(v, &b)
	}
	return b
}

func (r record) obj(key string) record {
	var o record
	if v, ok := r[key]; ok {
		_ = json.Unmarshal(v, &o)
	}
	return o
}

// splitJSONL decodes every line that is a JSON object and counts the rest.
func splitJSONL(data []byte) ([]record, int, error) {
	var recs []record
	skipped := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	// A single record can hold a whole file an agent read: allow large lines.
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		t := bytes.TrimSpace(sc.Bytes())
		if len(t) == 0 {
			continue
		}
		var r record
		if t[0] != '{' || json.Unmarshal(t, &r) != nil {
			skipped++
			continue
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("read log: %w", err)
	}
	return recs, skipped, nil
}

// logKind tells the two logs apart by the first record that only one of
// them writes: Codex wraps everything in {"type", "payload"}; Claude Code
// writes {"type": "user"|"assistant", "message": {…}}.
func logKind(recs []record) string {
	for _, r := range recs {
		if _, ok := r["payload"]; ok {
			return FormatCodex
		}
		switch r.str("type") {
		case "session_meta", "response_item", "event_msg", "turn_context":
			return FormatCodex
		case "user", "assistant":
			if _, ok := r["message"]; ok {
				return FormatClaude
			}
		case "message": // early Codex rollouts: bare response items
			if r.str("role") != "" {
				return FormatCodex
			}
		}
	}
	return ""
}

// merge joins consecutive messages of one role (a CLI writes each content
// block of an answer as its own record) and drops empty ones.
func merge(msgs []Message) []Message {
	var out []Message
	for _, m := range msgs {
		m.Text = strings.TrimSpace(m.Text)
		if m.Text == "" {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			out[n-1].Text += "\n\n" + m.Text
			continue
		}
		out = append(out, m)
	}
	return out
}

// textBlocks returns the texts of a content value: a string, or an array
// of blocks of which only those whose type is in kinds are kept.
func textBlocks(raw json.RawMessage, kinds ...string) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		for _, k := range kinds {
			if b.Type == k {
				out = append(out, b.Text)
				break
			}
		}
	}
	return out
}
