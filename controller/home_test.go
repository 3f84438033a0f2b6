package controller

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/gitrepo/gittest"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// These tests drive the Home as a remote engine does: Decide, Begin, a
// session that ran somewhere else (its result made by hand), Settle; and
// stop it at the points a crash of the home can hit.

func openHome(t *testing.T, file string, cfg *config.Config) *Home {
	t.Helper()
	h, err := OpenHome(Options{File: file, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// beginRemote decides and begins the next turn, as the workflow does.
func beginRemote(t *testing.T, file string, cfg *config.Config) (TurnRef, []byte) {
	t.Helper()
	h := openHome(t, file, cfg)
	s, err := h.Decide()
	if err != nil {
		t.Fatal(err)
	}
	if s.Action != ActRun {
		t.Fatalf("Decide: %s (%s), want run", s.Action, s.Why)
	}
	if s.Prompt.File != "" {
		t.Fatalf("the prompt data names a file (%s); only the machine that runs the agent knows where its copy is", s.Prompt.File)
	}
	r := TurnRef{Turn: s.Turn, Round: s.Round, Participant: s.Participant, Attempt: s.Attempt}
	b, err := h.Begin(r)
	if err != nil {
		t.Fatal(err)
	}
	r.Started = b.Started
	return r, b.Snapshot
}

// remoteTurn is the agent's version of the file after it wrote turn r,
// and the session's result as a worker reports it.
func remoteTurn(r TurnRef, snapshot []byte, body string) ([]byte, engine.Result) {
	after := append(bytes.Clone(snapshot), []byte("\n## Turn "+strconv.Itoa(r.Turn)+" · "+r.Participant+"\n"+body+"\n")...)
	return after, engine.Result{Result: session.Result{Started: r.Started, Ended: r.Started.Add(time.Second), Duration: time.Second,
		Ending: session.EndCaller, EndedBy: session.EndedByController}, Worker: "w1"}
}

func TestHomeSettlesARemoteTurnAsTheLoopDoes(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	if st := loadState(t, file); st.Running == nil || st.Running.Turn != 1 || st.Running.Session != "" {
		t.Fatalf("running attempt %+v, want turn 1 with no local session", st.Running)
	}
	after, res := remoteTurn(r, snapshot, "From afar.\nSigned-off-by: a")
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != walkie.OutcomeAccepted || rec.Seq != 1 || !rec.Signed || rec.Worker != "w1" {
		t.Fatalf("recorded %+v, want turn 1 accepted, signed, seq 1, from worker w1", rec)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil || d.Progress().Turns != 1 || !strings.Contains(string(d.Entries[0].Body), "From afar.") {
		t.Fatalf("record after settle: %v, %d turns", err, d.Progress().Turns)
	}
	if st := loadState(t, file); st.Running != nil {
		t.Fatalf("the attempt still runs after settle: %+v", st.Running)
	}
	// Settled again (the home died before Temporal heard of it): nothing
	// more is recorded.
	again, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil})
	if err != nil || again.Seq != 1 {
		t.Fatalf("second settle: %+v, %v", again, err)
	}
	if n := len(turnLog(t, file)); n != 1 {
		t.Fatalf("%d attempts logged, want 1", n)
	}
	if d, _ := walkie.Load(file); d.Progress().Turns != 1 {
		t.Fatalf("%d turns after a second settle, want 1", d.Progress().Turns)
	}
}

// A home killed halfway through Settle leaves the attempt running with
// the turn stamped and its end not logged (the line never written, or
// torn by a power cut: the attempt and its outcome are one line, so
// nothing lies between); the next Settle finishes it and records it once.
func TestHomeSettleFinishesAHalfDoneSettle(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(line []byte) []byte // what of the attempt's line the crash left
	}{
		{"stamped, not logged", func([]byte) []byte { return nil }},
		{"the line torn", func(line []byte) []byte { return line[:len(line)/2] }},
		{"the line zero-filled", func(line []byte) []byte { return make([]byte, len(line)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
			r, snapshot := beginRemote(t, file, cfg)
			dir := stateDir(t, file)
			logPath := filepath.Join(dir, walkie.LogFile)
			logBefore := readFile(t, logPath)
			after, res := remoteTurn(r, snapshot, "Costly.")
			res.Usage = &Usage{CostUSD: 0.25, CostSource: "reported"}
			if _, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil}); err != nil {
				t.Fatal(err)
			}
			// Undo what the crash would not have done.
			written := readFile(t, logPath)[len(logBefore):]
			if err := os.WriteFile(logPath, append(logBefore, tc.keep(written)...), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(filepath.Join(dir, "checkpoint.json"))
			rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil})
			if err != nil {
				t.Fatal(err)
			}
			recs := turnLog(t, file)
			if len(recs) != 1 || rec.Outcome != walkie.OutcomeAccepted || !strings.Contains(recs[0].Detail, "found on restart") {
				t.Fatalf("log %+v, returned %+v; want one accepted attempt found on restart", recs, rec)
			}
			st := loadState(t, file)
			if p := loadDoc(t, file).Progress(); st.Running != nil || st.LastSeq != p.Seq || st.LastHash != p.Hash {
				t.Fatalf("after the second settle: running %+v, last_seq %d of %d", st.Running, st.LastSeq, p.Seq)
			}
			if d, _ := walkie.Load(file); d.Progress().Turns != 1 {
				t.Fatalf("%d turns, want 1", d.Progress().Turns)
			}
		})
	}
}

