package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func followCommand(f *Factory, runF func(context.Context, *followOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "follow",
		Usage:     "follow a debate from another terminal: each entry as it lands, what the agent is doing, the end",
		ArgsUsage: "FILE",
		Description: `Shows the debate in FILE as it goes, whichever controller runs it (walkie auto
or turn in another terminal, walkie serve, walkie watch from cron): the
record so far, then each entry rendered as it is recorded, a live line per
running session (a round table's reviewers each have their own) with what
the agent is doing, and at the end the outcome, the agreed proposal or where
each party stands, the cost and where the record is. It never writes.

It wakes on the debate's doorbell (.walkie/ID/signal.json), its state and
what its sessions are doing (.walkie/ID/activity.json, written by whichever
controller runs it: auto, turn, serve or watch); nothing polls. A debate nobody is running yet is waited for. Off a terminal
it prints plain lines. It exits when the debate ends, with walkie auto's
exit code for that ending, or 130 on Ctrl-C.

EXAMPLES:
   walkie follow api.walkie.md
   walkie follow api.walkie.md --last 2      # the last two entries, then new ones`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "last", Value: -1, Usage: "show only the last N entries already recorded (default: all, with the briefing)"},
			standingConfigFlag(),
		},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, followRun, &followOptions{IO: f.IO, File: file, Last: c.Int("last"), Stand: f.Standing(c.String("config"))})
		},
	}
}

// followOptions are walkie follow's.
type followOptions struct {
	IO    *IOStreams
	File  string
	Last  int // show only the last N entries already recorded; negative: all
	Stand standingReader
}

// follower is one `walkie follow`: what it has shown so far.
type follower struct {
	stand   standingReader
	file    string
	dir     string
	out     io.Writer
	r       *term.Renderer
	disp    *term.Display // nil off a terminal
	shown   int           // the last sequence number printed
	started map[string]bool
}

func followRun(ctx context.Context, o *followOptions) error {
	file := o.File
	d, err := walkie.Load(file)
	if err != nil {
		return err
	}
	w := o.IO.Out
	pal := o.IO.OutPalette()
	r := term.NewRenderer(pal, o.IO.OutWidth(), time.Local)
	f := &follower{stand: o.Stand, file: file, dir: walkie.StateDir(file, d.Meta.ID), out: w, r: r, started: map[string]bool{}}
	// Watch before the first look, so that nothing recorded between the
	// two goes unseen.
	watcher, err := watchDebate(f.dir)
	if err != nil {
		return err
	}
	defer watcher.Close()
	if o.IO.IsStdoutTTY() {
		f.disp = term.NewDisplay(w, pal)
		defer f.disp.Stop()
	}
	at, err := f.stand.of(d)
	if err != nil {
		return err
	}
	f.print(r.Header(&at, d))
	if n := o.Last; n >= 0 && n < len(d.Entries) {
		f.shown = d.Entries[len(d.Entries)-n-1].Marker.Seq
		f.print(r.Palette().Dim(fmt.Sprintf("(%s before these: walkie show %s)", walkie.Count(len(d.Entries)-n, "entry", "entries"), file)))
	} else {
		f.print("\n" + r.Briefing(d))
	}
	ctx, stop := interruptible(ctx, o.IO.ErrOut)
	defer stop()
	for {
		d, sum, ended, err := f.look()
		if err != nil {
			return err
		}
		if ended {
			if f.disp != nil {
				f.disp.Stop()
			}
			fmt.Fprintln(w)
			term.End(w, r, file, term.Where(file), d, sum)
			return runResult(sum, false)
		}
		select {
		case <-ctx.Done():
			return withCode(exitSignal, errors.New("stopped following; the debate goes on"))
		case err := <-watcher.Errors:
			return fmt.Errorf("watch %s: %w", f.dir, err)
		case <-watcher.Events:
			// Whatever changed, look at the whole again: a missed or
			// merged event then changes nothing.
		}
	}
}

// watchDebate watches a debate's state directory, where the doorbell, the
// state and the live view change.
func watchDebate(dir string) (*fsnotify.Watcher, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	return w, nil
}

func (f *follower) print(text string) {
	if f.disp != nil {
		f.disp.Print(text)
		return
	}
	fmt.Fprint(f.out, text)
	if len(text) > 0 && text[len(text)-1] != '\n' {
		fmt.Fprintln(f.out)
	}
}

// look prints what is new: entries recorded since the last look, the
// sessions running now, and whether the debate has ended; d is the
// record as it read it, which the end's summary shows.
func (f *follower) look() (d *walkie.Doc, sum controller.Summary, ended bool, err error) {
	d, err = walkie.Load(f.file)
	if err != nil {
		return nil, sum, false, err
	}
	for i := range d.Entries {
		if e := &d.Entries[i]; e.Marker.Seq > f.shown {
			f.print("\n" + f.r.Entry(d, e))
			f.shown = e.Marker.Seq
		}
	}
	at, err := f.stand.of(d)
	if err != nil {
		return nil, sum, false, err
	}
	running := f.running(d, &at)
	sum = controller.Summary{Standing: at}
	if at.Status != walkie.StatusOpen && len(running) == 0 {
		return d, sum, true, nil
	}
	idle := ""
	switch {
	case at.Running != nil && at.Running.Interrupted:
		idle = at.Waiting // nothing runs it: say so, and what goes on
	case at.Whose != "":
		idle = fmt.Sprintf("waiting for turn %d · %s", at.NextTurn, at.Whose)
	}
	if f.disp != nil {
		f.disp.Follow(running, idle)
		return d, sum, false, nil
	}
	for _, s := range running {
		key := fmt.Sprintf("%d/%s/%d", s.Turn, s.Agent, s.Attempt)
		if !f.started[key] {
			f.started[key] = true
			fmt.Fprintln(f.out, term.StartedLine(controller.Event{Turn: s.Turn, Round: s.Round, Agent: s.Agent, Attempt: s.Attempt}, f.r.Palette())+" started")
		}
	}
	return d, sum, false, nil
}

// running is what runs now: the activity.json of the controller that runs
// the debate (any form: auto, turn, serve, watch), or else the attempt
// its standing names as running, without its activity. An interrupted
// attempt runs nowhere.
func (f *follower) running(d *walkie.Doc, at *controller.Standing) []walkie.SessionActivity {
	if a, err := walkie.ReadActivity(f.dir); err == nil && a != nil {
		return a.Sessions
	}
	if a := at.Running; a != nil && !a.Interrupted {
		round := 0
		if len(d.Meta.Participants) > 0 {
			round = d.Meta.RoundOf(a.Turn)
		}
		return []walkie.SessionActivity{{Turn: a.Turn, Round: round, Agent: a.Agent, Attempt: a.Attempt, Started: a.Started}}
	}
	return nil
}
