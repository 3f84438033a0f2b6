package fleet

import (
	"cmp"
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/roundtable"
	"github.com/walkie-sh/walkie/walkie"
)

// Where an entry came from, as the page tags it.
const (
	// SourceAgent: a turn written by an agent session walkie ran (its
	// attempt is in the turn log, or running now).
	SourceAgent = "agent"
	// SourcePerson: a turn posted with walkie post by a party walkie does
	// not run: a person, or a live session of an agent CLI.
	SourcePerson = "person"
	// SourceSupervisor: a supervisor's note.
	SourceSupervisor = "supervisor"
	// SourceController: a note walkie itself recorded as the supervisor
	// (a round table's end); such notes begin "walkie: ".
	SourceController = "controller"
)

// controllerNote starts every supervisor entry the controller writes
// (controller/roundtable's decision notes). Until entries carry a type in
// their marker, this prefix is how the page tells them from a person's.
const controllerNote = "walkie: "

// EntryView is one entry of the record on the page.
type EntryView struct {
	Seq    int
	Turn   int
	Title  string // "Turn 3 · claude" or "Supervisor"
	Agent  string
	Source string
	At     time.Time
	Round  int // the turn's round (0 for supervisor notes)
	Signed bool
	HTML   template.HTML
}

// TurnView is one attempt of the turn log.
type TurnView struct {
	Key        string // the debate's
	Index      int    // the attempt's place in the log, from 0: the transcript's name on the page
	Rec        controller.TurnRecord
	Transcript bool
}

// Page is one debate: the view of the fleet table and everything the
// record and the side files say.
type Page struct {
	Debate   Debate
	Briefing template.HTML
	Entries  []EntryView
	Turns    []TurnView
	Report   *roundtable.Report // round tables only
	Mode     string
	// The pictures (pictures.go): the timeline, and a round table's grid
	// of verdicts and quorum replay once it has decided a round.
	Timeline, Agreement, Quorum template.HTML
	timelineKey                 string // the running attempt the timeline drew
}

// LastID is the stream position the page shows: the last entry's
// sequence number and the number of attempts in the turn log, as the
// event stream's Last-Event-ID carries them.
func (p *Page) LastID() string {
	seq := 0
	if n := len(p.Entries); n > 0 {
		seq = p.Entries[n-1].Seq
	}
	return fmt.Sprintf("%d.%d", seq, len(p.Turns))
}

// bodies caches entries' rendered markdown. A stamped entry never
// changes (the chain would break), so its chain hash names its HTML for
// good. The cache is bounded by bytes; past the bound it starts over.
type bodies struct {
	mu    sync.Mutex
	html  map[string]template.HTML
	bytes int
	max   int
}

func newBodies(max int) *bodies { return &bodies{html: map[string]template.HTML{}, max: max} }

func (b *bodies) render(e *walkie.Entry) template.HTML {
	key := e.Marker.Hash
	b.mu.Lock()
	h, ok := b.html[key]
	b.mu.Unlock()
	if ok {
		return h
	}
	body := e.Body
	if e.SignedBy != "" {
		body, _ = walkie.SplitSignOff(body) // shown as a tag of its own
	}
	h = Render(body)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+len(h) > b.max {
		clear(b.html)
		b.bytes = 0
	}
	b.html[key] = h
	b.bytes += len(h)
	return h
}

// loadPage reads one debate for its page: the record (parsed, not
// verified: the page shows what is there, and the fleet row says when it
// does not verify), the turn log and, for a round table, its rounds; the
// timeline is drawn at now.
func loadPage(row Debate, bs *bodies, now time.Time) (*Page, error) {
	doc, err := walkie.Load(row.File)
	if err != nil {
		return nil, err
	}
	dir := walkie.StateDir(row.File, doc.Meta.ID)
	st, err := walkie.LoadState(dir)
	if err != nil {
		return nil, err
	}
	recs, err := controller.ReadTurnLog(dir)
	if err != nil {
		return nil, err
	}
	p := &Page{Debate: row, Briefing: Render(doc.Briefing), Mode: cmp.Or(doc.Meta.Mode, walkie.ModeDebate)}
	for i, r := range recs {
		p.Turns = append(p.Turns, TurnView{Key: row.Key, Index: i, Rec: r, Transcript: r.Transcript.Text != ""})
	}
	running := 0
	if st.Running != nil {
		running = st.Running.Turn
	}
	posted := controller.Posted(doc, recs, running)
	for i := range doc.Entries {
		e := &doc.Entries[i]
		v := EntryView{Seq: e.Marker.Seq, Turn: e.Turn, Agent: e.Agent, At: e.Marker.At, Signed: e.Signed(), HTML: bs.render(e)}
		switch {
		case e.Kind == walkie.KindSupervisor && strings.HasPrefix(strings.TrimLeft(string(e.Body), "\r\n \t"), controllerNote):
			v.Title, v.Source = "walkie", SourceController
		case e.Kind == walkie.KindSupervisor:
			v.Title, v.Source = "Supervisor", SourceSupervisor
		default:
			v.Title, v.Round, v.Source = fmt.Sprintf("Turn %d · %s", e.Turn, e.Agent), doc.Meta.RoundOf(e.Turn), SourceAgent
			if posted[e.Marker.Seq] {
				v.Source = SourcePerson
			}
		}
		p.Entries = append(p.Entries, v)
	}
	if doc.Meta.IsRoundtable() {
		if p.Report, err = roundtable.BuildReport(doc, roundtable.Head{Status: row.Status, Reason: row.Reason, RoundCap: row.MaxRounds, CostUSD: row.CostUSD}); err != nil {
			return nil, err
		}
	}
	p.pictures(doc, recs, now)
	return p, nil
}

// maxTranscript bounds what the page serves of a transcript: the end of
// it, where an attempt's outcome is.
const maxTranscript = 1 << 20

// openTranscript opens the plain-text transcript of the turn log's
// attempt i, as a plain file of the debate's turns/ and nothing else: the
// log names it, and an agent can write both the log and the file. It
// returns the file and its path; a name outside turns/, a link anywhere
// from the record's directory down, a second name of another file or
// anything but a regular file is an *walkie.InputError.
func openTranscript(file string, i int) (*os.File, string, error) {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return nil, "", err
	}
	dir := walkie.StateDir(file, meta.ID)
	recs, err := controller.ReadTurnLog(dir)
	if err != nil {
		return nil, "", err
	}
	if i < 0 || i >= len(recs) || recs[i].Transcript.Text == "" {
		return nil, "", os.ErrNotExist
	}
	rel := filepath.ToSlash(recs[i].Transcript.Text)
	if !strings.HasPrefix(rel, "turns/") || !filepath.IsLocal(rel) {
		return nil, "", &walkie.InputError{File: filepath.Join(dir, walkie.LogFile),
			Msg: fmt.Sprintf("attempt %d names %s, outside the debate's transcripts", i, recs[i].Transcript.Text)}
	}
	// From the record's directory, which the daemon serves: .walkie and
	// the debate's directory in it are checked like turns/.
	f, err := walkie.OpenSideFile(filepath.Dir(file), path.Join(".walkie", meta.ID, rel))
	return f, filepath.Join(dir, rel), err
}