// A controller that recovered the attempt meanwhile (walkie auto while the
// home was down) logged it as interrupted: the remote result is stale.
func TestHomeSettleRefusesAStaleAttempt(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	if _, err := openHome(t, file, cfg).Decide(); err != nil { // recovers the attempt it finds running
		t.Fatal(err)
	}
	if got := outcomesOf(turnLog(t, file)); !slices.Equal(got, []walkie.Outcome{walkie.OutcomeInterrupted}) {
		t.Fatalf("recovery logged %v", got)
	}
	after, res := remoteTurn(r, snapshot, "Too late.")
	if _, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil}); !errors.Is(err, ErrStale) {
		t.Fatalf("settle of a recovered attempt: %v, want ErrStale", err)
	}
	if !bytes.Equal(readFile(t, file), snapshot) {
		t.Fatal("a stale result changed the record")
	}
	if n := len(turnLog(t, file)); n != 1 {
		t.Fatalf("%d attempts logged, want only the recovered one", n)
	}
}

func TestHomeSettleVoidsAHaltedAttemptAndKeepsWhatItWrote(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	after, res := remoteTurn(r, snapshot, "Halfway")
	res.Stop = walkie.OutcomeHalted
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != walkie.OutcomeHalted || rec.Kept == "" {
		t.Fatalf("recorded %+v, want halted with the agent's version kept", rec)
	}
	if !bytes.Equal(readFile(t, file), snapshot) {
		t.Fatal("a halted attempt's text is in the record")
	}
	if kept := readFile(t, filepath.Join(stateDir(t, file), rec.Kept)); !bytes.Equal(kept, after) {
		t.Fatal("the kept version is not the agent's")
	}
}

// Nobody writes the record during a turn, but a person editing it by hand
// on the home machine meanwhile loses nothing: that version is kept.
func TestHomeSettleKeepsAHandEditMadeDuringTheRemoteTurn(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	appendText(t, file, "\nscribbled by hand\n")
	edited := readFile(t, file)
	after, res := remoteTurn(r, snapshot, "Mine.")
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: nil})
	if err != nil || rec.Outcome != walkie.OutcomeAccepted {
		t.Fatalf("settle: %+v, %v", rec, err)
	}
	keep := strings.TrimSuffix(walkie.KeepPath(stateDir(t, file), 1, "a", 1), ".md") + "-home.md"
	if !bytes.Equal(readFile(t, keep), edited) {
		t.Fatalf("the hand-edited version was not kept in %s", keep)
	}
}

