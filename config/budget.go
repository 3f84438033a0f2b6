package config

import "slices"

// What a turn costs, before the record: each preset's fixed prompt per
// model call in each role, the CLI's own system prompt, tool schemas and
// the context it adds, in o200k tokens, as measured against the fake
// model server with claude 2.1.197, codex 0.171.0 (gpt-6.2-sol) and
// gemini 0.61.0 (TestPresetRolesCLI in cmd/fakemodel/modelserver checks
// them within a tenth). codex's are with walkie's instructions in place of
// its own (RoleInstructions) but for the implementer, which keeps codex's:
// about 5,000 tokens of the 10,000 a call. With a role set to all, or
// before issue 29: claude 17,900, codex 14,100.
var fixedTokens = map[string]map[string]int{
	"claude": {RoleDebater: 2300, RoleReviewer: 2850, RoleImplementer: 3050, RolePhase: 2850, RoleDistiller: 2200},
	"codex":  {RoleDebater: 5050, RoleReviewer: 4950, RoleImplementer: 10050, RolePhase: 4900, RoleDistiller: 4950},
	"gemini": {RoleDebater: 6400, RoleReviewer: 6950, RoleImplementer: 7300, RolePhase: 6950, RoleDistiller: 6200},
}

// ownInstructionsTokens is what a call costs more when the CLI keeps its
// own model instructions in a role that has walkie's (RoleInstructions): a
// debater's turn in a worktree of its own keeps them, to change code
// (engine.TurnAttempt). codex's are measured as the table's are.
var ownInstructionsTokens = map[string]int{"codex": 5000}

// CallsPerTurn is how many model calls a turn takes at the least: one to
// read the record (its pieces all at once), one to append the turn, one
// in which the agent says it is done; the record is in the last two.
const CallsPerTurn = 3

// FixedTokens is what one model call of a's preset costs in role before
// walkie's prompt and the record; 0 when it is not known (not a preset, a
// command of its own, or a role set to all).
func (a Agent) FixedTokens(role string) int {
	if _, ok := a.RoleTools(role); !ok {
		return 0
	}
	return fixedTokens[a.Preset][role]
}

// FixedTokensOwn is FixedTokens for a session that keeps its CLI's own
// model instructions (ownInstructions) where the role would give it
// walkie's.
func (a Agent) FixedTokensOwn(role string, ownInstructions bool) int {
	fixed := a.FixedTokens(role)
	if fixed == 0 || !ownInstructions || !slices.Contains(instructionRoles, role) {
		return fixed
	}
	return fixed + ownInstructionsTokens[a.Preset]
}

// TurnBudget is what a turn of a in role should cost in input tokens, at
// the least, given the prompt and the record it reads: every call sends
// the fixed part and the prompt, and the two calls after the reads the
// record too (bytes counted as tokens at 4 to one, as codex does). 0 when
// the fixed part is not known. ownInstructions: the session kept its
// CLI's own model instructions (FixedTokensOwn).
func (a Agent) TurnBudget(role string, ownInstructions bool, promptBytes, recordBytes int) int64 {
	fixed := a.FixedTokensOwn(role, ownInstructions)
	if fixed == 0 {
		return 0
	}
	return int64(CallsPerTurn*(fixed+promptBytes/4) + 2*recordBytes/4)
}
