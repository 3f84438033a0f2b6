package walkie

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestPostRefusals: every post the enforced writer must refuse, with a
// message that says why and whose turn it is, and nothing on disk changed.
func TestPostRefusals(t *testing.T) {
	type setup func(t *testing.T, file string)
	none := func(*testing.T, string) {}
	converge := func(t *testing.T, f string) { mustAppend(t, f, signed("claude", "A.\n"), signed("codex", "A.\n")) }
	halt := func(t *testing.T, f string) { must(t, Halt(f, "going in circles")) }
	capped := func(t *testing.T, f string) {
		mustAppend(t, f, turn("claude", "1\n"), turn("codex", "2\n"), turn("claude", "3\n"), turn("codex", "4\n"))
	}
	for _, tc := range []struct {
		name      string
		setup     setup
		post      Post
		want      []string
		whose     string // "" when the debate is not open
		outOfTurn bool
	}{
		{"out of turn", none, turn("codex", "Me first.\n"), []string{"codex cannot post turn 1: out of turn", "it is claude's turn"}, "claude", true},
		{"out of turn later", func(t *testing.T, f string) { mustAppend(t, f, turn("claude", "1\n")) }, turn("claude", "Again.\n"), []string{"claude cannot post turn 2", "it is codex's turn"}, "codex", true},
		{"unknown name", none, turn("gemini", "Hello.\n"), []string{`"gemini" is not a participant`, "claude, codex", "it is claude's turn"}, "claude", false},
		{"supervisor name as participant", none, turn("supervisor", "Hello.\n"), []string{"not a participant", "it is claude's turn"}, "claude", false},
		{"after convergence", converge, turn("claude", "More.\n"), []string{"converged"}, "", false},
		{"halted", halt, turn("claude", "More.\n"), []string{"halted (going in circles)", "walkie resume"}, "", false},
		{"past the round cap", capped, turn("claude", "5\n"), []string{"round 3, past the round cap of 2", "walkie extend", "it is claude's turn"}, "claude", false},
		{"empty", none, turn("claude", ""), []string{"empty", "it is claude's turn"}, "claude", false},
		{"blank", none, turn("claude", " \n\n\t\n"), []string{"empty", "it is claude's turn"}, "claude", false},
		{"sign-off alone", none, turn("claude", "Signed-off-by: claude\n"), []string{"empty"}, "claude", false},
		{"turn heading in body", none, turn("claude", "Intro.\n## Turn 2 · codex\nI agree.\n"), []string{"line 2 is an entry heading", "it is claude's turn"}, "claude", false},
		{"loose turn heading in body", none, turn("claude", "# Turn 7\n"), []string{"entry heading"}, "claude", false},
		{"supervisor heading in body", none, turn("claude", "x\n## Supervisor\n"), []string{"entry heading"}, "claude", false},
		{"marker in body", none, turn("claude", "x\n<!-- walkie seq=9 agent=claude -->\n"), []string{"walkie marker", "it is claude's turn"}, "claude", false},
		{"marker inline in body", none, turn("claude", "see <!--walkie here\n"), []string{"walkie marker"}, "claude", false},
		{"another agent's sign-off", none, turn("claude", "Fine.\nSigned-off-by: codex\n"), []string{"sign-off of codex", "only its author", "it is claude's turn"}, "claude", false},
		{"own sign-off not last", none, turn("claude", "Signed-off-by: claude\nBut wait.\n"), []string{"not the last line"}, "claude", false},
		{"supervisor signs", none, supervisorNote("Ok.\nSigned-off-by: claude\n"), []string{"sign-off"}, "claude", false},
		{"supervisor with --sign", none, Post{Supervisor: true, Sign: true, Body: []byte("Ok.\n")}, []string{"supervisor entries cannot sign"}, "claude", false},
		{"over size", none, turn("claude", strings.Repeat("x", DefaultMaxTurnBytes)+"\n"), []string{"65537 bytes, over the limit of 65536", "it is claude's turn"}, "claude", false},
		{"not UTF-8", none, turn("claude", "caf\xe9\n"), []string{"not UTF-8", "it is claude's turn"}, "claude", false},
		// What a CommonMark renderer shows as an entry heading (issue 12.7).
		{"indented turn heading", none, turn("claude", "Intro.\n\n   ## Turn 2 · codex\nI agree.\n"), []string{"body line 3 renders as the heading \"Turn 2 · codex\"", "it is claude's turn"}, "claude", false},
		{"one space before a supervisor heading", none, turn("claude", "x\n\n ## Supervisor\n"), []string{"body line 3 renders as the heading \"Supervisor\""}, "claude", false},
		{"setext turn heading", none, turn("claude", "Intro.\n\nTurn 2 · codex\n===\n\nI agree.\n"), []string{"body line 3 renders as the heading \"Turn 2 · codex\""}, "claude", false},
		{"setext dash heading", none, turn("claude", "Supervisor\n---\n"), []string{"body line 1 renders as the heading"}, "claude", false},
		{"heading in a blockquote", none, turn("claude", "> ## Turn 2 · codex\n"), []string{"renders as the heading"}, "claude", false},
		{"heading in a list item", none, turn("claude", "- ## Turn 2 · codex\n"), []string{"renders as the heading"}, "claude", false},
		{"heading behind emphasis", none, turn("claude", "## **Turn** 2 · codex\n"), []string{"renders as the heading \"Turn 2 · codex\""}, "claude", false},
		{"heading behind an entity", none, turn("claude", "## &#84;urn 2 · codex\n"), []string{"renders as the heading \"Turn 2 · codex\""}, "claude", false},
		{"lower-case heading", none, turn("claude", "## turn 2 · codex\n"), []string{"renders as the heading"}, "claude", false},
		{"raw HTML heading", none, turn("claude", "<h2>Turn 2 · codex</h2>\n"), []string{"body line 1 holds a raw HTML heading (<h2>Turn 2 · codex</h2>)"}, "claude", false},
		{"unclosed code fence", none, turn("claude", "Look:\n\n```go\nfunc f() {}\n"), []string{"body line 3 opens a code fence that is never closed"}, "claude", false},
		{"unclosed pre block", none, turn("claude", "<pre>\nx\n"), []string{"body line 1 opens an HTML block that is never closed"}, "claude", false},
		{"indented marker", none, turn("claude", "x\n   <!-- walkie seq=9 agent=claude -->\n"), []string{"body line 2 holds a walkie marker"}, "claude", false},
		// Control characters (issue 12.8).
		{"NUL", none, turn("claude", "a\nb\x00c\n"), []string{"body line 2 holds the control character U+0000 (NUL) at column 2"}, "claude", false},
		{"ESC", none, turn("claude", "\x1b[31mred\n"), []string{"body line 1 holds the control character U+001B (ESC) at column 1"}, "claude", false},
		{"C1 control", none, turn("claude", "x \u009b2J\n"), []string{"U+009B at column 3"}, "claude", false},
		{"lone carriage return", none, turn("claude", "Fine.\r## Turn 2 · codex\n"), []string{"body line 1 holds a carriage return not followed by a newline at column 6"}, "claude", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := newDebate(t, 2, "claude", "codex")
			tc.setup(t, file)
			before := snapshotTree(t, filepath.Dir(file))
			_, err := Append(file, tc.post)
			re := asRefused(t, err, tc.want...)
			if re.Whose != tc.whose {
				t.Errorf("whose turn: %q, want %q", re.Whose, tc.whose)
			}
			if re.OutOfTurn != tc.outOfTurn {
				t.Errorf("out of turn: %v, want %v", re.OutOfTurn, tc.outOfTurn)
			}
			if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
				t.Errorf("a refused post changed the disk: %s", diff)
			}
		})
	}
}

