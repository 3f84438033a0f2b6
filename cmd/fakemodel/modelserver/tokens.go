package modelserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// Tokens are counted with OpenAI's o200k_base encoding (the vocabulary of
// the GPT-4o and GPT-5 families; Anthropic's and Google's own tokenizers
// are not public, and count within some per cent of it on English text
// and JSON). What is counted is what the CLI sent: the request body as
// compact JSON, system prompt, tool schemas, messages and tool results,
// field by field, so the same bytes cost the same on every vendor's wire
// and in every run. A figure is an estimate of what the provider bills,
// the same estimate on both sides of every comparison.

var (
	encOnce sync.Once
	enc     tokenizer.Codec
	encErr  error

	// counted memoizes the count of each piece of a body by its hash:
	// a CLI sends the same system prompt and tool schemas on every call.
	countedMu sync.Mutex
	counted   = map[[32]byte]int{}
)

// CountTokens is the o200k_base token count of s.
func CountTokens(s []byte) (int, error) {
	encOnce.Do(func() { enc, encErr = tokenizer.Get(tokenizer.O200kBase) })
	if encErr != nil {
		return 0, fmt.Errorf("o200k_base: %w", encErr)
	}
	key := sha256.Sum256(s)
	countedMu.Lock()
	n, ok := counted[key]
	countedMu.Unlock()
	if ok {
		return n, nil
	}
	n, err := enc.Count(string(s))
	if err != nil {
		return 0, fmt.Errorf("o200k_base: %w", err)
	}
	countedMu.Lock()
	counted[key] = n
	countedMu.Unlock()
	return n, nil
}

// Tokens is the request's input in o200k_base tokens: its body as compact
// JSON, counted per top-level field and per element of a list (each tool,
// each message), which is where the body's text splits anyway. A body
// that is not JSON is counted whole.
func (r *Request) Tokens() (int, error) {
	r.tokensOnce.Do(func() { r.tokens, r.tokensErr = bodyTokens(r.Raw, r.Body) })
	return r.tokens, r.tokensErr
}

func bodyTokens(raw []byte, body any) (int, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return CountTokens(raw)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	total := 0
	for _, k := range keys {
		parts := []any{m[k]}
		if list, ok := m[k].([]any); ok {
			parts = list
		}
		for i, p := range parts {
			b, err := compactJSON(p)
			if err != nil {
				return 0, err
			}
			if i == 0 {
				b = append([]byte(fmt.Sprintf("%q:", k)), b...)
			}
			n, err := CountTokens(b)
			if err != nil {
				return 0, err
			}
			total += n
		}
	}
	return total, nil
}

// compactJSON encodes v as JSON as a client writes it: no spaces, no
// HTML escaping.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
