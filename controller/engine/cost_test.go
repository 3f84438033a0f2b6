package engine

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/walkie"
)

// Every reader asks the usage its kind; a line written before the kind
// existed reads as it did then, and a figure nobody can have reported is
// unknown whatever kind it claims (a remote worker's result, an old log).
func TestCostKind(t *testing.T) {
	for _, c := range []struct {
		name              string
		u                 *Usage
		kind              CostKind
		known, est, whole bool
		usd               float64
	}{
		{"no usage", nil, CostUnknown, false, false, false, 0},
		{"reported", &Usage{Kind: CostReported, CostUSD: 0.5, CostSource: "reported"}, CostReported, true, false, true, 0.5},
		{"reported zero", &Usage{Kind: CostReported, CostSource: "reported"}, CostReported, true, false, true, 0},
		{"estimated", &Usage{Kind: CostEstimated, CostUSD: 1, CostSource: "estimated (pricing as of 2026-11-30)"}, CostEstimated, true, true, true, 1},
		{"partial", &Usage{Kind: CostPartial, Partial: true, CostUSD: 1}, CostPartial, true, true, false, 1},
		{"unknown", &Usage{Kind: CostUnknown, CostSource: "unknown (model x not in the pricing table)"}, CostUnknown, false, false, false, 0},
		// Written before cost_kind: CostSource's words.
		{"old reported", &Usage{CostUSD: 0.5, CostSource: "reported"}, CostReported, true, false, true, 0.5},
		{"old estimated", &Usage{CostUSD: 1, CostSource: "estimated (pricing as of 2026-11-30)"}, CostEstimated, true, true, true, 1},
		{"old partial", &Usage{CostUSD: 1, CostSource: "estimated from the usage it streamed", Partial: true}, CostPartial, true, true, false, 1},
		{"old unknown", &Usage{CostSource: "unknown"}, CostUnknown, false, false, false, 0},
		{"old, no source", &Usage{CostUSD: 1}, CostUnknown, false, false, false, 0},
		// Figures no session can have reported (issue 27, item 6).
		{"negative cost", &Usage{Kind: CostReported, CostUSD: -6, CostSource: "reported"}, CostUnknown, false, false, false, 0},
		{"NaN", &Usage{Kind: CostReported, CostUSD: math.NaN()}, CostUnknown, false, false, false, 0},
		{"infinite", &Usage{Kind: CostEstimated, CostUSD: math.Inf(1)}, CostUnknown, false, false, false, 0},
		{"absurd", &Usage{Kind: CostReported, CostUSD: 1e300}, CostUnknown, false, false, false, 0},
		{"negative tokens", &Usage{Kind: CostEstimated, CostUSD: 0.1, InputTokens: -5}, CostUnknown, false, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			usd, complete := c.u.Cost()
			if k := c.u.CostKind(); k != c.kind || c.u.Known() != c.known || c.u.Estimate() != c.est || c.u.Complete() != c.whole || complete != c.whole || usd != c.usd {
				t.Errorf("kind %s known %v estimate %v complete %v cost %v,%v", k, c.u.Known(), c.u.Estimate(), c.u.Complete(), usd, complete)
			}
		})
	}
}

// The kind goes into turns.jsonl as cost_kind; a line without it is read.
func TestCostKindInTheTurnLog(t *testing.T) {
	b, err := json.Marshal(TurnRecord{Usage: &Usage{Kind: CostPartial, Partial: true, CostUSD: 0.2, CostSource: "estimated from …"}})
	if err != nil {
		t.Fatal(err)
	}
	var back TurnRecord
	if err := json.Unmarshal(b, &back); err != nil || back.Usage.CostKind() != CostPartial {
		t.Fatalf("%s read back as %+v (%v)", b, back.Usage, err)
	}
	var old TurnRecord
	if err := json.Unmarshal([]byte(`{"usage":{"cost_usd":0.01,"cost_source":"reported"}}`), &old); err != nil || old.Usage.CostKind() != CostReported {
		t.Fatalf("an old line: %+v (%v)", old.Usage, err)
	}
}

// Charge is the one writer of an attempt's cost into the state; an
// attempt of unknown cost counts, whatever kind of attempt it was.
func TestCharge(t *testing.T) {
	var s walkie.State
	Charge(&s, &Usage{Kind: CostReported, CostUSD: 0.5})
	Charge(&s, nil)
	Charge(&s, &Usage{Kind: CostPartial, Partial: true, CostUSD: 0.1})
	Charge(&s, &Usage{Kind: CostReported, CostUSD: -6})
	if s.CostUSD != 0.6 || s.UnknownCosts != 3 || s.MaxCostUSD != 0.5 {
		t.Errorf("%+v", s)
	}
}

// A round table's own attempt is logged with its cost charged, in one
// line each: the record and what it cost are durable together.
func TestLogAttempt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d"+walkie.FileSuffix)
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 2, Briefing: []byte("Pick one.\n")}); err != nil {
		t.Fatal(err)
	}
	dir := walkie.StateDir(file, "d")
	for i, u := range []*Usage{{Kind: CostReported, CostUSD: 0.25}, nil, {Kind: CostReported}} {
		if err := LogAttempt(file, TurnRecord{Turn: 2, Agent: "b", Role: "reviewer", Attempt: i + 1, Usage: u}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := walkie.LoadState(dir)
	if err != nil || st.CostUSD != 0.25 || st.UnknownCosts != 1 {
		t.Fatalf("%+v, %v", st, err)
	}
	recs, err := ReadTurnLog(dir)
	if err != nil || len(recs) != 3 || recs[2].Attempt != 3 || recs[0].Usage.CostUSD != 0.25 {
		t.Fatalf("%+v, %v", recs, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, walkie.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 4 { // init and one line an attempt
		t.Errorf("the log has %d lines, want 4:\n%s", n, b)
	}
}
