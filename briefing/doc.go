// Package briefing owns the text at the top of a walkie file: the
// template with its sections, the checks a briefing must pass (sections
// present and filled in, about 300-400 words), the extraction of a
// conversation from a chat transcript (plain text, or a Claude Code or
// Codex session log) for an agent to distill, the pinned distillation
// prompt, the diff shown when a briefing is approved again, the one way a
// briefing is approved (Approve: whoever asks, a person or CI), and the
// copy of the last approved text kept beside the record.
//
// Of the project it imports only walkie, which writes and pins the
// record; the controller runs the distilling agent.
package briefing
