package walkie

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// InitOptions describe a new debate.
type InitOptions struct {
	ID           string
	Participants []string
	MaxRounds    int
	Briefing     []byte // text under `# Briefing`; empty gives a placeholder
	Mode         string
	// Round-table keys (Mode "roundtable"); Participants is then derived.
	Implementer string
	Reviewers   []string
	Quorum      int
	Grader      Command
	Workspace   string  // a round table's workspace; for a debate, "worktree" (format 3)
	Phases      []Phase // run before the first round; the file is then format 2
	// NoCopy starts the debate with the supervisor's copy of every entry
	// off; by default a new debate has it on (State.CopySupervisor), since
	// supervision is cheap to remove and expensive to retrofit.
	NoCopy bool
	// Typed asks for entry types and refs, which every file of format 4,
	// the one Init writes, has; it is kept for walkie init --typed.
	Typed bool
	Repo  string // the git repository refs name, relative to the file
	Git   string // "commit": every entry a commit of the record
	Base  string // where worktrees start before the record cites a commit
	// Test is the thread's test command and TestPassed the pattern of a
	// passing test's line of its output (test:, test_passed:).
	Test       Command
	TestPassed string
	// Approve pins the briefing at once (the person creating the file
	// wrote it, or took walkie's).
	Approve bool
	// People are the participants who are persons (people:), and
	// Supervisor the person who supervises (supervisor:).
	People     []string
	Supervisor string
	// Check, when set, is asked about the front matter once it is valid
	// and before anything is written (walkie init's check that every
	// participant is an agent or a person).
	Check func(m *Meta) error
}

// Init creates a new walkie file; it never overwrites one, nor takes over
// the state directory of another debate with the same id.
func Init(file string, o InitOptions) error {
	idFromName := o.ID == ""
	if idFromName {
		o.ID = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".md"), ".walkie")
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = 6
	}
	// Every new file gets the compact markers of format 4, which also
	// holds everything of formats 2 and 3 (phases, typed entries).
	m := Meta{Walkie: FormatCompact, ID: o.ID, Mode: o.Mode, Participants: o.Participants, People: o.People, Supervisor: o.Supervisor, MaxRounds: o.MaxRounds,
		Implementer: o.Implementer, Reviewers: o.Reviewers, Quorum: o.Quorum, Grader: o.Grader, Workspace: o.Workspace, Phases: o.Phases}
	m.Repo, m.Git, m.Base, m.Test, m.TestPassed = o.Repo, o.Git, o.Base, o.Test, o.TestPassed
	if o.Approve {
		brief := BriefingText(o.Briefing)
		if len(brief) > 0 {
			m.BriefingSHA256 = BriefingHash(brief)
		}
	}
	if err := m.validate(file, 0, nil); err != nil {
		var ie *InputError
		if errors.As(err, &ie) {
			ie.Line = 0
			if idFromName && !idPattern.MatchString(o.ID) {
				ie.Msg = fmt.Sprintf("the id taken from the file name, %q, is not a simple name", o.ID)
				ie.Fix = "pass --id NAME (letters, digits, '.', '_' or '-'), or rename the file"
			}
		}
		return err
	}
	if o.Check != nil {
		if err := o.Check(&m); err != nil {
			return err
		}
	}
	return create(file, m, o.Briefing, !o.NoCopy)
}

// InitCopy creates a new walkie file from a whole front matter and a
// briefing: a copy of another debate (walkie trials) with the id and the
// paths the caller changed, and no entries. A pinned briefing stays pinned
// when the text is the same.
func InitCopy(file string, m Meta, briefing []byte) error {
	if err := m.validate(file, 0, nil); err != nil {
		return err
	}
	return create(file, m, briefing, true)
}

// create writes a new file of m and briefing, refusing one that exists or
// an id whose state directory another debate holds; copy is whether the
// supervisor gets a copy of every entry.
func create(file string, m Meta, briefing []byte, copyOn bool) error {
	brief := BriefingText(briefing)
	if len(brief) == 0 {
		brief = []byte("(Write the briefing here: `walkie brief draft FILE` gives a template.)\n")
	}
	if err := checkBriefingText(file, brief); err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(renderMeta(m))
	b.WriteString(briefingHeading + "\n\n")
	b.Write(brief)
	d, err := Parse(file, b.Bytes())
	if err != nil {
		return err
	}
	dir := StateDir(file, m.ID)
	// The file first: its own debate's state is beside it.
	if _, err := os.Lstat(file); err == nil {
		return &InputError{File: file, Msg: "already exists", Fix: "choose another file name, or remove it first"}
	}
	if _, err := os.Lstat(filepath.Join(dir, LogFile)); err == nil || hasLegacy(dir) {
		return &InputError{File: file, Msg: fmt.Sprintf("%s already holds the state of a debate with id %q", dir, m.ID),
			Fix: "choose another --id; or, if that debate's file is gone for good, remove " + dir}
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return &InputError{File: file, Msg: "already exists", Fix: "choose another file name, or remove it first"}
		}
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The lock file is made now, so that later readers and refused posts
	// leave the state directory exactly as they found it.
	lock, err := LockRecord(dir)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	st := &State{CopySupervisor: &copyOn}
	l := OpenLog(dir)
	defer l.Close()
	if _, err := l.Save(OpInit, st, nil); err != nil {
		return err
	}
	return Ring(dir, &m, d.Progress(), st, nil)
}

