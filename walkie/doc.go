// Package walkie owns the record: the walkie file's format, its
// tamper-evident chain, the enforced writer, turn order and convergence,
// and the state record and doorbell kept beside it. docs/format.md is
// the format it implements; it runs no processes and imports no other
// package of the project.
//
// # Where to look
//
// The record, as it is read:
//
//	parse.go       the file into a Doc: front matter, briefing, entries, markers; Render and Clip
//	meta.go        the front matter: its keys, validation with a fix per error, canonical order
//	chain.go       the hash chain: genesis, the briefing's hash, the marker times, Verify
//	rules.go       turn order, rounds, sign-offs and convergence: Progress
//	signoff.go     a turn's sign-off line, read as a CommonMark viewer renders it: SplitSignOff
//	text.go        what an entry's text may hold, judged as walkie and a CommonMark viewer read it
//	recordfile.go  opening the record: a link resolved, anything but a regular file refused
//	regular.go     opening a file an agent could have replaced: a regular file, never a pipe or a device
//	sidefile.go    files in a debate's .walkie/ID that an agent could have swapped: plain files only, no link on the way
//	reading.go     the pieces an agent reads the record in, each within what its CLI shows whole
//	find.go        the walkie files under a path
//
// Writing it:
//
//	append.go      Load and ReadMeta; Append, the enforced writer (walkie post); the supervisor's inbox; Reconcile
//	approve.go     pinning the briefing's hash (walkie brief approve)
//	setbriefing.go replacing the briefing before the first entry
//	newname.go     a new record's file name from its question: Slug, FreeName
//
// An agent's turn:
//
//	judge.go       what an agent left in the file, judged against the snapshot: Verdict, Expect
//	settle.go      Settle and Discard: the turn stamped, or the file restored and the agent's version kept
//	outcome.go     the outcomes of an attempt, and which are retried or counted
//
// Review threads (format 3, docs/review-threads.md):
//
//	vocab.go       entry types, verdicts, refs: Tags and Ref
//	trailers.go    tags written as trailer lines at the end of an entry
//	refcheck.go    the rules tags obey, checked against the bound repository (RefResolver)
//	review_meta.go a thread's front matter: repo, git, workspace, the refs required
//	review.go      what a thread's record says: its close, last verdict and commit, the merge gate
//	gate.go        who may open the gate: verdicts signed by an allowed signer, full commit ids
//	signatures.go  the signatures beside the record: who stamped or signed an entry
//	evidence.go    the count of passing tests a verdict claims: PassCounts
//	channel.go     a directory of threads, one open at a time, and its doorbell
//
// State and control, beside the record in .walkie/ID/:
//
//	state.go       the state and the doorbell, DebateStatus and the round cap, atomic writes, the record and run locks
//	log.go         log.jsonl: the state and every attempt, one checksummed line per change (logread.go, logwrite.go)
//	checkpoint.go  checkpoint.json: where a reader of the log starts, so reads do not grow with the history
//	logrepair.go   walkie repair's part on the log: a torn tail cut, a damaged line dropped
//	migrate.go     a debate of layout 1 (state.json, turns.jsonl) read as it is and converted once
//	control.go     Init; UpdateState; Halt, Resume, Extend; Repair
//	sessionnote.go session.json: the running session's process, for the next controller to end
//	activity.go    activity.json: what the running sessions are doing, for the fleet page
//	wait.go        WaitTurn: block until it is a party's turn
//	lock.go        flock locks, and which process holds one
//	rewrite.go     the files rewritten every turn, through a spare (rewrite_linux.go) or a new file (rewrite_other.go)
//	datasync_*.go  making a write durable: fdatasync where there is one
//	registry.go    the machine's registry of debates, in the user's state directory, for walkie serve's fleet page
//
// Words for people:
//
//	errors.go      the errors a caller tells apart: bad input, refused, a torn tail, a broken chain, a held lock
//	words.go       counts and reasons as sentences
//	money.go       dollar amounts
package walkie
