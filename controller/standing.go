package controller

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Standing is where a debate stands now: the one picture of it that every
// surface renders (status, show, follow, the end of a run, report, the
// fleet page, the daemon, watch, the review comment, notifications). It
// is made in one place, Stand, from the record, the state, the
// configuration and the clock, through Next; no surface works out a
// status, a round or a cap of its own, so none can disagree with another.
type Standing struct {
	File         string   `json:"file"`
	ID           string   `json:"id"`
	Mode         string   `json:"mode,omitempty"`
	Status       string   `json:"status"`
	Reason       string   `json:"reason,omitempty"` // why it ended or stopped: the state's reason, or Next's
	Participants []string `json:"participants"`
	Turns        int      `json:"turns"`
	Seq          int      `json:"seq"`
	// NextTurn and Whose are the next turn and its party, for an open
	// debate only.
	NextTurn int    `json:"next_turn,omitempty"`
	Whose    string `json:"whose_turn,omitempty"`
	// Round is the next turn's round while the debate is open, else the
	// round it ended in. RoundCap is the cap with its extensions; for a
	// debate that has ended, the cap it held then (walkie.CapHeld).
	Round    int      `json:"round"`
	RoundCap int      `json:"round_cap"`
	Signed   []string `json:"signed"`
	Approved bool     `json:"briefing_approved"`
	// The cost so far; UnknownCosts attempts of unknown cost, counted as
	// UnknownUSD against BudgetUSD (0: no budget).
	CostUSD      float64 `json:"cost_usd"`
	UnknownCosts int     `json:"unknown_costs,omitempty"`
	UnknownUSD   float64 `json:"unknown_cost_estimate_usd,omitempty"`
	BudgetUSD    float64 `json:"budget_usd,omitempty"`
	// Controls are what a person can do to it now (walkie.ControlsOf;
	// Halt only while it is open as Next sees it): the page offers these
	// and no others.
	Controls walkie.Controls `json:"controls"`
	// Action is what Next decides now; Waiting says, for an open debate
	// with no session running, why none is and what would move it.
	Action  Action `json:"next_action"`
	Waiting string `json:"waiting,omitempty"`
	// Controller is the process that runs the debate now (it holds the
	// run lock, or a remote engine's home runs it); nil when none does.
	Controller *Runner `json:"controller,omitempty"`
	// Running is the attempt the state names as begun and not recorded:
	// in progress, or interrupted when no controller lives to finish it.
	Running   *RunningAttempt    `json:"running,omitempty"`
	LastEntry *walkie.EntryBrief `json:"last_entry,omitempty"`

	// Decision is Next's, for callers that act on it.
	Decision Decision `json:"-"`
}

// Runner is who runs a debate.
type Runner struct {
	PID int    `json:"pid,omitempty"`
	By  string `json:"by"` // "walkie auto", "walkie serve --engine temporal", …
	// Remote: a remote engine's home runs it (walkie serve --engine
	// temporal); its turns run on workers with no lock held here. Down:
	// that home is a process of this machine that is not running now; a
	// turn on a worker goes on, and the home settles it when it is back.
	Remote bool `json:"remote,omitempty"`
	Down   bool `json:"down,omitempty"`
}

// String is "walkie auto, pid 4242".
func (r *Runner) String() string {
	s := r.By
	if r.PID > 0 {
		s = fmt.Sprintf("%s, pid %d", r.By, r.PID)
	}
	if r.Down {
		s += ", not running now: start it again to go on"
	}
	return s
}

