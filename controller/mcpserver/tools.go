package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/controller/distill"
	"github.com/walkie-sh/walkie/walkie"
)

// The tools' inputs and outputs. A field without omitempty is required;
// its jsonschema tag is what the host's model reads about it.

// FileIn names a debate.
type FileIn struct {
	File string `json:"file" jsonschema:"the walkie file (NAME.walkie.md), absolute or relative to the server's directory"`
}

// StartIn is start_debate's input.
type StartIn struct {
	Question     string   `json:"question" jsonschema:"the question to debate, as the person put it"`
	Participants []string `json:"participants" jsonschema:"the participants in turn order: configured agents (claude, codex, gemini or the config's) or people"`
	People       []string `json:"people,omitempty" jsonschema:"the participants who are persons: walkie waits for their posts"`
	Supervisor   string   `json:"supervisor,omitempty" jsonschema:"the person who supervises the debate, by name (no participant)"`
	MaxRounds    int      `json:"max_rounds,omitempty" jsonschema:"the round cap (default 6)"`
	File         string   `json:"file,omitempty" jsonschema:"the walkie file to create (default: named after the question, in the server's directory)"`
	Briefing     string   `json:"briefing,omitempty" jsonschema:"the briefing itself; without it an agent drafts one from the question (and from, when given)"`
	From         string   `json:"from,omitempty" jsonschema:"a conversation file to draft the briefing from: text, or a Claude Code or Codex session log"`
	Distiller    string   `json:"distiller,omitempty" jsonschema:"the configured agent that drafts the briefing (default: the first participant's)"`
}

// Shown is a briefing as the person must see it before approving it.
type Shown struct {
	File     string   `json:"file"`
	Briefing string   `json:"briefing" jsonschema:"the briefing, to show the person word for word"`
	SHA256   string   `json:"sha256" jsonschema:"its hash: approve_briefing pins this text and no other"`
	Words    int      `json:"words"`
	Problems []string `json:"problems,omitempty" jsonschema:"what the template still wants"`
}

// ApproveIn is approve_briefing's input.
type ApproveIn struct {
	File   string `json:"file" jsonschema:"the walkie file"`
	SHA256 string `json:"sha256" jsonschema:"the sha256 of the briefing the person read and approved, as start_debate gave it"`
}

// Approved says what approve_briefing pinned.
type Approved struct {
	File           string `json:"file"`
	BriefingSHA256 string `json:"briefing_sha256"`
	Next           string `json:"next"`
}

// Started is run_debate's answer.
type Started struct {
	File string `json:"file"`
	PID  int    `json:"pid"`
	Log  string `json:"log" jsonschema:"where walkie auto's log goes"`
}

// ListIn is list_debates's input.
type ListIn struct {
	Dir string `json:"dir,omitempty" jsonschema:"a directory to search for walkie files (default: the server's); the debates of the machine's registry are listed too"`
}

// Listed is list_debates's answer: every debate's standing.
type Listed struct {
	Debates []controller.Standing `json:"debates"`
}

// ReadIn is read_entries's input.
type ReadIn struct {
	File  string `json:"file" jsonschema:"the walkie file"`
	Since int    `json:"since,omitempty" jsonschema:"the last sequence number already read: only entries after it are given (0: all)"`
}

// Entry is one entry of the record.
type Entry struct {
	Seq    int       `json:"seq"`
	Turn   int       `json:"turn,omitempty"`
	Agent  string    `json:"agent" jsonschema:"the author: a participant, or supervisor"`
	Signed bool      `json:"signed,omitempty"`
	At     time.Time `json:"at"`
	Body   string    `json:"body"`
}

// Entries is read_entries's answer.
type Entries struct {
	Entries []Entry `json:"entries"`
	Seq     int     `json:"seq" jsonschema:"the last sequence number of the record"`
}

// PostIn is post's input.
type PostIn struct {
	File       string `json:"file" jsonschema:"the walkie file"`
	From       string `json:"from,omitempty" jsonschema:"the participant whose turn this is (a person), or the debate's named supervisor"`
	Supervisor bool   `json:"supervisor,omitempty" jsonschema:"post a supervisor entry instead of a turn: accepted at any time, never takes a turn"`
	Body       string `json:"body" jsonschema:"the entry's markdown; walkie writes the heading and the marker"`
	Sign       bool   `json:"sign,omitempty" jsonschema:"end the turn with Signed-off-by: NAME (agree with the proposal as it stands)"`
}