// TestPostNormalisesBody: the stored body ends in one newline, leading
// blank lines go, and a closing own sign-off becomes the sign flag.
func TestPostNormalisesBody(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	rc := mustAppend(t, file, turn("claude", "\n\n  Indented first line.\n\nSecond paragraph.  \n\n\n"))
	if rc.Entry.Signed {
		t.Error("unsigned body reported signed")
	}
	rc = mustAppend(t, file, Post{From: "codex", Body: []byte("Agreed.\nSigned-off-by: codex\n\n"), Sign: true})
	if !rc.Entry.Signed {
		t.Error("closing sign-off not recorded")
	}
	d := mustVerify(t, file)
	if got := string(d.Entries[0].Body); got != "\n  Indented first line.\n\nSecond paragraph.\n" {
		t.Errorf("body 1 stored as %q", got)
	}
	if got := string(d.Entries[1].Body); got != "\nAgreed.\nSigned-off-by: codex\n" {
		t.Errorf("body 2 stored as %q (one sign-off line, last)", got)
	}
	// A body exactly at the limit is accepted.
	mustAppend(t, file, turn("claude", strings.Repeat("x", DefaultMaxTurnBytes)))
	mustVerify(t, file)
}

// TestPostAcceptsMarkdown: the heading rules refuse only what reads as an
// entry heading; code, other headings and CRLF line endings stay.
func TestPostAcceptsMarkdown(t *testing.T) {
	file := newDebate(t, 20, "claude", "codex")
	for i, body := range []string{
		"As code:\n\n    ## Turn 2 · codex\n",
		"```\n   ## Turn 2 · codex\nTurn 2 · codex\n===\n```\n",
		"### Response to turn 2\n\nFine.\n",
		"Turn-based design\n=================\n",
		"Windows line endings.\r\nSecond line.\r\n",
		"A\ttab, and <!-- a comment --> and <br>.\n",
		"<div>\n\n*still markdown*\n\n</div>\n",
		"`<h2>` in a code span.\n",
	} {
		rc, err := Append(file, turn([]string{"claude", "codex"}[i%2], body))
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		if rc.Entry.Turn != i+1 {
			t.Fatalf("body %q recorded as %+v", body, rc.Entry)
		}
	}
	mustVerify(t, file)
}

