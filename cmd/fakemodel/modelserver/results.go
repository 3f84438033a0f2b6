package modelserver

import "strings"

// ToolResults are the texts of the tool results the request carries:
// what the CLI's tools returned to the model (Anthropic tool_result
// blocks, OpenAI function_call_output items, Gemini functionResponse
// parts), which is all of the record a model reads that the prompt did
// not give it. A CLI resends its session's earlier results with every
// call, so the last call of a session holds all of them.
func (r *Request) ToolResults() []string {
	m, _ := r.Body.(map[string]any)
	var out []string
	switch r.Vendor {
	case Anthropic:
		msgs, _ := m["messages"].([]any)
		for _, msg := range msgs {
			blocks, _ := field[[]any](msg, "content")
			for _, b := range blocks {
				if t, _ := field[string](b, "type"); t == "tool_result" {
					out = collectStrings(out, b.(map[string]any)["content"])
				}
			}
		}
	case OpenAI:
		items, _ := m["input"].([]any)
		for _, it := range items {
			if t, _ := field[string](it, "type"); strings.HasSuffix(t, "_call_output") {
				out = collectStrings(out, it.(map[string]any)["output"])
			}
		}
	case Gemini:
		contents, _ := m["contents"].([]any)
		for _, c := range contents {
			parts, _ := field[[]any](c, "parts")
			for _, p := range parts {
				if fr, ok := field[map[string]any](p, "functionResponse"); ok {
					out = collectStrings(out, fr["response"])
				}
			}
		}
	}
	return out
}

// collectStrings adds every string inside v to out but the names of the
// content blocks' types.
func collectStrings(out []string, v any) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = collectStrings(out, e)
		}
	case map[string]any:
		for k, e := range v {
			if k != "type" {
				out = collectStrings(out, e)
			}
		}
	}
	return out
}

// Reached reports which of texts occur in the tool results of reqs (a
// session's calls): each in full, in one result, as the model read it.
// A text cut by a tool's truncation, or never read, is not there.
func Reached(reqs []*Request, texts []string) map[string]bool {
	got := map[string]bool{}
	for _, r := range reqs {
		for _, res := range r.ToolResults() {
			for _, t := range texts {
				if !got[t] && strings.Contains(res, t) {
					got[t] = true
				}
			}
		}
	}
	return got
}
