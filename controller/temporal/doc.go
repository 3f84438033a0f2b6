// Package temporal runs debates as Temporal workflows, with each turn on
// a machine that has the agent's CLI.
//
// Three parts, each one process's job:
//
//   - The workflow (Debate), one per debate, whose workflow id is the
//     debate's id, so one debate never has two controllers anywhere. It is
//     level-based and keeps nothing of the record: it asks the home what is
//     next, runs the turn on the agent's task queue, has the home settle
//     it, and asks again.
//   - The home (Home), inside `walkie serve --engine temporal`: it owns the
//     files and polls its own task queue, which carries the debates'
//     workflows; the activities that read and write the files (decide,
//     begin, settle, notify, abandon) run there as the workflow's local
//     activities, all through controller.Home, the code the local loop
//     uses. It takes the daemon's place for starting workflows, and
//     signals a halt to the turn out on a worker.
//   - The worker (Worker), `walkie worker`: it polls one task queue per
//     agent it can run and runs each turn with engine.RunTurn on a copy of
//     the record, heartbeating progress, and sends the agent's version of
//     the file, the session's result and the transcript back. A turn that
//     runs in a git worktree runs in one of the worker's clone (--repo),
//     and its commits go back as a git bundle the home makes the turn's
//     branch.
//
// A round table's implementer turn is a turn with its workspace sent
// along and its changes put back at home (implementer.go); the round
// table's own steps run at home through controller.Home.Table, each of
// their sessions a workflow of its own, Session, whose activity (File)
// runs engine.RunFile on the worker (table.go, file.go). Every activity
// begins with a Hello from each side, refused when the versions differ
// (attempt.go), and what is too large for a payload travels as a Blob by
// reference to the home's blob store (carry.go, package blob).
//
// How walkie's policy maps onto Temporal's is written in docs/scale-out.md.
package temporal