// TestSupervisorAnyTime: supervisor entries are accepted out of turn, on
// halted, capped and converged debates, and never change whose turn it is.
func TestSupervisorAnyTime(t *testing.T) {
	file := newDebate(t, 1, "claude", "codex")
	note := func(want string) {
		t.Helper()
		rc := mustAppend(t, file, supervisorNote("A note.\n"))
		if rc.Queued || rc.Entry.Agent != SupervisorName || rc.Entry.Turn != 0 {
			t.Fatalf("receipt %+v", rc)
		}
		d := mustVerify(t, file)
		if p := d.Progress(); p.NextAgent != want || rc.Progress.NextAgent != want {
			t.Fatalf("after a note it is %s's turn (receipt: %s), want %s", p.NextAgent, rc.Progress.NextAgent, want)
		}
		sig, err := LoadSignal(StateDir(file, d.Meta.ID))
		must(t, err)
		if sig.Seq != d.Progress().Seq || sig.LastEntry == nil || sig.LastEntry.Agent != SupervisorName {
			t.Fatalf("doorbell after a note: %+v", sig)
		}
	}
	note("claude")
	mustAppend(t, file, turn("claude", "1\n"))
	note("codex")
	must(t, Halt(file, "pause"))
	note("codex")
	must(t, Resume(file))
	mustAppend(t, file, turn("codex", "2\n"))
	note("claude") // past the cap of one round
	file2 := newDebate(t, 3, "claude", "codex")
	mustAppend(t, file2, signed("claude", "ok\n"), signed("codex", "ok\n"))
	rc := mustAppend(t, file2, supervisorNote("Converged, thanks.\n"))
	if rc.Status != StatusConverged {
		t.Errorf("a note after convergence: status %s", rc.Status)
	}
	d := mustVerify(t, file2)
	if !d.Progress().Converged {
		t.Error("a note voided the convergence")
	}
}

// TestPostAfterOddEndings: the writer appends correctly whatever the last
// bytes of the file are: a marker without its newline, blank lines,
// spaces, a briefing without a final newline; on short files (parsed
// whole) and long ones (read through the tail window).
func TestPostAfterOddEndings(t *testing.T) {
	for _, format := range []int{FormatVersion, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { postAfterOddEndings(t, format) })
	}
}

func postAfterOddEndings(t *testing.T, format int) {
	for _, size := range []struct {
		name  string
		turns int
	}{{"short", 0}, {"short with turns", 3}, {"long", 400}} {
		for _, ending := range []struct {
			name string
			edit func([]byte) []byte
		}{
			{"as written", func(b []byte) []byte { return b }},
			{"no final newline", func(b []byte) []byte { return bytes.TrimSuffix(b, []byte("\n")) }},
			{"blank lines", func(b []byte) []byte { return append(b, "\n\n"...) }},
			{"spaces without newline", func(b []byte) []byte { return append(b, "\n  \t"...) }},
			{"crlf blank line", func(b []byte) []byte { return append(b, "\r\n"...) }},
		} {
			t.Run(size.name+"/"+ending.name, func(t *testing.T) {
				var file string
				if size.turns > 0 && size.turns < 10 {
					file = newDebate(t, 50, "claude", "codex")
					if format < FormatCompact {
						atFormat(t, file, format)
					}
					for i := 0; i < size.turns; i++ {
						mustAppend(t, file, turn([]string{"claude", "codex"}[i%2], "turn\n"))
					}
				} else {
					file = filepath.Join(t.TempDir(), "d.walkie.md")
					must(t, os.WriteFile(file, genRecordAt(t, format, size.turns, "claude", "codex"), 0o644))
				}
				if size.turns >= 10 {
					if fi, _ := os.Stat(file); fi.Size() < 64<<10+1 {
						t.Fatalf("the long file is only %d bytes: it does not exercise the tail window", fi.Size())
					}
				}
				must(t, os.WriteFile(file, ending.edit(readFile(t, file)), 0o644))
				d, err := Load(file)
				must(t, err)
				must(t, d.Verify())
				next := d.Progress().NextAgent
				mustAppend(t, file, turn(next, "After the odd ending.\n"))
				d = mustVerify(t, file)
				if len(d.Entries) != size.turns+1 {
					t.Fatalf("%d entries, want %d", len(d.Entries), size.turns+1)
				}
				mustAppend(t, file, supervisorNote("And another.\n"))
				mustVerify(t, file)
			})
		}
	}
}

