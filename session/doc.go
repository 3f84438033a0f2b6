// Package session runs one ephemeral agent session: a command in a fresh
// pseudo-terminal, its raw and plain-text transcripts, its hard timeout and
// stall window, its prompt rules, and the killing and reaping of its whole
// process group. It knows nothing of debates: the controller decides what to
// run and what the result means.
//
// A session is started with Start (or Run) and always ends in exactly one of
// the Ending values. Whatever the ending, by the time Wait returns the
// process group has been sent SIGKILL, the leader has been reaped, the pty
// is closed, the transcripts are flushed and closed, and a private HOME (if
// any) is removed. Every output byte the pty delivered before the end is in
// the raw transcript: the final drain reads until the kernel reports EIO
// (every holder of the terminal is gone), bounded by the grace period in case
// a descendant escaped the group with setsid and keeps the terminal open.
//
// Endings, and who caused them:
//
//	exited          the leader exited on its own (EndedBy "self")
//	timeout         Spec.Timeout passed since the start
//	stalled         no output and no Progress() for Spec.Stall
//	blocked-prompt  an Outcome rule matched the plain-text output
//	ended-by-caller Session.End was called (for example "the turn is in")
//	cancelled       the context passed to Start was cancelled
//	start-failed    the command could not be started (Run only)
//
// Ending a session means SIGTERM to the process group, up to Spec.Grace for
// the leader to exit, SIGKILL to the group, reap. An Outcome rule that
// matches text printed just before the process exits on its own still gives
// blocked-prompt (with EndedBy "self" and the real exit code), so "Not logged
// in" is classified the same way however fast the CLI quits.
//
// If the controller itself is killed with SIGKILL, the leader dies with it:
// on Linux through Pdeathsig (see sysProcAttr for why Go's threads do not
// make that fire early); on macOS and the BSDs, which have no parent-death
// signal, a watchdog process kills the leader's whole group when the
// controller's end closes its pipe (see watchdog). What escapes either (a
// descendant that moved to a group of its own, or on Linux one in the
// leader's group) is ended by the next controller: it records
// Identify(pid) when a session starts and calls KillStale with it when it
// restarts. Identify and KillStale read /proc on Linux and sysctl
// kern.proc on macOS; elsewhere they return errors.ErrUnsupported.
//
// A session with Spec.Sandbox runs inside a filesystem boundary set before
// the command's first instruction and inherited by every descendant: a
// Landlock ruleset on Linux, applied by this program itself re-executed as
// a trampoline (sandbox_linux.go), so any binary that imports the package
// can start one; a Seatbelt profile under sandbox-exec on macOS. What the
// boundary opens is laid out in sandbox.go; Result.Sandbox says how it was
// applied and what the agent's output reported refused.
package session
