// Package briefing owns the text at the top of a walkie file: the
// template with its sections, the checks a briefing must pass (sections
// present and filled in, about 300-400 words), the extraction of a
// conversation from a chat transcript (plain text, or a Claude Code or
// Codex session log) for an agent to distill, the pinned distillation
// prompt, the diff shown when a briefing is approved again, and the copy
// of the last approved text kept beside the record.
//
// It imports no other package of the project: the controller runs the
// distilling agent and the walkie package writes and pins the record.
package briefing