// An attempt no session ran for leaves nothing behind and counts for
// nothing.
func TestHomeAbandonUndoesTheAttempt(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	if err := openHome(t, file, cfg).Abandon(r); err != nil {
		t.Fatal(err)
	}
	st := loadState(t, file)
	if st.Running != nil || len(st.Attempts) != 0 || len(turnLog(t, file)) != 0 || !bytes.Equal(readFile(t, file), snapshot) {
		t.Fatalf("after abandon: running %+v, attempts %v, %d logged", st.Running, st.Attempts, len(turnLog(t, file)))
	}
	// A second abandon, or one for an attempt no longer running, is a
	// no-op.
	if err := openHome(t, file, cfg).Abandon(r); err != nil {
		t.Fatal(err)
	}
}

// A failed remote attempt counts against the retries like a local one,
// and an auth failure ends the debate at once.
func TestHomeAppliesRetriesToRemoteFailures(t *testing.T) {
	file, cfg := testDebate(t, 2, map[string]string{"a": shAgent(""), "b": shAgent("")}, "a", "b")
	r, snapshot := beginRemote(t, file, cfg)
	res := engine.Result{Result: session.Result{Started: r.Started, Ended: r.Started.Add(time.Second), Ending: session.EndBlocked,
		RuleOutcome: string(walkie.OutcomeAuth), Detail: "not logged in"}}
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: snapshot, Session: res, Commits: nil})
	if err != nil || rec.Outcome != walkie.OutcomeAuth {
		t.Fatalf("settle: %+v, %v", rec, err)
	}
	s, err := openHome(t, file, cfg).Decide()
	if err != nil {
		t.Fatal(err)
	}
	if s.Action != ActEnd || s.Status != walkie.StatusFailed || !strings.Contains(s.Why, "never retried") {
		t.Fatalf("after auth: %s %s (%s), want the debate failed", s.Action, s.Status, s.Why)
	}
}

// A round table's home says which of its steps comes: the implementer's
// turn, with the prompt's data for the machine that runs it, and then the
// round's reviews, as the round table's own step.
func TestHomeDecidesARoundTablesSteps(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "rt.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{MaxRounds: 2, Briefing: []byte("Build it.\n"),
		Mode: walkie.ModeRoundtable, Implementer: "impl", Reviewers: []string{"rev"}, Grader: walkie.Command{Shell: "true"}, Workspace: "ws"}); err != nil {
		t.Fatal(err)
	}
	must(t, os.Mkdir(filepath.Join(dir, "ws"), 0o755))
	_, err := walkie.Approve(file)
	must(t, err)
	cfg := config.Default()
	for _, name := range []string{"impl", "rev"} {
		cfg.Agents[name] = config.Agent{Name: name, Command: []string{"true"}}
	}
	s, err := openHome(t, file, cfg).Decide()
	must(t, err)
	if s.Action != ActRun || s.Table || s.Participant != "impl" || s.Implementer == nil || s.Implementer.Workspace != filepath.Join(dir, "ws") {
		t.Fatalf("first step %+v, want the implementer's turn with its prompt's data", s)
	}
	_, err = walkie.Append(file, walkie.Post{From: "impl", Body: []byte("Built.\n")})
	must(t, err)
	s, err = openHome(t, file, cfg).Decide()
	must(t, err)
	if s.Action != ActRun || !s.Table || s.Participant != "rev" || s.Implementer != nil {
		t.Fatalf("after the implementer: %+v, want the round's reviews as the table's own step", s)
	}
}

