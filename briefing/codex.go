package briefing

import (
	"regexp"
	"strings"
)

// codexInjected matches user-role text Codex adds to a conversation on its
// own: the environment and instruction blocks (<environment_context>,
// <user_instructions>, <permissions instructions>, …) and AGENTS.md.
var codexInjected = regexp.MustCompile(`^(<[a-z]+([_ ][a-z]+)+>|<INSTRUCTIONS>|# AGENTS\.md instructions)`)

// codexMessages keeps, from a Codex rollout, the user's and the
// assistant's message text. The rollout holds the conversation three
// times over, in forms that changed across versions; the first form
// present is used, so nothing is counted twice:
//
//  1. response_item records of type message (roles user and assistant;
//     developer and system instructions are left out), or, in early
//     rollouts, the same items as bare records;
//  2. event_msg user_message / agent_message;
//  3. event_msg item_completed with UserMessage / AgentMessage items.
//
// Reasoning, function calls and their output are left out in every form.
func codexMessages(recs []record) []Message {
	var items, events, completed []Message
	for _, r := range recs {
		typ := r.str("type")
		p := r.obj("payload")
		switch {
		case typ == "response_item" && p != nil:
			items = append(items, codexItem(p)...)
		case typ == "message":
			items = append(items, codexItem(r)...)
		case typ == "event_msg" && p != nil:
			switch p.str("type") {
			case "user_message":
				events = append(events, Message{Role: RoleUser, Text: p.str("message")})
			case "agent_message":
				events = append(events, Message{Role: RoleAssistant, Text: p.str("message")})
			case "item_completed":
				item := p.obj("item")
				role := map[string]string{"UserMessage": RoleUser, "AgentMessage": RoleAssistant}[item.str("type")]
				if role == "" {
					continue
				}
				for _, t := range textBlocks(item["content"], "text", "Text") {
					completed = append(completed, Message{Role: role, Text: t})
				}
			}
		}
	}
	for _, form := range [][]Message{items, events, completed} {
		var kept []Message
		for _, m := range form {
			t := strings.TrimSpace(m.Text)
			if t == "" || (m.Role == RoleUser && codexInjected.MatchString(t)) {
				continue
			}
			kept = append(kept, Message{Role: m.Role, Text: t})
		}
		if len(kept) > 0 {
			return kept
		}
	}
	return nil
}

// codexItem is the text of one response item of type message.
func codexItem(p record) []Message {
	if p.str("type") != "message" {
		return nil
	}
	role := p.str("role")
	if role != RoleUser && role != RoleAssistant {
		return nil
	}
	var out []Message
	for _, t := range textBlocks(p["content"], "input_text", "output_text", "text") {
		out = append(out, Message{Role: role, Text: t})
	}
	return out
}
