package fleet

import (
	"bytes"
	"cmp"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// Options configure the page.
type Options struct {
	// Debates lists every debate the page shows, sorted by file: the
	// daemon's own and those the registry names.
	Debates func() []Debate
	// Summary is the line under the title (the directory served, the
	// sessions running).
	Summary func() string
	// CSRF is the token the page's script sends with every change.
	CSRF string
	// TokenSet: the daemon has a token, so the page offers to log out.
	TokenSet bool
	// MaxStreams bounds the event streams open at once; past it a stream
	// is refused with 503 and the page tries again. Default
	// DefaultMaxStreams.
	MaxStreams int
	Log        *zap.Logger
	Now        func() time.Time // default time.Now
}

// DefaultMaxStreams is how many pages may follow the daemon at once.
const DefaultMaxStreams = 64

// Server serves the page. Run must run for the streams to move.
type Server struct {
	o      Options
	pages  map[string]*template.Template
	bodies *bodies

	kick chan struct{} // buffered 1: Changed
	done chan struct{} // closed when Run returns

	gen       atomic.Uint64 // publishes so far
	refreshMu sync.Mutex    // one refresh of a followed debate at a time

	mu      sync.Mutex
	snap    *snapshot
	lives   map[string]*live // debates a stream follows, by key
	changed chan struct{}    // closed at the next publish
	streams int
}

// web holds the pages' templates and the static files they load: no
// inline script or style, so the Content-Security-Policy allows the
// daemon's own files and nothing else.
//
//go:embed web
var web embed.FS

// Static is the script and the style sheet, for /static/.
var Static = must(fs.Sub(web, "web/static"))

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

var funcs = template.FuncMap{
	"money": walkie.Money,
	"rfc3339": func(t time.Time) string {
		return t.UTC().Format(time.RFC3339)
	},
	"clock": func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"since": func(now, t time.Time) string { return now.Sub(t).Truncate(time.Second).String() },
	"ms": func(ms int64) string {
		return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
	},
	"cost": func(r controller.TurnRecord) string {
		if !r.Usage.Known() {
			return "?"
		}
		s := walkie.Money(r.Usage.CostUSD)
		if r.Usage.Estimate() {
			s = "≈" + s
		}
		return s
	},
	"verdict": func(m map[string]string, name string) string { return cmp.Or(m[name], "–") },
	"rowOf":   func(d Debate, now time.Time) rowData { return rowData{Debate: d, Now: now} },
}

// New makes the page's server.
func New(o Options) *Server {
	o.MaxStreams = cmp.Or(o.MaxStreams, DefaultMaxStreams)
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Summary == nil {
		o.Summary = func() string { return "" }
	}
	s := &Server{o: o, bodies: newBodies(16 << 20), kick: make(chan struct{}, 1), done: make(chan struct{}),
		snap: &snapshot{rowHTML: map[string]string{}, rowGen: map[string]uint64{}}, lives: map[string]*live{}, changed: make(chan struct{})}
	s.pages = map[string]*template.Template{}
	for _, name := range []string{"fleet", "debate", "login", "missing", "trials"} {
		s.pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(web, "web/layout.html", "web/parts.html", "web/"+name+".html"))
	}
	return s
}

// rowData is a fleet row with the time it is drawn at.
type rowData struct {
	Debate
	Now time.Time
}

// pageData is what a page template gets.
type pageData struct {
	Title    string
	Base     string // the way back to / from this page's path
	CSRF     string
	TokenSet bool
	Stream   string // the event stream, relative to the page
	Summary  string
	Now      time.Time
	Rows     []rowData
	Page     *Page
	Message  string
	// TrialsDirs are the trials directories the fleet's debates are
	// copies in; Trials is one of them, for its page.
	TrialsDirs []TrialsDir
	Trials     *trialsPage
	// The fleet page's scope: All lists the registry's debates too; Own
	// and Others count the daemon's and those elsewhere on the machine.
	All         bool
	Own, Others int
}

// allScope reports whether a fleet page or its stream asks for every
// debate on the machine (?all=1), not only the daemon's directory's.
func allScope(r *http.Request) bool { return r.URL.Query().Get("all") == "1" }

// inScope reports whether a fleet page of that scope lists d.
func inScope(d Debate, all bool) bool { return all || !d.Elsewhere }

// fragment renders one part of a page, for a stream.
func (s *Server) fragment(name string, data any) string {
	var b bytes.Buffer
	if err := s.pages["fleet"].ExecuteTemplate(&b, name, data); err != nil {
		s.o.Log.Error("page fragment failed", zap.String("fragment", name), zap.Error(err))
	}
	return b.String()
}