// TestPostRefusesTornTail: bytes after the last entry stop the writer
// until repair, and the error names the line where they start.
func TestPostRefusesTornTail(t *testing.T) {
	for _, long := range []bool{false, true} {
		file := newDebate(t, 600, "claude", "codex")
		if long {
			must(t, os.WriteFile(file, genRecord(t, 600, "claude", "codex"), 0o644))
		}
		mustAppend(t, file, turn(mustLoad(t, file).Progress().NextAgent, "Recorded.\n"))
		good := readFile(t, file)
		torn := append(append([]byte(nil), good...), "\n## Turn 9 · clau"...)
		must(t, os.WriteFile(file, torn, 0o644))
		before := snapshotTree(t, filepath.Dir(file))
		_, err := Append(file, turn("codex", "x\n"))
		var te *TornTailError
		if !errors.As(err, &te) {
			t.Fatalf("long=%v: %v, want a torn tail", long, err)
		}
		if want := bytes.Count(good, []byte("\n")) + 2; te.Line != want || te.File != file || te.Bytes != len(torn)-len(good) {
			t.Errorf("long=%v: torn tail at line %d (%d bytes), want line %d (%d bytes)", long, te.Line, te.Bytes, want, len(torn)-len(good))
		}
		if !strings.Contains(err.Error(), "walkie repair") {
			t.Errorf("no fix in %v", err)
		}
		if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
			t.Errorf("changed the disk: %s", diff)
		}
	}
}

func mustLoad(t testing.TB, file string) *Doc {
	t.Helper()
	d, err := Load(file)
	must(t, err)
	return d
}

// TestPostBadFileChangesNothing: the writer refuses a file whose head is
// bad (front matter, participants, encoding, briefing edited after
// approval, header edited after the first entry) or whose end was cut,
// naming file and line, and leaves every file as it was.
func TestPostBadFileChangesNothing(t *testing.T) {
	approved := func(t *testing.T, f string) {
		b := readFile(t, "testdata/golden/turns.walkie.md")
		must(t, os.WriteFile(f, b, 0o644))
	}
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, f string)
		from  string
		to    string
		want  string
		line  int
		chain bool
	}{
		{"front matter broken", nil, "---\nwalkie", "--\nwalkie", "missing front matter", 1, false},
		{"front matter not closed", nil, "---\n# Briefing", "# Briefing", "not closed", 1, false},
		{"unknown key", nil, "max_rounds: 6\n", "max_rounds: 6\nvotes: 2\n", `unknown front matter key "votes"`, 6, false},
		{"one participant", nil, "participants: [claude, codex]", "participants: [claude]", "at least two", 4, false},
		{"duplicate participants", nil, "participants: [claude, codex]", "participants: [claude, claude]", "listed twice", 4, false},
		{"not UTF-8 in the briefing", nil, "Pick a name", "Pick a n\xe4me", "not UTF-8", 9, false},
		{"not UTF-8 near the end", nil, "Second.\n", "Sec\xffond.\n", "not UTF-8", 20, false},
		{"briefing edited after approval", approved, "Decided already", "Undecided", "briefing changed after it was approved", 8, false},
		{"header edited after the first turn", nil, "A sign-off means", "A signature means", "front matter or briefing", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := newDebate(t, 6, "claude", "codex")
			if tc.start != nil {
				tc.start(t, file)
			}
			if d := mustLoad(t, file); d.Progress().Turns == 0 {
				mustAppend(t, file, turn("claude", "First.\n"), turn("codex", "Second.\n"))
			}
			b := readFile(t, file)
			if !strings.Contains(string(b), tc.from) {
				t.Fatalf("%q not in the file", tc.from)
			}
			must(t, os.WriteFile(file, []byte(strings.Replace(string(b), tc.from, tc.to, 1)), 0o644))
			before := snapshotTree(t, filepath.Dir(file))
			next := "claude"
			if tc.start != nil {
				next = "codex"
			}
			_, err := Append(file, turn(next, "Third.\n"))
			if tc.chain {
				ce := asChain(t, err, 1, 0)
				if !strings.Contains(ce.Error(), tc.want) {
					t.Errorf("%v does not say %q", ce, tc.want)
				}
			} else {
				ie := asInput(t, err, file, tc.line)
				if !strings.Contains(ie.Msg, tc.want) {
					t.Errorf("%v does not say %q", ie, tc.want)
				}
			}
			if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
				t.Errorf("changed the disk: %s", diff)
			}
		})
	}
}

// TestPostTruncatedRecord: entries cut from the end are caught against
// state.json before anything is written.
func TestPostTruncatedRecord(t *testing.T) {
	for _, format := range []int{FormatVersion, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { postTruncatedRecord(t, format) })
	}
}

