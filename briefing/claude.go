package briefing

import (
	"regexp"
	"strings"
)

// claudeInjected matches user text Claude Code writes on its own: slash
// command echoes, local command output, hook and system reminders.
var claudeInjected = regexp.MustCompile(`^<(command-[a-z-]+|local-command-[a-z-]+|bash-[a-z-]+|system-reminder|user-prompt-submit-hook)>`)

// claudeMessages keeps, from a Claude Code session log, the user's typed
// text and the assistant's text blocks. Records of other types (summary,
// attachment, queue-operation, …), sub-agent side chains, meta messages
// the CLI inserts, compaction summaries, tool_use, tool_result, thinking
// and image blocks are left out.
func claudeMessages(recs []record) []Message {
	var out []Message
	for _, r := range recs {
		role := r.str("type")
		if role != RoleUser && role != RoleAssistant {
			continue
		}
		if r.flag("isSidechain") || r.flag("isMeta") || r.flag("isCompactSummary") {
			continue
		}
		msg := r.obj("message")
		if msg == nil {
			continue
		}
		for _, t := range textBlocks(msg["content"], "text") {
			t = strings.TrimSpace(t)
			if role == RoleUser && claudeInjected.MatchString(t) {
				continue
			}
			out = append(out, Message{Role: role, Text: t})
		}
	}
	return out
}