func (s *Server) render(w http.ResponseWriter, code int, name string, d pageData) {
	d.CSRF, d.TokenSet = s.o.CSRF, s.o.TokenSet
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "layout", d); err != nil {
		s.o.Log.Error("page failed", zap.String("page", name), zap.Error(err))
		http.Error(w, "the page could not be drawn: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store") // the CSRF token changes with every start
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// FleetPage is GET /: the daemon's debates, live; with ?all=1 every
// debate the machine's registry names too (issue 32 item 14: a user's
// every run, in every directory, buried the daemon's own).
func (s *Server) FleetPage(w http.ResponseWriter, r *http.Request) {
	now := s.o.Now()
	all := allScope(r)
	d := pageData{Title: "walkie", Stream: "events", Summary: s.o.Summary(), Now: now, All: all}
	if all {
		d.Stream = "events?all=1"
	}
	var rows []Debate
	for _, row := range s.o.Debates() {
		if row.Elsewhere {
			d.Others++
		} else {
			d.Own++
		}
		if inScope(row, all) {
			rows = append(rows, row)
			d.Rows = append(d.Rows, rowData{Debate: row, Now: now})
		}
	}
	d.TrialsDirs = trialsDirs(rows)
	s.render(w, http.StatusOK, "fleet", d)
}

// Login is the page a request without the token gets: a prompt for it,
// and nothing else.
func (s *Server) Login(w http.ResponseWriter, r *http.Request, base string) {
	s.render(w, http.StatusUnauthorized, "login", pageData{Title: "walkie: token needed", Base: base})
}

// BaseOf is the relative way back to / from a request's path.
func BaseOf(path string) string {
	return strings.Repeat("../", strings.Count(strings.TrimPrefix(path, "/"), "/"))
}

// find is the debate with this key.
func (s *Server) find(key string) (Debate, bool) {
	return findRow(s.o.Debates(), key)
}

// DebatePage is GET /d/{key}: one debate, server-rendered; the stream
// continues from what it shows.
func (s *Server) DebatePage(w http.ResponseWriter, r *http.Request) {
	base := BaseOf(r.URL.Path)
	row, ok := s.find(r.PathValue("key"))
	if !ok {
		s.render(w, http.StatusNotFound, "missing", pageData{Title: "walkie: no such debate", Base: base})
		return
	}
	now := s.o.Now()
	p, err := loadPage(row, s.bodies, now)
	if err != nil {
		s.render(w, http.StatusOK, "missing", pageData{Title: "walkie: " + row.ID, Base: base, Message: err.Error()})
		return
	}
	s.render(w, http.StatusOK, "debate", pageData{Title: "walkie: " + row.ID, Base: base, Page: p, Now: now,
		Stream: row.Key + "/events?after=" + p.LastID()})
}

// FleetEvents is GET /events: the fleet table's stream.
func (s *Server) FleetEvents(w http.ResponseWriter, r *http.Request) { s.serveFleet(w, r) }

// DebateEvents is GET /d/{key}/events: one debate's stream.
func (s *Server) DebateEvents(w http.ResponseWriter, r *http.Request) {
	row, ok := s.find(r.PathValue("key"))
	if !ok {
		http.Error(w, "no such debate", http.StatusNotFound)
		return
	}
	s.serveDebate(w, r, row)
}

// Transcript is GET /d/{key}/transcript/{n}: the plain-text transcript of
// the turn log's attempt n, its last MiB when it is longer.
func (s *Server) Transcript(w http.ResponseWriter, r *http.Request) {
	row, ok := s.find(r.PathValue("key"))
	n, err := strconv.Atoi(r.PathValue("n"))
	if !ok || err != nil {
		http.Error(w, "no such transcript", http.StatusNotFound)
		return
	}
	f, path, err := openTranscript(row.File, n)
	if err != nil {
		var refused *walkie.InputError
		switch {
		case errors.Is(err, fs.ErrNotExist):
			http.Error(w, "no such transcript", http.StatusNotFound)
		case errors.As(err, &refused):
			http.Error(w, "transcript refused: "+err.Error(), http.StatusForbidden)
		default:
			http.Error(w, "the transcript could not be read: "+err.Error(), http.StatusInternalServerError)
		}
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if skip := fi.Size() - maxTranscript; skip > 0 {
		if _, err := f.Seek(skip, io.SeekStart); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "[walkie: the first %d bytes are not shown; the whole transcript is %s]\n", skip, path)
	}
	_, _ = io.Copy(w, io.LimitReader(f, maxTranscript))
}