// UpdateState changes a debate's control state under the record lock, as
// one line of the log named op (OpHalt, OpExtend, …), and rings the
// doorbell, so a running controller or daemon sees it at once.
func UpdateState(file, op string, change func(m *Meta, p Progress, s *State) error) (*State, Progress, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return nil, Progress{}, err
	}
	return ChangeState(file, StateDir(file, meta.ID), StateChange{Op: op}, func(d *Doc, _ []byte, s *State) error {
		return change(&d.Meta, d.Progress(), s)
	})
}

// StateChange says what ChangeState logs, how it reads the record and
// when it rings.
type StateChange struct {
	// Op names the change in the log (OpBegun, OpHalt, …); "" is OpState.
	Op string
	// Attempt, when set, is the record of an attempt that ended (the
	// controller's turn record), logged in the same line as the change,
	// so the attempt's record and its effect on the state are durable
	// together or not at all.
	Attempt any
	// Settled, when set, is the record as Settle or Discard left it: the
	// line records it as the record walkie last wrote (last_seq,
	// last_hash), and what ends with the debate is settled against the
	// status it had before the attempt (Settled.Before).
	Settled *Settled
	// Log is the caller's open log (a controller keeps one for its run,
	// which then reads only what was appended since); nil opens one.
	Log *Log
	// Load reads and parses the record under the lock; nil is Load. A
	// controller hands its own, which keeps the last parse.
	Load func() (*Doc, []byte, error)
	// OnlyStatus rings the doorbell only when the debate's status
	// changed. The doorbell shows whose turn it is and the status; a
	// controller's own bookkeeping (the running attempt, retry counts,
	// cost) is not on it, and each ring is two writes in the time between
	// one agent's exit and the next one's start.
	OnlyStatus bool
}

// ChangeState is the one way a debate's state is changed outside an
// append: under the record lock, the record read under it, the change
// applied, what ends with the debate settled (State.Settle), the fields
// it changed appended to the log as one synced line (nothing when none
// did and no attempt is logged) and the doorbell rung. dir is the
// debate's state directory.
func ChangeState(file, dir string, o StateChange, change func(d *Doc, raw []byte, s *State) error) (*State, Progress, error) {
	lock, err := LockRecord(dir)
	if err != nil {
		return nil, Progress{}, fmt.Errorf("lock %s: %w", file, err)
	}
	defer lock.Unlock()
	load := o.Load
	if load == nil {
		load = func() (*Doc, []byte, error) {
			d, err := Load(file)
			return d, nil, err
		}
	}
	d, raw, err := load()
	if err != nil {
		return nil, Progress{}, err
	}
	l := o.Log
	if l == nil {
		l = OpenLog(dir)
		defer l.Close()
	}
	st, err := l.State()
	if err != nil {
		return nil, Progress{}, err
	}
	p := d.Progress()
	before := DebateStatus(&d.Meta, p, st)
	if s := o.Settled; s != nil {
		before = s.Before
		st.LastSeq, st.LastHash = s.Progress.Seq, s.Progress.Hash
	}
	if err := change(d, raw, st); err != nil {
		return nil, p, err
	}
	st.Settle(&d.Meta, p, before)
	if _, err := l.Save(cmp.Or(o.Op, OpState), st, o.Attempt); err != nil {
		return nil, p, err
	}
	if o.OnlyStatus && DebateStatus(&d.Meta, p, st) == before {
		return st, p, nil
	}
	var last *EntryBrief
	if n := len(d.Entries); n > 0 {
		last = d.Entries[n-1].Brief()
	}
	return st, p, Ring(dir, &d.Meta, p, st, last)
}

// Brief names an entry without its text.
func (e *Entry) Brief() *EntryBrief {
	b := &EntryBrief{Seq: e.Marker.Seq, Turn: e.Marker.Turn, Agent: e.Agent, Signed: e.Signed(), At: e.Marker.At}
	b.setTags(e.Marker.Tags)
	return b
}

// Controls are what a person's controls (walkie halt, resume and extend,
// the fleet page's buttons) can do to a debate as it stands: each is true
// when the command would change its course. What Halt, Resume and Extend
// refuse is false here, from the same rules; a halt of a debate that runs
// no turn anyway (halted, failed, at its cap) is taken, and only changes
// the reason, so it is not offered.
type Controls struct {
	Halt   bool `json:"halt"`   // it may run another turn
	Resume bool `json:"resume"` // halted, failed, over budget or deadlocked
	Extend bool `json:"extend"` // not converged, not closed
}

