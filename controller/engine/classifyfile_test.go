package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Issue 32 item 21: a reviewer's or a phase's failed attempt keeps what
// the CLI said of it (Result.Said), as a debate turn's does; a
// success and a stopped attempt say nothing more.
func TestClassifyFileKeepsWhatTheCLISaid(t *testing.T) {
	said := `the CLI reported "API Error: 401 invalid x-api-key"`
	// As controller/roundtable names a review's and a phase's file.
	reviewWords := FileWords{Stopped: "review", Written: "verdict recorded", Writer: "reviewer", File: "verdict", Missing: "no verdict file was written"}
	phaseWords := FileWords{Stopped: "phase's file", Written: "file written", Writer: "agent", File: "file", Missing: "no file was written"}
	exited := func(code int) session.Result {
		return session.Result{Ending: session.EndExited, ExitCode: code, EndedBy: session.EndedBySelf}
	}
	bad := errors.New(`invalid verdict: no "verdict" field`)
	for _, c := range []struct {
		name    string
		res     Result
		wrote   bool
		bad     error
		words   FileWords
		outcome walkie.Outcome
		detail  string // the whole detail
	}{
		{"crashed reviewer", Result{Result: exited(1), Said: said}, false, nil, reviewWords, walkie.OutcomeCrashed,
			"exited with code 1 without a valid verdict; " + said},
		{"crashed phase", Result{Result: exited(1), Said: said}, false, nil, phaseWords, walkie.OutcomeCrashed,
			"exited with code 1 without a valid file; " + said},
		{"no verdict file", Result{Result: exited(0), Said: said}, false, nil, reviewWords, walkie.OutcomeNoTurn,
			"no verdict file was written; " + said},
		{"no phase file", Result{Result: exited(0), Said: said}, false, nil, phaseWords, walkie.OutcomeNoTurn,
			"no file was written; " + said},
		{"malformed verdict", Result{Result: exited(0), Said: said}, true, bad, reviewWords, walkie.OutcomeMalformed,
			bad.Error() + "; " + said},
		{"stalled", Result{Result: session.Result{Ending: session.EndStalled, Detail: "no output for 10s"}, Said: said}, false, nil, reviewWords, walkie.OutcomeStalled,
			"no output for 10s; " + said},
		{"nothing said", Result{Result: exited(0)}, false, nil, reviewWords, walkie.OutcomeNoTurn, "no verdict file was written"},
		{"accepted says nothing more", Result{Result: exited(0), Said: said}, true, nil, reviewWords, walkie.OutcomeAccepted, "verdict recorded"},
		{"interrupted says nothing more", Result{Result: exited(0), Said: said, Stop: walkie.OutcomeInterrupted}, false, nil, reviewWords, walkie.OutcomeInterrupted,
			"the controller was interrupted; the review was discarded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, detail := classifyFile(c.res, c.wrote, c.bad, c.words)
			if out != c.outcome || detail != c.detail {
				t.Errorf("got %s (%s)\nwant %s (%s)", out, detail, c.outcome, c.detail)
			}
			if out == walkie.OutcomeAccepted && strings.Contains(detail, said) {
				t.Errorf("an accepted attempt quotes the CLI: %s", detail)
			}
		})
	}
}