// Posted says what was recorded.
type Posted struct {
	Seq    int    `json:"seq,omitempty"`
	Turn   int    `json:"turn,omitempty"`
	Status string `json:"status,omitempty"`
	Queued bool   `json:"queued,omitempty" jsonschema:"a supervisor entry queued while a turn runs, recorded right after it"`
	Note   string `json:"note,omitempty"`
}

// HaltIn is halt's input.
type HaltIn struct {
	File   string `json:"file" jsonschema:"the walkie file"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in the state and shown by the standing"`
}

// ExtendIn is extend's input.
type ExtendIn struct {
	File   string `json:"file" jsonschema:"the walkie file"`
	Rounds int    `json:"rounds" jsonschema:"rounds to add (at least 1)"`
}

// Done says what a control did.
type Done struct {
	File     string `json:"file"`
	Note     string `json:"note"`
	RoundCap int    `json:"round_cap,omitempty"`
}

func (s *server) addTools() {
	person := &mcp.ToolAnnotations{DestructiveHint: ptr(false)}
	reader := &mcp.ToolAnnotations{ReadOnlyHint: true}
	mcp.AddTool(s.srv, &mcp.Tool{Name: "start_debate", Annotations: person,
		Description: "Create a debate from a question: the walkie file, and its briefing, drafted by an agent from the question (and the conversation in from) or given as briefing. Nothing is approved or run: show the briefing to the person word for word, then approve_briefing with its sha256 once they approve."}, s.start)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "approve_briefing", Annotations: person,
		Description: "Pin the briefing the person read and approved, by its sha256 (a briefing that changed since is refused). Then run_debate starts the debate."}, s.approve)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "run_debate", Annotations: person,
		Description: "Start walkie auto on an approved debate, as a process of its own that outlives this session. Follow it with wait_for_turn and get_standing."}, s.run)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "list_debates", Annotations: reader,
		Description: "Every debate in a directory and in the machine's registry, each with its standing: status, whose turn, round, cost, why it waits."}, s.list)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "get_standing", Annotations: reader,
		Description: "Where a debate stands now: status and why, turns, round and cap, whose turn, sign-offs, cost against the budget, the controller running it and its running attempt, why it waits."}, s.standing)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "read_entries", Annotations: reader,
		Description: "The record's entries after sequence number since (all with 0): turns and supervisor notes, with author, turn, sign-off and text."}, s.read)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "post", Annotations: person,
		Description: "Post a person's turn (from, in their turn only) or a supervisor entry (supervisor: true, at any time) through walkie's enforced writer: refused, with the reason and whose turn it is, like walkie post."}, s.post)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "halt", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)},
		Description: "Halt a debate: a running turn ends within a second, recorded as halted; resume lifts it."}, s.halt)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "resume", Annotations: person,
		Description: "Lift a halt, or reopen a failed, over-budget or deadlocked debate (one at its round cap needs extend)."}, s.resume)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "extend", Annotations: person,
		Description: "Add rounds to a debate's round cap; a running controller picks it up at once."}, s.extend)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "wait_for_turn", Annotations: reader,
		Description: "Wait until the record has an entry after after_seq, the debate stops being open, or it waits for a person; progress notifications say what runs meanwhile. Returns the standing and the new entries."}, s.wait)
}

func ptr[T any](v T) *T { return &v }

// record resolves a tool's file argument as the CLI's FILE: relative to
// the server's directory, a link to the file it leads to, and a file that
// must exist.
func (s *server) record(file string) (string, error) {
	if strings.TrimSpace(file) == "" {
		return "", &walkie.InputError{Msg: "no file given", Fix: "name the walkie file (NAME.walkie.md)"}
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(s.o.Dir, file)
	}
	real, err := walkie.Resolve(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w; create a debate with start_debate", err)
	}
	return real, err
}

