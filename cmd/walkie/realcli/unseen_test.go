//go:build linux

package realcli

import (
	"os"
	"strconv"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// Nothing of the record is ever unseen: in a 30- and a 60-turn debate the
// real claude, codex and gemini each take a turn, read the record as
// walkie's prompt tells them, through their own tools, and every entry
// before their turn reaches the model in their session (its nonce is in
// a tool result the CLI sent back). The record is seeded up to three
// turns before the end (walkie post, as a person or another agent would
// have written it), so that the last three turns, one per CLI, read a
// record of 30 and of 60 entries of about 1.7 KB each: 50 and 100 KB,
// past what codex shows of one command (about 40 KB) and claude of one
// shell call (30,000 characters).
func TestNothingUnseen(t *testing.T) {
	t.Parallel()
	for _, turns := range []int{30, 60} {
		t.Run(strconv.Itoa(turns)+" turns", func(t *testing.T) {
			t.Parallel()
			rd := &reader{write: argument}
			f := newFixture(t, rd.script, setup{participants: []string{"claude", "codex", "gemini"}, maxRounds: turns/3 + 1})
			f.MustRun(0, "brief", "approve", "d.walkie.md", "--yes")
			seed(t, f.file, turns-3)
			for k := turns - 2; k <= turns; k++ {
				f.session(exitOK, "turn", "d.walkie.md")
			}
			recs := f.turns()
			f.wantOutcomes(recs, "accepted", "accepted", "accepted")
			f.MustRun(0, "verify", "d.walkie.md")
			byTurn := sessions(f.srv)
			for k := turns - 2; k <= turns; k++ {
				agent := []string{"claude", "codex", "gemini"}[(k-1)%3]
				if len(byTurn[k]) == 0 {
					t.Fatalf("no model call of turn %d's session", k)
				}
				if missed := unseen(byTurn[k], k); len(missed) > 0 {
					t.Errorf("turn %d (%s): the entries of turns %s never reached the model", k, agent, ranges(missed))
					last := byTurn[k][len(byTurn[k])-1]
					for _, res := range last.ToolResults() {
						t.Logf("a tool result of its last call: %s", clipEnds(res, 300))
					}
				}
				if rd.reads[k] < 2 {
					t.Errorf("turn %d (%s) read the record in %d pieces; a %d-entry record is longer than one", k, agent, rd.reads[k], k-1)
				}
			}
		})
	}
}

// seed posts turns 1..n, each an argument of its own and none signed, as
// the participants would have written them.
func seed(t testing.TB, file string, n int) {
	t.Helper()
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= n; k++ {
		if _, err := walkie.Append(file, walkie.Post{From: d.Meta.TurnAgent(k), Body: []byte(argument(k, ""))}); err != nil {
			t.Fatalf("seed turn %d: %v", k, err)
		}
	}
	if fi, err := os.Stat(file); err == nil {
		t.Logf("seeded %d turns: %d bytes", n, fi.Size())
	}
}

// clipEnds is s with its middle left out past n bytes at each end.
func clipEnds(s string, n int) string {
	if len(s) <= 2*n {
		return s
	}
	return s[:n] + " […] " + s[len(s)-n:]
}
