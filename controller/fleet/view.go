// Package fleet is the page of walkie serve: every debate on the machine
// in one table, one debate's briefing, entries and turn log, and live
// updates by server-sent events. It reads the records and the side files;
// it changes nothing but through the daemon's control API, and it holds
// no rule about who may see or do what (the daemon's checks stand in
// front of every route).
package fleet

import (
	"cmp"
	"fmt"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// Debate is one debate as the fleet page and /api/debates show it.
type Debate struct {
	Key       string   `json:"key"` // walkie.Key(File): the page's name for it
	File      string   `json:"file"`
	ID        string   `json:"id"`
	Status    string   `json:"status"`
	Reason    string   `json:"reason,omitempty"`
	Turns     int      `json:"turns"`
	Seq       int      `json:"seq"`
	NextTurn  int      `json:"next_turn,omitempty"`
	Next      string   `json:"next,omitempty"` // whose turn it is (open debates)
	Round     int      `json:"round,omitempty"`
	MaxRounds int      `json:"max_rounds,omitempty"`
	CostUSD   float64  `json:"cost_usd"`
	BudgetUSD float64  `json:"budget_usd,omitempty"`
	Running   *Running `json:"running,omitempty"`
	Waiting   string   `json:"waiting,omitempty"` // why no turn is running for an open debate
	Error     string   `json:"error,omitempty"`
	// RunBy is who runs it when it is not the daemon serving the page
	// (walkie auto, pid 4242), from the registry.
	RunBy string `json:"run_by,omitempty"`
	// Controls are what the page offers (the standing's); Approved, that
	// its briefing is approved (the page then folds it).
	Controls walkie.Controls `json:"controls"`
	Approved bool            `json:"briefing_approved"`
	// Elsewhere: outside the daemon's directory, from the machine's
	// registry; the page lists it only when asked to (?all=1).
	Elsewhere bool `json:"elsewhere,omitempty"`
}

// Running is the session of the turn in progress.
type Running struct {
	Agent    string    `json:"agent"`
	Turn     int       `json:"turn"`
	Attempt  int       `json:"attempt"`
	Started  time.Time `json:"started"`
	ElapsedS float64   `json:"elapsed_s"`
	// LastLine is what the session is doing: the controller's output
	// event as it came (the agent's latest line, or a summary of it).
	LastLine string `json:"last_line,omitempty"`
}

// Elapsed is how long the session has run at now, in whole seconds.
func (r *Running) Elapsed(now time.Time) time.Duration {
	return now.Sub(r.Started).Truncate(time.Second)
}

// ReadDebate reads a debate that the daemon does not run from its files:
// its standing, and the activity file of the controller that runs it. reg
// says who ran it last. Nothing is written, not even a lock: a page must
// not slow the controller down.
func ReadDebate(reg walkie.Registered, cfg *config.Config, now time.Time) Debate {
	v := Debate{Key: walkie.Key(reg.File), File: reg.File, ID: reg.ID}
	doc, err := walkie.Load(reg.File)
	if err != nil {
		v.Status, v.Error = "unreadable", err.Error()
		return v
	}
	s, err := controller.ReadStanding(doc, controller.StandingOptions{Config: cfg, Now: now})
	if err != nil {
		v.Status, v.Error = "unreadable", err.Error()
		return v
	}
	if c := s.Controller; c != nil && !c.Remote && c.PID == reg.PID && reg.By != "" {
		c.By = reg.By // the registry names the form that holds it
	}
	Fill(&v, &s)
	if s.Controller != nil {
		v.RunBy = s.Controller.String()
		if s.Running != nil && !s.Running.Interrupted {
			v.Running = ReadRunning(walkie.StateDir(reg.File, doc.Meta.ID), now)
		}
	}
	if v.Status == walkie.StatusOpen && s.Controller == nil && s.Running == nil && s.Action == controller.ActRun && reg.PID > 0 {
		v.Waiting += fmt.Sprintf(" (last run by %s, pid %d)", cmp.Or(reg.By, "a walkie controller"), reg.PID)
	}
	return v
}

// ReadRunning is the first running session of the controller that holds
// the debate whose state directory is dir, from its activity file; nil
// when none runs.
func ReadRunning(dir string, now time.Time) *Running {
	a, err := walkie.ReadActivity(dir)
	if err != nil || a == nil || len(a.Sessions) == 0 {
		return nil
	}
	s := a.Sessions[0]
	return &Running{Agent: s.Agent, Turn: s.Turn, Attempt: s.Attempt, Started: s.Started, LastLine: s.Line,
		ElapsedS: now.Sub(s.Started).Round(100 * time.Millisecond).Seconds()}
}

// Fill sets what the debate's standing says of it: the part of the view
// every reader shows alike. Who runs it and what its session does now are
// the caller's to set.
func Fill(v *Debate, s *controller.Standing) {
	v.ID, v.Status, v.Reason, v.Turns, v.Seq, v.CostUSD, v.BudgetUSD = s.ID, s.Status, s.Reason, s.Turns, s.Seq, s.CostUSD, s.BudgetUSD
	v.NextTurn, v.Next, v.Round, v.MaxRounds, v.Waiting = s.NextTurn, s.Whose, s.Round, s.RoundCap, s.Waiting
	v.Controls, v.Approved = s.Controls, s.Approved
	v.Error = ""
}