func (s *server) start(ctx context.Context, _ *mcp.CallToolRequest, in StartIn) (*mcp.CallToolResult, Shown, error) {
	if err := s.asPerson(); err != nil {
		return nil, Shown{}, err
	}
	question := strings.TrimSpace(in.Question)
	if question == "" {
		return nil, Shown{}, &walkie.InputError{Msg: "no question given", Fix: "give the question to debate"}
	}
	if in.Briefing != "" && in.From != "" {
		return nil, Shown{}, errors.New("give from (a conversation to distill) or briefing (the text itself), not both")
	}
	file := in.File
	switch {
	case file == "":
		file = walkie.FreeName(s.o.Dir, walkie.Slug(question))
	case !filepath.IsAbs(file):
		file = filepath.Join(s.o.Dir, file)
	}
	chat, err := distill.QuestionChat(question, in.From)
	if err != nil {
		return nil, Shown{}, err
	}
	init := walkie.InitOptions{Participants: in.Participants, People: in.People, Supervisor: in.Supervisor, MaxRounds: in.MaxRounds,
		Briefing: []byte(in.Briefing),
		Check:    func(m *walkie.Meta) error { return controller.CheckParticipants(file, m, s.o.Config, nil) }}
	if in.Briefing == "" {
		init.Briefing = []byte(briefing.Template())
	}
	if err := walkie.Init(file, init); err != nil {
		return nil, Shown{}, err
	}
	if in.Briefing == "" {
		res, err := distill.Run(ctx, distill.Options{File: file, ChatText: chat, Agent: in.Distiller, Config: s.o.Config, Log: s.o.Log})
		if err != nil {
			return nil, Shown{}, fmt.Errorf("%w; %s stays, its briefing unwritten: call start_debate again with briefing, or walkie brief distill %s", err, file, file)
		}
		if res.Warning != "" {
			s.o.Log.Warn("the drafted briefing still has problems", zap.String("file", file), zap.String("warning", res.Warning))
		}
	}
	s.addRecord(file)
	shown, err := show(file)
	return nil, shown, err
}

// show is the briefing of file as it stands, to show the person.
func show(file string) (Shown, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return Shown{}, err
	}
	rep := briefing.Check(d.Briefing)
	return Shown{File: file, Briefing: string(d.Briefing), SHA256: walkie.BriefingHash(d.Briefing), Words: rep.Words, Problems: rep.Problems()}, nil
}

func (s *server) approve(_ context.Context, _ *mcp.CallToolRequest, in ApproveIn) (*mcp.CallToolResult, Approved, error) {
	if err := s.asPerson(); err != nil {
		return nil, Approved{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Approved{}, err
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, Approved{}, err
	}
	if got := walkie.BriefingHash(d.Briefing); got != strings.TrimSpace(in.SHA256) {
		return nil, Approved{}, fmt.Errorf("%w: its sha256 is %s now, not %s; show it to the person again and approve what they read", briefing.ErrChanged, got, in.SHA256)
	}
	a, err := briefing.Approve(file, d.Briefing)
	switch {
	case errors.Is(err, briefing.ErrPlaceholder):
		return nil, Approved{}, fmt.Errorf("%s: the briefing is still the bare template: write it, then approve it", file)
	case err != nil:
		return nil, Approved{}, err
	}
	if a.NotKept != nil {
		s.o.Log.Warn("approved, but the copy for later diffs was not kept", zap.Error(a.NotKept))
	}
	return nil, Approved{File: file, BriefingSHA256: a.Hash, Next: "run_debate starts it"}, nil
}

func (s *server) list(_ context.Context, _ *mcp.CallToolRequest, in ListIn) (*mcp.CallToolResult, Listed, error) {
	dir := s.o.Dir
	if in.Dir != "" {
		dir = in.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.o.Dir, dir)
		}
	}
	files, err := s.debates(dir)
	if err != nil {
		return nil, Listed{}, err
	}
	out := Listed{Debates: []controller.Standing{}}
	for _, f := range files {
		st, err := s.readStanding(f)
		if err != nil {
			s.o.Log.Debug("a debate could not be read", zap.String("file", f), zap.Error(err))
			continue
		}
		out.Debates = append(out.Debates, st)
	}
	return nil, out, nil
}

// readStanding is controller.ReadStanding of file, the one standing.
func (s *server) readStanding(file string) (controller.Standing, error) {
	d, err := walkie.Load(file)
	if err != nil {
		return controller.Standing{}, err
	}
	return controller.ReadStanding(d, controller.StandingOptions{Config: s.o.Config, Registry: s.o.Registry})
}