func postTruncatedRecord(t *testing.T, format int) {
	file, good := threeTurns(t, format)
	d := mustLoad(t, file)
	must(t, os.WriteFile(file, good[:d.Entries[3].Offset], 0o644))
	before := snapshotTree(t, filepath.Dir(file))
	_, err := Append(file, turn("claude", "Again.\n"))
	ce := asChain(t, err, 4, 0)
	if !strings.Contains(ce.Error(), "truncated") {
		t.Errorf("%v", ce)
	}
	if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
		t.Errorf("changed the disk: %s", diff)
	}
}

// TestTornPrefixes cuts a real append at every byte (as a crash between
// write and sync could) and checks the record then either verifies or
// reports a torn tail, never anything else; that repair makes it verify;
// and that posting carries on.
func TestTornPrefixes(t *testing.T) {
	file := newDebate(t, 1000, "claude", "codex")
	mustAppend(t, file, turn("claude", "One.\n"), turn("codex", "Two.\n"))
	before := readFile(t, file)
	logPath := filepath.Join(StateDir(file, "d"), LogFile)
	stBefore, err := os.ReadFile(logPath)
	must(t, err)
	mustAppend(t, file, signed("claude", "Three, with some words\n\nand a second paragraph.\n"))
	after := readFile(t, file)
	written := after[len(before):]
	for k := 0; k <= len(written); k++ {
		if k > 60 && k < len(written)-80 && k%5 != 0 {
			continue // every byte of the heading and the marker; a sample between
		}
		data := append(append([]byte(nil), before...), written[:k]...)
		must(t, os.WriteFile(file, data, 0o644))
		// The log as it was before the append: the crash came first.
		must(t, os.WriteFile(logPath, stBefore, 0o644))
		d, err := Load(file)
		if err != nil {
			t.Fatalf("cut at %d/%d: does not parse: %v", k, len(written), err)
		}
		var torn *TornTailError
		switch err := d.Verify(); {
		case err == nil:
			if n := len(d.Entries); n != 2 && n != 3 {
				t.Fatalf("cut at %d: %d entries", k, n)
			}
		case errors.As(err, &torn):
			side, err := Repair(file)
			must(t, err)
			if b, _ := os.ReadFile(side); !bytes.Equal(b, d.Tail) {
				t.Fatalf("cut at %d: side file holds %q, want %q", k, b, d.Tail)
			}
			if got := readFile(t, file); !bytes.Equal(got, data[:d.TailOffset]) {
				t.Fatalf("cut at %d: repair left %q", k, got[len(before)-10:])
			}
			mustVerify(t, file)
		default:
			t.Fatalf("cut at %d/%d: %v: neither verified nor a torn tail", k, len(written), err)
		}
		d = mustLoad(t, file)
		mustAppend(t, file, turn(d.Progress().NextAgent, "Carry on.\n"))
		mustVerify(t, file)
	}
}

