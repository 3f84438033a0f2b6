// Package engine runs every agent session walkie starts — a debate turn, a
// round table's implementer and reviewers, a distillation, the grader, a
// doctor's probe — through one path, so a fix to how agents are started or
// ended reaches all of them:
//
//   - Spec turns a configured agent and its placeholders into a
//     session.Spec: argv, working directory, the agent's own variables over
//     the allow-list, private HOME and TMPDIR, prompt rules, transcripts.
//     The session package alone applies the isolation.
//   - Run starts the session, tells the caller what recovery needs as soon
//     as the process runs, and supervises it: a change of the file the
//     agent is to write is progress, and once that file has been quiet for
//     the agent's grace and the caller's Ready holds, the session is ended
//     (some CLIs hang after answering); a halt seen in the control file or
//     the end of the context ends it too, and says so. Nothing polls: the
//     files are watched through one inotify watcher per engine.
//   - A command that cannot start (missing, not executable, a working
//     directory that does not exist) is bad input, never a turn that failed,
//     so no retry and no daemon backoff is spent on it.
//
// What the session produced is described by TurnRecord, the line each
// attempt leaves in the log, and by Usage, read from the transcript
// with a kind (reported, estimated, partial, unknown) set where the figure
// is made; Charge is the one place an attempt's usage becomes the debate's
// cost. Judging a debate turn and writing the record are the caller's: the
// engine is the unit a remote worker can run too, given the record's
// bytes. An attempt whose product is one file the agent writes (a phase's
// output, a reviewer's verdict, a distilled briefing) runs whole through
// RunFile: slot, sandbox, session, the file read no further than its limit
// and never unless it is a regular file, kept, judged, logged, charged.
package engine
