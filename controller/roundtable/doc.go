// Package roundtable is the round-table mode of a walkie record: one
// implementer changes a workspace, the workspace is frozen (copied and
// hashed), reviewers judge the frozen copy in sessions of their own, a
// hidden grader runs on it, and the round's verdicts decide whether the
// table converged, goes another round, or is deadlocked. Research and plan
// phases may come before the first round, each pinned by a person or an
// agent before the implementer starts.
//
// The debate loop in package controller drives it through a Table made
// from a Host (the record, the engine, the logger, and how to tell events
// and end the debate): it asks the Table to recover a round a crash
// interrupted, to settle a finished round, to check the workspace, to
// write the implementer's prompt and to run the reviews. Everything a round leaves is under the debate's state
// directory, roundtable/round-N/; LoadReport and Replay read it back for
// walkie report. docs/roundtable.md is the user's account.
package roundtable