// TestSupervisorInbox: while a controller holds run.lock and has an
// attempt running, supervisor notes are queued (the agent may be
// appending), and FlushInbox records them in the order they were posted.
func TestSupervisorInbox(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	dir := StateDir(file, "d")
	mustAppend(t, file, turn("claude", "One.\n"))

	// run.lock alone (no attempt running) does not queue.
	run, err := TryRunLock(dir)
	must(t, err)
	if rc := mustAppend(t, file, supervisorNote("Direct.\n")); rc.Queued {
		t.Fatal("queued without a running attempt")
	}
	_, _, err = UpdateState(file, OpState, func(m *Meta, p Progress, s *State) error {
		s.Running = &Attempt{Turn: 2, Agent: "codex", Number: 1, Started: time.Now(), ControllerPID: os.Getpid()}
		return nil
	})
	must(t, err)
	before := readFile(t, file)
	for _, n := range []string{"First note.\n", "Second note.\n", "Third note.\n"} {
		rc := mustAppend(t, file, supervisorNote(n))
		if !rc.Queued {
			t.Fatalf("note %q not queued: %+v", n, rc)
		}
	}
	if !bytes.Equal(before, readFile(t, file)) {
		t.Fatal("a queued note changed the record")
	}
	// A participant's post is refused beside the running attempt: it
	// would be judged with the agent's turn and undone with it.
	if _, err := Append(file, turn("codex", "Two.\n")); err == nil {
		t.Fatal("a post landed beside a running attempt")
	} else if re := asRefused(t, err, "is writing turn 2 now"); !re.Busy {
		t.Errorf("a refusal beside a running attempt is not Busy: %+v", re)
	}
	// The agent's turn goes in meanwhile and is settled; then the notes
	// follow it.
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("\n## Turn 2 · codex\n\nTwo.\n")
	f.Close()
	must(t, err)
	if s, err := Settle(file, before, Expect{Turn: 2, Agent: "codex"}, ""); err != nil || s.Outcome != VerdictAccepted {
		t.Fatalf("settle: %+v %v", s, err)
	}
	n, err := FlushInbox(file)
	must(t, err)
	if n != 3 {
		t.Fatalf("flushed %d notes, want 3", n)
	}
	d := mustVerify(t, file)
	var got []string
	for _, e := range d.Entries[3:] {
		got = append(got, strings.TrimSpace(string(e.Body)))
	}
	if strings.Join(got, "|") != "First note.|Second note.|Third note." || d.Entries[2].Kind != KindTurn {
		t.Errorf("entries after the turn: %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "inbox")); len(ents) != 0 {
		t.Errorf("inbox not emptied: %d files", len(ents))
	}
	if n, err := FlushInbox(file); n != 0 || err != nil {
		t.Errorf("second flush: %d, %v", n, err)
	}
	// Once the controller is gone, a stale Running does not queue.
	run.Unlock()
	if rc := mustAppend(t, file, supervisorNote("After.\n")); rc.Queued {
		t.Error("queued with no controller holding run.lock")
	}
	// A refused note is refused before it is queued.
	run, err = TryRunLock(dir)
	must(t, err)
	defer run.Unlock()
	_, err = Append(file, supervisorNote(""))
	asRefused(t, err, "empty")
}

func TestRunLockIsExclusive(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	dir := StateDir(file, "d")
	if ControllerRunning(dir) {
		t.Fatal("running before anyone locked")
	}
	l, err := TryRunLock(dir)
	must(t, err)
	if !ControllerRunning(dir) {
		t.Error("not running while locked")
	}
	if _, err := TryRunLock(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("second lock: %v, want ErrLocked", err)
	}
	l.Unlock()
	if ControllerRunning(dir) {
		t.Error("running after unlock")
	}
}

// TestConcurrentAppendInProcess: several goroutines post in turn through
// the lock and the doorbell; the record comes out whole. (The
// multi-process version lives in cmd/walkie.)
func TestConcurrentAppendInProcess(t *testing.T) {
	parts := []string{"a", "b", "c"}
	const each = 8
	file := newDebate(t, each, parts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(parts))
	for _, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; {
				_, err := Append(file, turn(p, p+" says "+itoa(i)+"\n"))
				var re *RefusedError
				switch {
				case err == nil:
					i++
				case errors.As(err, &re) && re.OutOfTurn:
					if _, err := WaitTurn(ctx, file, p); err != nil {
						errs <- err
						return
					}
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d := mustVerify(t, file)
	if p := d.Progress(); p.Turns != each*len(parts) {
		t.Fatalf("%d turns, want %d", p.Turns, each*len(parts))
	}
	sig, err := LoadSignal(StateDir(file, "d"))
	must(t, err)
	if sig.Status != StatusMaxRounds || sig.Turn != "" {
		t.Errorf("doorbell at the end: %+v", sig)
	}
}

// TestReadMetaChunkBoundary: the front matter is read in chunks; a
// multi-byte rune cut by a chunk boundary in the text after it is not an
// encoding error, whichever byte of which rune the boundary falls on.
func TestReadMetaChunkBoundary(t *testing.T) {
	for _, text := range []string{"中文字", "é", "ü😀"} {
		for pad := 0; pad < 8; pad++ {
			file := filepath.Join(t.TempDir(), "t.walkie.md")
			data := "---\nwalkie: 1\nid: t\nparticipants: [claude, codex]\nmax_rounds: 3\n---\n# Briefing\n\n" +
				strings.Repeat("x", pad) + strings.Repeat(text, 20000/len(text)) + "\n"
			must(t, os.WriteFile(file, []byte(data), 0o644))
			m, err := ReadMeta(file)
			if err != nil {
				t.Fatalf("%q pad %d: %v", text, pad, err)
			}
			if m.ID != "t" || len(m.Participants) != 2 {
				t.Fatalf("meta %+v", m)
			}
			mustAppend(t, file, turn("claude", text+"\n"))
			mustVerify(t, file)
		}
	}
}

// TestPostReadsHeadAndTailOnly: the writer's cost must grow with the
// entry, not the file. Counted in bytes read (Linux /proc/self/io), which
// unlike time does not depend on how busy the machine is.
func TestPostReadsHeadAndTailOnly(t *testing.T) {
	for _, format := range []int{FormatVersion, FormatCompact} {
		t.Run("format "+itoa(format), func(t *testing.T) { postReadsHeadAndTailOnly(t, format) })
	}
}

func postReadsHeadAndTailOnly(t *testing.T, format int) {
	rchar := func() int64 {
		b, err := os.ReadFile("/proc/self/io")
		if err != nil {
			t.Skipf("no /proc/self/io: %v", err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "rchar: "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		t.Skip("no rchar in /proc/self/io")
		return 0
	}
	file := filepath.Join(t.TempDir(), "big.walkie.md")
	data := genRecordAt(t, format, 10000, "claude", "codex")
	must(t, os.WriteFile(file, data, 0o644))
	mustAppend(t, file, turn("claude", "Warm up: this makes the state directory.\n"))
	before := rchar()
	mustAppend(t, file, turn("codex", "One ordinary turn.\n"))
	read := rchar() - before
	t.Logf("a post on a %d-byte record read %d bytes", len(data), read)
	if read > 256<<10 {
		t.Errorf("a post on a %d-byte record read %d bytes; it should read the head and a tail window only", len(data), read)
	}
}

// TestPostAfterFileReplaced: a post waiting for the lock while a restore
// renames a new file over the record must append to the new file, not to
// the one it saw before it waited.
func TestPostAfterFileReplaced(t *testing.T) {
	file := newDebate(t, 6, "claude", "codex")
	mustAppend(t, file, turn("claude", "One.\n"))
	dir := StateDir(file, "d")
	fi, err := os.Stat(filepath.Join(dir, "lock"))
	must(t, err)
	ino := fi.Sys().(*syscall.Stat_t).Ino
	if _, err := os.ReadFile("/proc/locks"); err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	held, err := LockRecord(dir)
	must(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := Append(file, turn("codex", "Two.\n"))
		done <- err
	}()
	// Wait until the post is blocked on the lock (a "->" waiter on the
	// lock file's inode in /proc/locks).
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile("/proc/locks")
		if strings.Contains(string(b), "-> FLOCK") && strings.Contains(string(b), ":"+strconv.FormatUint(ino, 10)+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the post never waited for the lock")
		}
		time.Sleep(time.Millisecond)
	}
	must(t, WriteFileAtomic(file, readFile(t, file), 0o644)) // what restore does
	held.Unlock()
	must(t, <-done)
	d := mustVerify(t, file)
	if len(d.Entries) != 2 {
		t.Fatalf("%d entries after the post: it went to the replaced file", len(d.Entries))
	}
}

// TestPostChecksTheEnd: what the writer reads of the end of the record
// must hold before it builds on it: the last entry's hash and link, and
// the turn order of the turns it read; on short files (parsed whole) and
// long ones (the tail window) alike. Nothing is written otherwise.
func TestPostChecksTheEnd(t *testing.T) {
	long := string(genRecord(t, 300, "claude", "codex")) // turn 301 is claude's
	short := goodHeader + string(forge(goodHeader, ft(1, 1, "claude"))[len(goodHeader):])
	appendForged := func(base string, seq, turn int, agent, body string) string {
		d, err := Parse("f", []byte(base))
		must(t, err)
		content := "\n## Turn " + itoa(turn) + " · " + agent + "\n\n" + body
		mk := Marker{Seq: seq, Turn: turn, Agent: agent, At: t0, Prev: d.LastHash()}
		return base + content + string(stamp([]byte(content), &mk, d.Meta.Walkie))
	}
	for _, tc := range []struct {
		name string
		data func(base string, seq, turn int) string
		want string
	}{
		{"last entry edited", func(b string, seq, turn int) string {
			s := appendForged(b, seq, turn, "codex", "I agree.\n")
			return strings.Replace(s, "I agree.", "I disagree.", 1)
		}, "its text was changed after it was recorded"},
		{"last entry not linked", func(b string, seq, turn int) string {
			s := appendForged(b, seq, turn, "codex", "I agree.\n")
			i := strings.LastIndex(s, "prev=sha256:") + len("prev=sha256:")
			return s[:i] + "0" + s[i+1:]
		}, "does not follow the entry before it"},
		{"wrong author", func(b string, seq, turn int) string {
			return appendForged(b, seq, turn, "claude", "Me again.\n")
		}, `its marker says turn ` /* … was written by "claude" but it was "codex"'s turn */},
		{"turn out of sequence", func(b string, seq, turn int) string {
			return appendForged(b, seq, turn+1, "claude", "Skipping one.\n")
		}, "where turn"},
	} {
		for _, base := range []struct {
			name      string
			data      string
			seq, turn int
		}{{"short", short, 2, 2}, {"long", long, 301, 301}} {
			t.Run(tc.name+"/"+base.name, func(t *testing.T) {
				data := base.data
				if base.name == "long" {
					// genRecord's next turn is 301, by claude; make it codex's.
					data = appendForged(data, 301, 301, "claude", "One more.\n")
					base.seq, base.turn = 302, 302
				}
				file := filepath.Join(t.TempDir(), "f.walkie.md")
				must(t, os.WriteFile(file, []byte(tc.data(data, base.seq, base.turn)), 0o644))
				// The lock file exists, as Init leaves it: the snapshot is
				// then about the record and its state.
				m, err := ReadMeta(file)
				must(t, err)
				l, err := LockRecord(StateDir(file, m.ID))
				must(t, err)
				l.Unlock()
				before := snapshotTree(t, filepath.Dir(file))
				_, err = Append(file, turn("claude", "Next.\n"))
				ce := asChain(t, err, base.seq, 0)
				if !strings.Contains(ce.Error(), tc.want) || ce.Line == 0 {
					t.Errorf("%v: want %q and a line", ce, tc.want)
				}
				if diff := before.diff(snapshotTree(t, filepath.Dir(file))); diff != "" {
					t.Errorf("changed the disk: %s", diff)
				}
			})
		}
	}
}

// TestReconcileRingsAStaleDoorbell: a machine crash can lose the rename
// of the doorbell after an entry (Ring does not wait for it to be
// durable); Reconcile rings it again, and leaves one that agrees alone.
func TestReconcileRingsAStaleDoorbell(t *testing.T) {
	file := newDebate(t, 3, "a", "b")
	mustAppend(t, file, turn("a", "First.\n"))
	d := mustVerify(t, file)
	bell := filepath.Join(StateDir(file, d.Meta.ID), "signal.json")
	before := readFile(t, bell)
	mustAppend(t, file, turn("b", "Second.\n"))
	if caught, err := Reconcile(file); err != nil || caught {
		t.Fatalf("Reconcile of a record that agrees = %v, %v; want false", caught, err)
	}
	for name, stale := range map[string][]byte{"an older doorbell": before, "an empty doorbell": nil} {
		must(t, os.WriteFile(bell, stale, 0o644))
		if caught, err := Reconcile(file); err != nil || !caught {
			t.Fatalf("%s: Reconcile = %v, %v; want true", name, caught, err)
		}
		sig, err := LoadSignal(filepath.Dir(bell))
		if err != nil || sig == nil || sig.Seq != 2 || sig.Turn != "a" {
			t.Errorf("%s: the doorbell after Reconcile is %+v, %v; want seq 2, a's turn", name, sig, err)
		}
	}
}

// TestPostCompactWindow: on a long compact record (format 4) a post reads
// the end through the window, takes the whole chain hash from state.json
// when state.json recorded that very last entry, and parses the whole
// file when it did not; either way it finds what a whole parse finds.
func TestPostCompactWindow(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	must(t, os.WriteFile(file, genRecordAt(t, FormatCompact, 400, "claude", "codex"), 0o644))
	// Without state.json the first post parses the file whole.
	mustAppend(t, file, turn("claude", "After 400 turns.\n"), supervisorNote("A note.\n"), signed("codex", "Agreed.\n"))
	d := mustVerify(t, file)
	st, err := LoadState(StateDir(file, d.Meta.ID))
	must(t, err)
	if st.LastSeq != 403 || st.LastHash != d.LastHash() {
		t.Fatalf("state after the posts: %d %s, want 403 %s", st.LastSeq, st.LastHash, d.LastHash())
	}
	open := func() *os.File {
		f, err := os.Open(file)
		must(t, err)
		t.Cleanup(func() { f.Close() })
		return f
	}
	whole, err := readWhole(open(), file, int64(len(readFile(t, file))))
	must(t, err)
	win, err := readTail(open(), file, &d.Meta, st)
	must(t, err)
	if win.last != nil {
		t.Error("the window was not anchored on state.json")
	}
	if !reflect.DeepEqual(win.prog, whole.prog) || !reflect.DeepEqual(win.recent, whole.recent) {
		t.Fatalf("the window read\n%+v %+v\nwhere the whole file reads\n%+v %+v", win.prog, win.recent, whole.prog, whole.recent)
	}
	// A state.json that recorded another last entry is no anchor.
	other := *st
	other.LastHash = d.Entries[len(d.Entries)-2].Marker.Hash
	if ti, err := readTail(open(), file, &d.Meta, &other); err != nil || ti.last == nil {
		t.Fatalf("read with a state of another entry: %v, %+v; want the whole file read", err, ti)
	}

	// The last entry edited after it was recorded: the post builds on
	// the hash walkie recorded, so the edit never verifies again.
	edited := strings.Replace(string(readFile(t, file)), "Agreed.", "Agreed, mostly.", 1)
	must(t, os.WriteFile(file, []byte(edited), 0o644))
	mustAppend(t, file, turn("claude", "Next.\n"))
	dd := mustLoad(t, file)
	ce := asChain(t, dd.Verify(), 403, 0)
	if !strings.Contains(ce.Error(), "its text was changed after it was recorded") {
		t.Errorf("verify after an edit of the last entry: %v", ce)
	}
}
