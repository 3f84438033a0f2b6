package blackbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// Turn is one attempt, the attempt of an "ended" line of the log,
// decoded by its documented field names (docs/controller.md), not the
// controller's Go type, so that a renamed or undocumented field fails the
// suites.
type Turn struct {
	Seq        int         `json:"seq"`
	Turn       int         `json:"turn"`
	Round      int         `json:"round"`
	Agent      string      `json:"agent"`
	Role       string      `json:"role"`
	Attempt    int         `json:"attempt"`
	Started    string      `json:"started"`
	Ended      string      `json:"ended"`
	DurationMS int64       `json:"duration_ms"`
	ExitCode   *int        `json:"exit_code"`
	Signal     string      `json:"signal"`
	Outcome    string      `json:"outcome"`
	Detail     string      `json:"detail"`
	EndedBy    string      `json:"ended_by"`
	Bytes      int64       `json:"output_bytes"`
	Signed     bool        `json:"signed"`
	Kept       string      `json:"kept"`
	Worker     string      `json:"worker"`
	Branch     string      `json:"branch"`
	Usage      *Usage      `json:"usage"`
	SentBytes  int64       `json:"sent_bytes"`
	Budget     int64       `json:"budget_input_tokens"`
	Transcript *Transcript `json:"transcript"`
	Sandbox    *Sandbox    `json:"sandbox"`
	// Provenance.
	Argv         []string `json:"argv"`
	PromptSHA256 string   `json:"prompt_sha256"`
	PromptBytes  int      `json:"prompt_bytes"`
	KeysProxied  bool     `json:"keys_proxied"`
	CLIVersion   string   `json:"cli_version"`
	Model        string   `json:"model"`
	Effort       string   `json:"effort"`
}

// Usage is what an attempt consumed.
type Usage struct {
	InputTokens  int64   `json:"input_tokens"`
	Cached       int64   `json:"cached_input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	CostKind     string  `json:"cost_kind"`
	CostSource   string  `json:"cost_source"`
	Partial      bool    `json:"partial"`
}

// Sandbox is how an attempt's boundary was applied and what its output
// reported refused.
type Sandbox struct {
	Kind    string   `json:"kind"`
	ABI     int      `json:"abi"`
	Missing []string `json:"missing"`
	Left    []string `json:"left_out"`
	Refused []string `json:"refused"`
}

// Transcript names an attempt's transcripts, relative to the state
// directory.
type Transcript struct {
	Raw  string `json:"raw"`
	Text string `json:"text"`
}

func (r Turn) String() string {
	s := fmt.Sprintf("turn %d %s attempt %d: %s (%s) exit=%s signal=%s ended_by=%s %dms",
		r.Turn, r.Agent, r.Attempt, r.Outcome, r.Detail, exitText(r.ExitCode), r.Signal, r.EndedBy, r.DurationMS)
	if u := r.Usage; u != nil {
		s += fmt.Sprintf(" usage %d in, %d out, $%.6f %s", u.InputTokens, u.OutputTokens, u.CostUSD, u.CostSource)
	}
	if r.Worker != "" {
		s += " worker=" + r.Worker
	}
	return s
}

func exitText(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

// ExitCode is the attempt's exit code, -1 when it has none (a signal
// ended it).
func ExitCode(r Turn) int {
	if r.ExitCode == nil {
		return -1
	}
	return *r.ExitCode
}

// StartedAt is when the attempt started.
func (r Turn) StartedAt() time.Time { return stamp(r.Started) }

// EndedAt is when the attempt ended.
func (r Turn) EndedAt() time.Time { return stamp(r.Ended) }

func stamp(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// LogLine is one line of a debate's log (.walkie/ID/log.jsonl), decoded
// by the field names docs/format.md documents.
type LogLine struct {
	N       int             `json:"n"`
	Op      string          `json:"op"`
	At      string          `json:"at"`
	Layout  int             `json:"layout"`
	Torn    *TornBytes      `json:"torn"`
	Set     json.RawMessage `json:"set"`
	Attempt json.RawMessage `json:"attempt"`
	CRC     string          `json:"crc"`
}

// TornBytes are the damaged bytes a line's append ended.
type TornBytes struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// ReadLog reads the log of the debate whose state directory is dir, as
// docs/format.md documents it: every line whole, its checksum the CRC-32C
// of its bytes before `,"crc":"`, numbered from 1 with no gap; none yet
// is no lines.
func ReadLog(t testing.TB, dir string) []LogLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, walkie.LogFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []LogLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	table := crc32.MakeTable(crc32.Castagnoli)
	for sc.Scan() {
		line := sc.Bytes()
		var l LogLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("log.jsonl: %v in %s", err, line)
		}
		i := bytes.LastIndex(line, []byte(`,"crc":"`))
		if i < 0 || fmt.Sprintf("%08x", crc32.Checksum(line[:i], table)) != l.CRC {
			t.Fatalf("log.jsonl: line %d's checksum does not match: %s", len(out)+1, line)
		}
		if l.N != len(out)+1 {
			t.Fatalf("log.jsonl: line %d is numbered %d", len(out)+1, l.N)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ReadTurns reads the attempts in the log of the debate whose state
// directory is dir, in the order they ended; none yet is no attempts.
// Every line must be whole.
func ReadTurns(t testing.TB, dir string) []Turn {
	t.Helper()
	var out []Turn
	for _, l := range ReadLog(t, dir) {
		if len(l.Attempt) == 0 {
			continue
		}
		var r Turn
		dec := json.NewDecoder(bytes.NewReader(l.Attempt))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("log.jsonl: line %d's attempt: %v in %s", l.N, err, l.Attempt)
		}
		out = append(out, r)
	}
	return out
}

// Outcomes lists the outcome of every attempt, in order.
func Outcomes(recs []Turn) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Outcome)
	}
	return out
}

// Dump lists the attempts, one a line, for a failure message.
func Dump(recs []Turn) string {
	var b strings.Builder
	for _, r := range recs {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

// WantOutcomes fails the test unless the attempts' outcomes are want,
// showing each attempt and the end of its transcript (in the state
// directory dir).
func WantOutcomes(t testing.TB, dir string, recs []Turn, want ...string) {
	t.Helper()
	got := Outcomes(recs)
	if slices.Equal(got, want) {
		return
	}
	var texts strings.Builder
	for _, r := range recs {
		if r.Transcript == nil || r.Transcript.Text == "" {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, r.Transcript.Text))
		fmt.Fprintf(&texts, "--- transcript of turn %d attempt %d:\n%s\n", r.Turn, r.Attempt, Tail(string(b), 25))
	}
	t.Fatalf("outcomes %v, want %v\n%s%s", got, want, Dump(recs), texts.String())
}

// State reads the control state of the debate whose state directory is
// dir.
func State(t testing.TB, dir string) *walkie.State {
	t.Helper()
	st, err := walkie.LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Status is the status that walkie status --json printed in r.
func Status(t testing.TB, r Result) string {
	t.Helper()
	var s struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil {
		t.Fatalf("walkie status --json: %v\n%s", err, r.Stdout)
	}
	return s.Status
}

// Holds fails the test unless the record at path holds turns turns, and
// returns it.
func Holds(t testing.TB, path string, turns int) *walkie.Doc {
	t.Helper()
	doc, err := walkie.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Progress().Turns; got != turns {
		t.Fatalf("the record holds %d turns, want %d", got, turns)
	}
	return doc
}

// Invocations is how many times the fake agent has been started with
// --state file: it counts them there as soon as it has read its script.
func Invocations(file string) int {
	b, _ := os.ReadFile(file)
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}