// ControlsOf is what the controls can do to a debate: m, p and s are its
// front matter, progress and state.
func ControlsOf(m *Meta, p Progress, s *State) Controls {
	return Controls{
		Halt:   stopRefusal(p) == "" && DebateStatus(m, p, s) == StatusOpen,
		Resume: resumeRefusal(s) == "",
		Extend: stopRefusal(p) == "",
	}
}

// stopRefusal is why a debate takes no halt and no extension ("" when it
// does): it has ended for good.
func stopRefusal(p Progress) string {
	switch {
	case p.Converged:
		return "the debate has already converged"
	case p.Closed:
		return "the thread is closed"
	}
	return ""
}

// resumeRefusal is why Resume refuses ("" when it does not).
func resumeRefusal(s *State) string {
	if s.Status == "" {
		return "the debate is not halted, failed, over budget or deadlocked"
	}
	return ""
}

// Halt stops a debate: no further turns until Resume.
func Halt(file, reason string) error {
	_, _, err := UpdateState(file, OpHalt, func(m *Meta, p Progress, s *State) error {
		if why := stopRefusal(p); why != "" {
			return &RefusedError{Op: "halt", Reason: why}
		}
		now := time.Now().UTC()
		s.Status, s.Reason, s.HaltedAt = StatusHalted, reason, &now
		return nil
	})
	return err
}

// Resume lifts a halt, or reopens a debate that failed, ran over budget or
// deadlocked, clearing its retry counters.
func Resume(file string) error {
	_, _, err := UpdateState(file, OpResume, func(m *Meta, p Progress, s *State) error {
		if why := resumeRefusal(s); why != "" {
			return &RefusedError{Op: "resume", Reason: why}
		}
		s.Status, s.Reason, s.HaltedAt, s.Attempts = "", "", nil, nil
		return nil
	})
	return err
}

// Extend raises this debate's round cap by rounds (recorded in its state,
// never in the record). A debate already past its cap gets rounds more
// from where it stands (its extension ended with it).
func Extend(file string, rounds int) (int, error) {
	if rounds < 1 {
		return 0, &InputError{File: file, Msg: fmt.Sprintf("--rounds %d: must be at least 1", rounds), Fix: "give the number of rounds to add, e.g. --rounds 2"}
	}
	var newCap int
	_, _, err := UpdateState(file, OpExtend, func(m *Meta, p Progress, s *State) error {
		if why := stopRefusal(p); why != "" {
			return &RefusedError{Op: "extend", Reason: why}
		}
		if p.NextRound > RoundCap(m, s) {
			s.ExtraRounds = p.NextRound - 1 - m.MaxRounds
		}
		s.ExtraRounds += rounds
		newCap = RoundCap(m, s)
		return nil
	})
	return newCap, err
}

// Repair moves a torn tail (bytes after the last stamped entry) to a side
// file under .walkie/ID/ and cuts it from the record. It does nothing to
// a record whose tail is blank.
func Repair(file string) (string, error) {
	meta, err := ReadMeta(file)
	if err != nil {
		return "", err
	}
	dir := StateDir(file, meta.ID)
	lock, err := LockRecord(dir)
	if err != nil {
		return "", err
	}
	defer lock.Unlock()
	if ControllerRunning(dir) {
		return "", &RefusedError{Op: "repair", Reason: "a controller is running this debate; its agent may be writing the tail now"}
	}
	d, err := Load(file)
	if err != nil {
		return "", err
	}
	if isBlank(d.Tail) {
		return "", nil
	}
	side, err := saveTorn(dir, d.Tail)
	if err != nil {
		return "", fmt.Errorf("save torn bytes: %w", err)
	}
	f, err := openRecord(file, os.O_WRONLY)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(d.TailOffset); err != nil {
		return "", fmt.Errorf("cut torn tail of %s: %w", file, err)
	}
	return side, f.Sync()
}

// saveTorn writes torn bytes to a new side file, never over an earlier one.
func saveTorn(dir string, tail []byte) (string, error) { return saveAside(dir, "torn", ".txt", tail) }

// saveAside writes data to a new, synced side file named prefix, the time
// and ext, never over an earlier one.
func saveAside(dir, prefix, ext string, data []byte) (string, error) {
	stamp := time.Now().UTC().Format("20060102T150405.000")
	for n := 1; ; n++ {
		side := filepath.Join(dir, fmt.Sprintf("%s-%s%s", prefix, stamp, ext))
		if n > 1 {
			side = filepath.Join(dir, fmt.Sprintf("%s-%s-%d%s", prefix, stamp, n, ext))
		}
		f, err := os.OpenFile(side, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		return side, syncDir(dir)
	}
}
