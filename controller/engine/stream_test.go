package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
)

// shJob is a job whose agent runs script under sh, with a result file it
// appends to (Ready once it holds "done"), a short grace, and the
// transcript in a temp dir.
func shJob(t *testing.T, format, script string) (Job, string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	// Unsandboxed: these test how a session is watched and ended, and the
	// script writes beside itself, which a debater's sandbox forbids.
	a := config.Agent{Name: "a", Command: []string{"sh", "-c", script, "sh", out}, Usage: format,
		EnvAllow: config.DefaultEnvAllow, Home: config.HomeInherit, Dir: dir, Boundary: unsandboxed,
		Timing: config.Timing{Timeout: 20 * time.Second, Grace: 300 * time.Millisecond, KillGrace: 500 * time.Millisecond}}
	ready := func() bool { b, _ := os.ReadFile(out); return bytes.Contains(b, []byte("done")) }
	return Job{Agent: a, Vars: config.Vars{Prompt: "p"}, Transcript: filepath.Join(dir, "t"), Result: out, Ready: ready, Done: "the result is in"}, out
}

// unsandboxed is an agent's boundary with the sandbox off.
var unsandboxed = config.Boundary{Sandbox: config.Sandboxing{Level: config.SandboxOff}}

const result = `{"type":"result","total_cost_usd":0.25,"usage":{"input_tokens":10,"output_tokens":2}}`

// The slow closing message: a CLI that streams events writes its result,
// then takes far longer than the grace to print its final event, and then
// hangs. It is not ended until that event is in, so its cost is known;
// then the grace ends the hang.
func TestSessionWaitsForTheFinalEvent(t *testing.T) {
	j, _ := shJob(t, config.UsageClaudeJSON, `echo '{"type":"system","subtype":"init"}'; echo done >> "$1"; sleep 2; echo '`+result+`'; exec sleep 30`)
	e := New(config.Default(), nil)
	defer e.Close()
	r, err := e.Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if r.EndedBy != session.EndedByController || r.Duration < 2*time.Second || r.Duration > 10*time.Second {
		t.Errorf("ended by %s after %s, want by walkie soon after the final event at 2s", r.EndedBy, r.Duration)
	}
	if r.Usage == nil || r.Usage.CostSource != "reported" || r.Usage.CostUSD != 0.25 {
		t.Errorf("usage %+v, want the final event's", r.Usage)
	}
}

// Without an event stream, the grace after the result ends the session as
// before; output after the result holds it off until it too is quiet.
func TestSessionGrace(t *testing.T) {
	e := New(config.Default(), nil)
	defer e.Close()
	for _, c := range []struct {
		name, format, script string
		min, max             time.Duration
	}{
		{"no events: the grace", config.UsageClaudeJSON, `echo working; echo done >> "$1"; exec sleep 30`, 300 * time.Millisecond, 5 * time.Second},
		{"no usage format: the grace", config.UsageNone, `echo '{"type":"system"}'; echo done >> "$1"; exec sleep 30`, 300 * time.Millisecond, 5 * time.Second},
		{"output after the result: quiet first", config.UsageNone, `echo done >> "$1"; for i in 1 2 3 4 5 6 7 8 9 10; do echo closing $i; sleep 0.15; done; exec sleep 30`, 1500 * time.Millisecond, 8 * time.Second},
		{"final event before the result", config.UsageClaudeJSON, `echo '` + result + `'; sleep 0.5; echo done >> "$1"; exec sleep 30`, 800 * time.Millisecond, 6 * time.Second},
		{"final event, then its own exit", config.UsageClaudeJSON, `echo '{"type":"system"}'; echo done >> "$1"; sleep 0.5; echo '` + result + `'`, 500 * time.Millisecond, 5 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, _ := shJob(t, c.format, c.script)
			r, err := e.Run(context.Background(), j)
			if err != nil {
				t.Fatal(err)
			}
			if r.Duration < c.min || r.Duration > c.max {
				t.Errorf("ended after %s (by %s), want between %s and %s", r.Duration, r.EndedBy, c.min, c.max)
			}
			if strings.HasSuffix(c.name, "own exit") && r.EndedBy != session.EndedBySelf {
				t.Errorf("ended by %s: a CLI that exits after its final event is not ended", r.EndedBy)
			}
		})
	}
}

// A streaming CLI that never prints its final event is still bounded by
// the stall window.
func TestSessionNoFinalEventStalls(t *testing.T) {
	j, _ := shJob(t, config.UsageCodexJSONL, `echo '{"type":"turn.started"}'; echo done >> "$1"; exec sleep 30`)
	j.Agent.Stall = 700 * time.Millisecond
	e := New(config.Default(), nil)
	defer e.Close()
	r, err := e.Run(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ending != session.EndStalled {
		t.Errorf("ending %s after %s, want the stall window's", r.Ending, r.Duration)
	}
}

func TestTapLines(t *testing.T) {
	tp := newTap(config.UsageCodexJSONL)
	// An event split across chunks, a huge line, noise with escapes.
	for _, chunk := range []string{`{"type":"turn.sta`, "rted\"}\r\n", `{"type":"item.completed","x":"` + strings.Repeat("y", 1<<20) + "\"}\n", "\x1b[1mnoise\x1b[0m\n"} {
		tp.observe([]byte(chunk))
	}
	if !tp.awaitingFinal() {
		t.Fatal("streamed events, no final one: must be awaiting it")
	}
	tp.observe([]byte(`{"type":"turn.com`))
	if !tp.awaitingFinal() {
		t.Fatal("a final event not yet ended by its newline counted")
	}
	tp.observe([]byte("pleted\",\"usage\":{}}\n"))
	if tp.awaitingFinal() {
		t.Fatal("the final event did not count")
	}
	if len(tp.line) != 0 || cap(tp.line) > 2*maxEventStart {
		t.Errorf("the tap kept %d bytes of a line (cap %d)", len(tp.line), cap(tp.line))
	}
}

// An agent that says what it does at once and then thinks: its line comes
// while Started still records the session (a state write, fsync'd), and a
// consumer that learns of the session from Started must still be told it.
func TestOutputComesAfterStarted(t *testing.T) {
	j, _ := shJob(t, config.UsageNone, `echo 'reading the record'; sleep 1; echo done >> "$1"; exec sleep 30`)
	var mu sync.Mutex
	var started bool
	var lines []string
	early := 0
	j.Started = func(*session.Session) {
		// Long enough for the line to be read meanwhile.
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		started = true
		mu.Unlock()
	}
	j.Output = func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			early++
		}
		lines = append(lines, line)
	}
	e := New(config.Default(), nil)
	defer e.Close()
	if _, err := e.Run(context.Background(), j); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if early > 0 {
		t.Errorf("%d lines told before Started returned", early)
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "reading the record") }) {
		t.Errorf("the line said before Started returned was never told; told %q", lines)
	}
}
