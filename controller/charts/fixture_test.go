package charts

import (
	"flag"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/charts/chartstest"
	"github.com/walkie-sh/walkie/walkie"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The recorded runs are chartstest's, on its fixed clock.
var t0 = chartstest.T0

func at(min, sec int) time.Time { return chartstest.At(min, sec) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func recordedDebate(t *testing.T) (string, *config.Config) { return chartstest.Debate(t, t.TempDir()) }

func recordedRoundTable(t *testing.T) string { return chartstest.RoundTable(t, t.TempDir()) }

func trialsDir(t *testing.T) string { return chartstest.Trials(t, t.TempDir()) }

func setState(t *testing.T, file string, usd float64, status, reason string) {
	chartstest.SetState(t, file, usd, status, reason)
}

func standingOf(t *testing.T, file string, cfg *config.Config, now time.Time) (*walkie.Doc, controller.Standing, []controller.TurnRecord) {
	return chartstest.Standing(t, file, cfg, now)
}
