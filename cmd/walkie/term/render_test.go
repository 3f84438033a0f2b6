package term

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/show")

// golden compares got with testdata/show/NAME, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "show", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		diff, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
			FromFile: path, ToFile: "got", Context: 2})
		t.Errorf("%s differs (go test -run %s -update rewrites it):\n%s", path, t.Name(), diff)
	}
}

// fixture loads a recorded debate from testdata/show, in a directory of
// its own so that no state is found beside it.
func fixture(t *testing.T, name string) *walkie.Doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "show", name))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := walkie.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Verify(); err != nil {
		t.Fatalf("the fixture does not verify: %v", err)
	}
	return d
}

// view is where the fixture's debate stands.
func view(t *testing.T, d *walkie.Doc) *controller.Standing {
	t.Helper()
	s, err := controller.ReadStanding(d, controller.StandingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func plainRenderer() *Renderer { return NewRenderer(Palette{}, 80, time.UTC) }

func TestShowGolden(t *testing.T) {
	for _, name := range []string{"converged", "max-rounds", "closed"} {
		t.Run(name, func(t *testing.T) {
			d := fixture(t, name+".walkie.md")
			var out bytes.Buffer
			plainRenderer().Record(&out, view(t, d), d)
			got := out.String()
			// What a reader must not see, and must.
			for _, bad := range []string{"<!-- walkie", "Signed-off-by:", "briefing_sha256:", "\x1b["} {
				if strings.Contains(got, bad) {
					t.Errorf("the rendered record shows %q", bad)
				}
			}
			// A typed entry's trailer lines are told on its rule line, not
			// run together in its text.
			_, entries, _ := strings.Cut(got, "── Turn 1 ")
			for _, bad := range []string{"Type:", "Verdict:", "Refs:"} {
				if strings.Contains(entries, bad) {
					t.Errorf("the rendered entries show %q", bad)
				}
			}
			golden(t, name+".show.golden", out.Bytes())
		})
	}
}

// With colour, the same record carries SGR sequences and still hides
// the markers.
func TestShowInColour(t *testing.T) {
	d := fixture(t, "converged.walkie.md")
	r := NewRenderer(Palette{On: true}, 80, time.UTC)
	var out bytes.Buffer
	r.Record(&out, view(t, d), d)
	if !strings.Contains(out.String(), "\x1b[") || strings.Contains(out.String(), "<!-- walkie") {
		t.Errorf("colour output:\n%q", out.String())
	}
}

func TestEndOfRunGolden(t *testing.T) {
	cost := func(usd float64, src string) *controller.Usage {
		return &controller.Usage{CostUSD: usd, CostSource: src}
	}
	tests := []struct {
		name, fixture string
		sum           controller.Summary
	}{
		{"converged", "converged.walkie.md", controller.Summary{Standing: controller.Standing{Status: walkie.StatusConverged, Turns: 4, CostUSD: 0.0412},
			Attempts: []controller.TurnRecord{{Usage: cost(0.0412, "reported")}}}},
		{"max-rounds", "max-rounds.walkie.md", controller.Summary{Standing: controller.Standing{Status: walkie.StatusMaxRounds, Reason: "the round cap of 1 was reached", Turns: 3, CostUSD: 0.0137},
			Attempts: []controller.TurnRecord{{Usage: cost(0.0137, "estimated (pricing as of 2026-11-01)")}, {Usage: &controller.Usage{CostSource: "unknown"}}, {}}}},
		{"closed", "closed.walkie.md", controller.Summary{Standing: controller.Standing{Status: walkie.StatusClosed, Reason: "by claude in turn 5: Merged as 8d41e07.", Turns: 5}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := fixture(t, tt.fixture)
			var out bytes.Buffer
			End(&out, plainRenderer(), tt.fixture, "/home/me/api/"+tt.fixture, d, tt.sum)
			golden(t, tt.name+".end.golden", out.Bytes())
		})
	}
}
