// Package distill has an agent turn a conversation (plain text, markdown,
// or a Claude Code or Codex session log) into a debate's briefing: a normal
// session through the engine with the pinned distillation prompt, its
// result checked against the briefing template and sent back once with
// the reason when it misses sections or is far off the length. The text
// replaces the briefing unapproved; a person approves it.
package distill
