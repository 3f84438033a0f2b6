// Package recovertest leaves debates as a controller killed mid-turn
// leaves them, for the tests of whatever must make them whole again (the
// loop, the daemon, the cron tick). It does by hand what the controller
// had done by the moment of the kill, so the moment is exact.
package recovertest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// StampedNotLogged leaves file as a controller killed after stamping the
// next turn (by agent, with body) and before logging it: the turn is in
// the record, the log still holds the attempt as running and no end of
// it, and the controller's process is gone.
func StampedNotLogged(t testing.TB, file, agent, body string) {
	t.Helper()
	snapshot, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	p := d.Progress()
	if p.NextAgent != agent {
		t.Fatalf("turn %d is %s's, not %s's", p.NextTurn, p.NextAgent, agent)
	}
	dir := walkie.StateDir(file, d.Meta.ID)
	path := filepath.Join(dir, "snapshot.md")
	if err := os.WriteFile(path, snapshot, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = walkie.UpdateState(file, walkie.OpBegun, func(_ *walkie.Meta, _ walkie.Progress, s *walkie.State) error {
		s.Running = &walkie.Attempt{Turn: p.NextTurn, Agent: agent, Number: 1, Started: time.Now().UTC().Truncate(time.Millisecond),
			ControllerPID: deadPID(t), Snapshot: path, Size: int64(len(snapshot)), Seq: p.Seq, Hash: p.Hash}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("\n## Turn " + strconv.Itoa(p.NextTurn) + " · " + agent + "\n" + body + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := walkie.Settle(file, snapshot, walkie.Expect{Turn: p.NextTurn, Agent: agent}, "")
	if err != nil || s.Outcome != walkie.VerdictAccepted {
		t.Fatalf("stamp turn %d: %v %+v", p.NextTurn, err, s.Verdict)
	}
}

// deadPID is the pid of a process that has exited.
func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