func (s *server) standing(_ context.Context, _ *mcp.CallToolRequest, in FileIn) (*mcp.CallToolResult, controller.Standing, error) {
	file, err := s.record(in.File)
	if err != nil {
		return nil, controller.Standing{}, err
	}
	st, err := s.readStanding(file)
	return nil, st, err
}

func (s *server) read(_ context.Context, _ *mcp.CallToolRequest, in ReadIn) (*mcp.CallToolResult, Entries, error) {
	file, err := s.record(in.File)
	if err != nil {
		return nil, Entries{}, err
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, Entries{}, err
	}
	return nil, entriesAfter(d, in.Since), nil
}

// entriesAfter are d's entries after sequence number since.
func entriesAfter(d *walkie.Doc, since int) Entries {
	out := Entries{Entries: []Entry{}, Seq: d.Progress().Seq}
	for _, e := range d.Entries {
		if e.Marker.Seq <= since {
			continue
		}
		out.Entries = append(out.Entries, Entry{Seq: e.Marker.Seq, Turn: e.Turn, Agent: e.Agent, Signed: e.Signed(), At: e.Marker.At, Body: string(e.Body)})
	}
	return out
}

func (s *server) post(ctx context.Context, _ *mcp.CallToolRequest, in PostIn) (*mcp.CallToolResult, Posted, error) {
	if err := s.asPerson(); err != nil {
		return nil, Posted{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Posted{}, err
	}
	if in.Supervisor == (in.From != "") {
		return nil, Posted{}, &walkie.InputError{File: file, Msg: "give exactly one of from NAME or supervisor", Fix: "from for a person's turn, supervisor: true for a supervisor entry"}
	}
	rc, warning, err := controller.Post(ctx, file, walkie.Post{From: in.From, Supervisor: in.Supervisor, Body: []byte(in.Body), Sign: in.Sign})
	if err != nil {
		return nil, Posted{}, err
	}
	out := Posted{Seq: rc.Entry.Seq, Turn: rc.Entry.Turn, Status: rc.Status, Queued: rc.Queued}
	if warning != nil {
		out.Note = warning.Error()
	}
	return nil, out, nil
}

func (s *server) halt(_ context.Context, _ *mcp.CallToolRequest, in HaltIn) (*mcp.CallToolResult, Done, error) {
	if err := s.asPerson(); err != nil {
		return nil, Done{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Done{}, err
	}
	if err := walkie.Halt(file, in.Reason); err != nil {
		return nil, Done{}, err
	}
	return nil, Done{File: file, Note: "halted; resume lifts it"}, nil
}

func (s *server) resume(_ context.Context, _ *mcp.CallToolRequest, in FileIn) (*mcp.CallToolResult, Done, error) {
	if err := s.asPerson(); err != nil {
		return nil, Done{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Done{}, err
	}
	note, err := controller.Resume(file, s.o.Config)
	return nil, Done{File: file, Note: note}, err
}

func (s *server) extend(_ context.Context, _ *mcp.CallToolRequest, in ExtendIn) (*mcp.CallToolResult, Done, error) {
	if err := s.asPerson(); err != nil {
		return nil, Done{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Done{}, err
	}
	roundCap, err := walkie.Extend(file, in.Rounds)
	if err != nil {
		return nil, Done{}, err
	}
	return nil, Done{File: file, Note: fmt.Sprintf("round cap is now %d", roundCap), RoundCap: roundCap}, nil
}

// debates are the walkie files under dir and in the registry, each once.
func (s *server) debates(dir string) ([]string, error) {
	files, err := walkie.Find(dir)
	if err != nil {
		return nil, err
	}
	if s.o.Registry == "" {
		return files, nil
	}
	seen := map[string]bool{}
	for _, f := range files {
		seen[f] = true
	}
	regs, err := walkie.ReadRegistry(s.o.Registry)
	if err != nil {
		s.o.Log.Debug("the registry of debates could not be read", zap.Error(err))
	}
	for _, r := range regs {
		if _, err := os.Stat(r.File); err == nil && !seen[r.File] {
			seen[r.File] = true
			files = append(files, r.File)
		}
	}
	return files, nil
}