// remoteWorktreeDebate is a debate in a git repository whose agents run
// in worktrees, and a clone of the repository, as a worker has.
func remoteWorktreeDebate(t *testing.T) (file string, cfg *config.Config, clone *gitrepo.Repo) {
	t.Helper()
	gittest.Isolate(t)
	dir := gittest.Init(t)
	file = filepath.Join(dir, "t.walkie.md")
	// A review thread bound to the repository: the judge resolves the
	// turn's refs there, so the branch must be in before the turn is.
	must(t, walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 2, Briefing: []byte("Fix it.\n"), Typed: true, Repo: "."}))
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	y := "defaults:\n  home: inherit\n  retries: 1\nagents:\n  a:\n    command: " + shAgent("") + "\n    workspace: worktree\n  b:\n    command: " + shAgent("") + "\n    workspace: worktree\n"
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "walkie.yaml"), []byte(y))
	must(t, err)
	to := filepath.Join(t.TempDir(), "clone")
	gittest.Git(t, dir, "clone", "--quiet", dir, to)
	clone, err = gitrepo.Open(t.Context(), to)
	must(t, err)
	return file, cfg, clone
}

// workRemotely does what a worker does with a worktree turn: the session
// commits content (when there is any) on the turn's branch in the clone,
// and the commits come back bundled.
func workRemotely(t *testing.T, clone *gitrepo.Repo, wt *Worktree, content string) *Commits {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tree")
	must(t, clone.AddWorktree(t.Context(), path, wt.Branch, wt.Start))
	if content != "" {
		gittest.Commit(t, path, "fix.go", content, "the fix")
	}
	head, err := clone.Head(t.Context(), wt.Branch)
	must(t, err)
	must(t, clone.RemoveWorktree(t.Context(), path))
	c := &Commits{Branch: wt.Branch, Start: wt.Start, Head: head}
	if head != wt.Start {
		c.Bundle, err = clone.Bundle(t.Context(), wt.Branch, wt.Start, 1<<20)
		must(t, err)
	}
	return c
}

// A worktree turn run remotely is settled as the loop settles one: the
// home resolves where it starts (and makes nothing of it itself), the
// worker's commits become the turn's branch in the home's repository, the
// turn record names it and the turn cites it. A home killed after the
// branch came in and before the turn was recorded settles it once.
func TestHomeLandsARemoteWorktreesCommits(t *testing.T) {
	file, cfg, clone := remoteWorktreeDebate(t)
	home := filepath.Dir(file)
	h := openHome(t, file, cfg)
	s, err := h.Decide()
	must(t, err)
	r := TurnRef{Turn: s.Turn, Round: s.Round, Participant: s.Participant, Attempt: s.Attempt}
	b, err := h.Begin(r)
	must(t, err)
	r.Started = b.Started
	wt := b.Worktree
	if wt == nil || wt.Branch != "walkie/t/turn-1" || wt.Start != gittest.Git(t, home, "rev-parse", "HEAD") ||
		!slices.Equal(wt.Roots, []string{gittest.Git(t, home, "rev-list", "--max-parents=0", "HEAD")}) {
		t.Fatalf("worktree %+v, want turn 1's branch at the home's HEAD", wt)
	}
	if st := loadState(t, file); st.Running == nil || st.Running.Worktree != "" {
		t.Fatalf("running attempt %+v, want no worktree of the home's", st.Running)
	}
	if list := gittest.Git(t, home, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Fatalf("the home made a worktree:\n%s", list)
	}
	commits := workRemotely(t, clone, wt, "package fix\n")
	after, res := remoteTurn(r, b.Snapshot, "Fixed.\n\nType: review-request")
	// The killed home had brought the branch in already.
	repo, err := gitrepo.Open(t.Context(), home)
	must(t, err)
	if _, err := repo.Unbundle(t.Context(), commits.Bundle, commits.Branch); err != nil {
		t.Fatal(err)
	}
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: commits})
	must(t, err)
	ref := "walkie/t/turn-1@" + commits.Head
	if rec.Outcome != walkie.OutcomeAccepted || rec.Branch != ref {
		t.Fatalf("recorded %+v, want turn 1 accepted on %s", rec, ref)
	}
	if got := gittest.Git(t, home, "rev-parse", "walkie/t/turn-1"); got != commits.Head {
		t.Fatalf("the home's branch at %s, want %s", got, commits.Head)
	}
	d, err := walkie.Load(file)
	must(t, err)
	if refs := d.Entries[0].Marker.Tags.RefStrings(); !slices.Equal(refs, []string{ref}) {
		t.Fatalf("turn 1 cites %v, want %s", refs, ref)
	}
	again, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: commits})
	if err != nil || again.Seq != rec.Seq || len(turnLog(t, file)) != 1 {
		t.Fatalf("settled again: %+v, %v, %d attempts logged; want the one record", again, err, len(turnLog(t, file)))
	}

	// Turn 2 committed nothing: its branch is the loop's, deleted once the
	// turn is recorded.
	r2, snapshot := beginRemote(t, file, cfg)
	wt2 := &Worktree{Branch: "walkie/t/turn-2", Start: commits.Head}
	after2, res2 := remoteTurn(r2, snapshot, "Looks right.\n\nType: info")
	rec2, err := openHome(t, file, cfg).Settle(r2, Remote{After: after2, Session: res2, Commits: workRemotely(t, clone, wt2, "")})
	must(t, err)
	if rec2.Outcome != walkie.OutcomeAccepted || rec2.Branch != "" {
		t.Fatalf("turn 2 recorded %+v, want accepted with no branch", rec2)
	}
	if out := gittest.Git(t, home, "branch", "--list", "walkie/t/turn-2"); out != "" {
		t.Fatalf("turn 2's empty branch stays: %s", out)
	}
}