// RunningAttempt is an attempt begun and not yet recorded.
type RunningAttempt struct {
	Turn          int       `json:"turn"`
	Agent         string    `json:"agent"`
	Attempt       int       `json:"attempt"`
	Started       time.Time `json:"started"`
	ControllerPID int       `json:"controller_pid,omitempty"`
	// Interrupted: the controller that began it is gone (it was killed,
	// or the machine stopped); the next walkie auto, turn, watch or serve
	// finishes it as interrupted and goes on.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Live is what Stand is told of the processes around a debate, beside its
// files: who holds it, and what the state's running attempt is.
type Live struct {
	// Held: a controller holds the debate's run lock; Holder is its pid
	// (0 unknown) and HolderBy what it is, when known.
	Held     bool
	Holder   int
	HolderBy string
	// Home is the remote engine's mark (nil: none; see HomeFile);
	// HomeDown, that its home is a process of this machine that is gone.
	Home     *HomeMark
	HomeDown bool
}

// Stand is where the debate in l stands, with live telling who runs it.
// It is pure: the same look gives the same standing.
func Stand(l Look, live Live) Standing {
	l.Held = live.Held
	dec := Next(l)
	d, st := l.Doc, l.State
	m := d.Meta
	if l.MaxRounds > 0 {
		m.MaxRounds = l.MaxRounds
	}
	p := d.Progress()
	s := Standing{File: d.File, ID: m.ID, Mode: m.Mode, Status: dec.Status, Reason: st.Reason,
		Participants: m.Participants, Turns: p.Turns, Seq: p.Seq, Signed: p.Signed, Approved: m.BriefingSHA256 != "",
		CostUSD: st.CostUSD, UnknownCosts: st.UnknownCosts, BudgetUSD: dec.Budget, Action: dec.Action, Decision: dec}
	if s.Signed == nil {
		s.Signed = []string{}
	}
	s.UnknownUSD = dec.UnknownUSD
	if n := len(d.Entries); n > 0 {
		s.LastEntry = d.Entries[n-1].Brief()
	}
	// The status Next decided (a spent budget it has not yet written)
	// is the one the cap is read against.
	held := *st
	if dec.Record {
		held.Status = dec.Status
	}
	s.RoundCap = walkie.CapHeld(&m, p, &held)
	// From the state as it is (a resume acts on it), with a halt offered
	// only while Next would run the debate on.
	s.Controls = walkie.ControlsOf(&m, p, st)
	s.Controls.Halt = s.Controls.Halt && dec.Status == walkie.StatusOpen
	switch {
	case s.Status == walkie.StatusOpen:
		s.NextTurn, s.Whose, s.Round = p.NextTurn, p.NextAgent, min(p.NextRound, s.RoundCap)
	case p.Turns > 0:
		s.Round = m.RoundOf(p.Turns)
	default:
		s.Round = 1
	}
	switch {
	case s.Status == walkie.StatusClosed:
		s.Reason = d.ClosedWhy() // a review thread: who closed it, with what
	case dec.Action == ActEnd && (s.Reason == "" || dec.Record):
		s.Reason = dec.Why
	}
	s.Controller = runner(live)
	s.Running = running(st, s.Controller)
	s.Waiting = waiting(s, dec)
	return s
}

// runner is who runs the debate, from what live says.
func runner(live Live) *Runner {
	switch {
	case live.Held:
		return &Runner{PID: live.Holder, By: cmp.Or(live.HolderBy, "a walkie controller")}
	case live.Home != nil:
		return &Runner{PID: live.Home.PID, By: "walkie serve --engine " + live.Home.Engine, Remote: true, Down: live.HomeDown}
	}
	return nil
}

// running is the state's attempt in progress, interrupted when nobody
// runs the debate.
func running(st *walkie.State, by *Runner) *RunningAttempt {
	a := st.Running
	if a == nil {
		return nil
	}
	return &RunningAttempt{Turn: a.Turn, Agent: a.Agent, Attempt: a.Number, Started: a.Started,
		ControllerPID: a.ControllerPID, Interrupted: by == nil}
}

// waiting says why an open debate runs no session now.
func waiting(s Standing, dec Decision) string {
	switch {
	case s.Status != walkie.StatusOpen && !dec.Record:
		return ""
	case s.Running != nil && s.Running.Interrupted:
		who := "its controller"
		if pid := s.Running.ControllerPID; pid > 0 {
			who = fmt.Sprintf("its controller (pid %d)", pid)
		}
		return fmt.Sprintf("turn %d by %s was interrupted: %s is gone; walkie auto %s finishes it and goes on", s.Running.Turn, s.Running.Agent, who, s.File)
	case s.Running != nil:
		return ""
	case s.Controller != nil && (dec.Action == ActHeld || dec.Action == ActRun):
		return "run by " + s.Controller.String() + "; between sessions"
	case dec.Action == ActRun:
		return fmt.Sprintf("no controller runs it now; %s: walkie auto %s goes on", dec.Why, s.File)
	}
	return dec.Why
}

// StandingOptions say what ReadStanding reads besides the debate's own
// files.
type StandingOptions struct {
	Config *config.Config // nil: the built-in presets
	Now    time.Time      // zero: time.Now
	// Registry is the machine's registry of debates (walkie.DefaultRegistry),
	// which names the form of the controller that holds one; "" leaves
	// it "a walkie controller".
	Registry string
	// Cast, MaxRounds, Debounce and LastMove are as in Look.
	Cast      map[string]string
	MaxRounds int
	Debounce  bool
	LastMove  time.Time
}

// ReadStanding is where the debate d stands, from its state and the
// processes that hold it. Nothing is written, not even a lock: a reader
// must not slow the controller down.
func ReadStanding(d *walkie.Doc, o StandingOptions) (Standing, error) {
	dir := walkie.StateDir(d.File, d.Meta.ID)
	st, err := walkie.LoadState(dir)
	if err != nil {
		return Standing{}, err
	}
	live := Live{Held: walkie.ControllerRunning(dir)}
	if !live.Held && st.Running != nil {
		// The controller may have recorded its attempt and let go
		// between the two looks: only an attempt still there once the
		// lock is free is one nobody runs.
		if st, err = walkie.LoadState(dir); err != nil {
			return Standing{}, err
		}
		live.Held = walkie.ControllerRunning(dir)
	}
	if live.Held {
		live.Holder = walkie.Holder(filepath.Join(dir, "run.lock"))
		live.HolderBy = registeredBy(o.Registry, d.File, live.Holder)
	} else if live.Home, err = ReadHomeMark(dir); err != nil {
		return Standing{}, err
	} else if live.Home != nil {
		host, _ := os.Hostname()
		live.HomeDown = live.Home.Host == host && live.Home.PID > 0 && !walkie.ProcessAlive(live.Home.PID)
	}
	cfg := o.Config
	if cfg == nil {
		cfg = config.Default()
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	return Stand(Look{Doc: d, State: st, Config: cfg, Cast: o.Cast, MaxRounds: o.MaxRounds, Now: now,
		Debounce: o.Debounce, LastMove: o.LastMove}, live), nil
}

// registeredBy is the form the registry names for the controller pid that
// runs file, or "".
func registeredBy(registry, file string, pid int) string {
	if registry == "" || pid <= 0 {
		return ""
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	r, ok := walkie.ReadRegistered(registry, file)
	if !ok || r.PID != pid || r.By == "" {
		return ""
	}
	return r.By
}

// LoadReport is `walkie report`'s reading of the debate at file: its
// standing, with the turn log and, for a round table, its round results.
func LoadReport(file string, o StandingOptions) (*roundtable.Report, Standing, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return nil, Standing{}, err
	}
	s, err := ReadStanding(d, o)
	if err != nil {
		return nil, s, err
	}
	r, err := roundtable.BuildReport(d, s.ReportHead())
	return r, s, err
}

// ReportHead is the part of a report the standing says.
func (s *Standing) ReportHead() roundtable.Head {
	return roundtable.Head{Status: s.Status, Reason: s.Reason, RoundCap: s.RoundCap, CostUSD: s.CostUSD}
}

// standing is where this run's debate stands, read again from its files.
func (c *controller) standing() (Standing, error) {
	d, _, err := c.load()
	if err != nil {
		return Standing{}, err
	}
	return ReadStanding(d, StandingOptions{Config: c.opts.Config, Registry: c.opts.Registry, Cast: c.opts.Cast, MaxRounds: c.opts.MaxRounds})
}
