//go:build linux

package realcli

import (
	"testing"
	"time"
)

// Issue 32 item 20: a model API that answers 429 for a whole session, in
// whatever words: the CLI's own retries, then crashed with the preset's
// rate-limit detail (never a generic crash); walkie's retry starts a new
// session, which the API lets through. gemini 0.61.0 quotes the API's
// message ("[API Error: …] Please wait and try again later…", exit 173),
// so each wording a 429 takes is tried; claude and codex name the status.
func TestRateLimited(t *testing.T) {
	for name, c := range map[string]struct{ cli, message string }{
		"gemini/exhausted": {"gemini", "Resource has been exhausted (e.g. check quota)."},
		"gemini/wait":      {"gemini", "Please wait and try again later."},
		"gemini/quota":     {"gemini", "You exceeded your current quota, please check your plan and billing details."},
		"claude/any words": {"claude", "Slow down, please."},
		"codex/any words":  {"codex", "Slow down, please."},
	} {
		fc := failure{cli: c.cli, defaults: map[string]string{"retries": "1"}, want: []string{"crashed", "accepted"}, code: exitOK,
			detail: "rate-limiting " + c.cli, within: 90 * time.Second, reply: failFirstSession(429, c.message)}
		t.Run(name, fc.run)
	}
}