// Commits on another branch than the turn's are refused: a worker may
// not move the home's branches.
func TestHomeRefusesCommitsOnAnotherBranch(t *testing.T) {
	file, cfg, _ := remoteWorktreeDebate(t)
	h := openHome(t, file, cfg)
	s, err := h.Decide()
	must(t, err)
	r := TurnRef{Turn: s.Turn, Round: s.Round, Participant: s.Participant, Attempt: s.Attempt}
	b, err := h.Begin(r)
	must(t, err)
	r.Started = b.Started
	after, res := remoteTurn(r, b.Snapshot, "Moved main.")
	_, err = openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: &Commits{Branch: "main", Start: b.Worktree.Start, Head: b.Worktree.Start}})
	if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "not the turn's branch walkie/t/turn-1") {
		t.Fatalf("error %v, want bad input naming the turn's branch", err)
	}
	if got := gittest.Git(t, filepath.Dir(file), "rev-parse", "main"); got != b.Worktree.Start {
		t.Fatal("main moved")
	}
}

// A worker that found the session tampering with its clone sends the
// commits home marked so: the home records the attempt tampered, restores
// the record, whatever valid turn the agent wrote.
func TestHomeSettlesATamperedRemoteTurn(t *testing.T) {
	file, cfg, clone := remoteWorktreeDebate(t)
	r, snapshot := beginRemote(t, file, cfg)
	d, err := walkie.Load(file)
	must(t, err)
	wt := &Worktree{Branch: "walkie/t/turn-1", Start: gittest.Git(t, filepath.Dir(file), "rev-parse", "HEAD")}
	commits := workRemotely(t, clone, wt, "")
	commits.Tampered = "the session changed worker w's clone outside its branches (walkie/t/*): moved refs/heads/main; the worker put it back"
	after, res := remoteTurn(r, snapshot, "Fixed.\n\nType: review-request")
	rec, err := openHome(t, file, cfg).Settle(r, Remote{After: after, Session: res, Commits: commits})
	must(t, err)
	if rec.Outcome != walkie.OutcomeTampered || !strings.Contains(rec.Detail, commits.Tampered) {
		t.Fatalf("recorded %+v, want the attempt tampered with the worker's finding", rec)
	}
	if now, err := walkie.Load(file); err != nil || len(now.Entries) != len(d.Entries) {
		t.Fatalf("the record holds %d entries after a tampered turn (%v)", len(now.Entries), err)
	}
}
