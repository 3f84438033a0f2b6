package distill

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// distillTries is how many sessions a distillation may take: a result
// missing sections or far off the length is sent back once, with the
// reason; the second result is kept whatever it is, with a warning.
const distillTries = 2

// ErrBriefingFixed is the refusal to change a briefing once the debate
// has an entry: the header is then part of the chain.
var ErrBriefingFixed = errors.New("the briefing is fixed once the first entry is written")

// Options configure a distillation.
type Options struct {
	File string // the walkie file whose briefing is written
	Chat string // the conversation: plain text, markdown, or a Claude Code or Codex session log
	// ChatText, when Chat is "", is the conversation itself, as text
	// (QuestionChat's): what walkie new and walkie mcp hand over.
	ChatText string
	// Agent is the configured agent that distills; "" means the agent of
	// the debate's first participant.
	Agent  string
	Config *config.Config
	Log    *zap.Logger
	// Output, when set, sees each non-blank line the agent prints.
	Output func(line string)
}

// Result is a finished distillation. Its text is in the walkie file,
// unapproved.
type Result struct {
	Agent      string
	ChatFormat string // briefing.FormatText, FormatClaude or FormatCodex
	Messages   int    // messages kept from a session log (0 for plain text)
	Briefing   []byte // the text now under # Briefing
	Report     briefing.Report
	// Warning is set when the result still misses sections or is far off
	// the length after the retry: it is kept, and a person should look.
	Warning  string
	Unpinned bool // an approved briefing was replaced: it needs approval again
	Dir      string
	Attempts []Attempt
}

// Attempt is one session of a distillation.
type Attempt struct {
	Number     int
	Output     string // the file the agent was told to write
	Transcript engine.Transcript
	Ending     session.Ending
	EndedBy    string
	ExitCode   int
	Detail     string
	Duration   time.Duration
	Words      int
	Reason     string // why it was sent back or warned about; "" when it passed
	Usage      *engine.Usage
	// Sandbox is how its boundary was applied and what its output
	// reported refused (nil without one).
	Sandbox *session.SandboxReport
}

// Run has an agent turn a conversation into the debate's briefing:
// a normal session (pty, timeout, stall window, prompt rules, transcript
// in the private distillation folder, see briefing.DistilledRoot) with the
// pinned distillation prompt,
// which names a file for the agent to write. The result is checked
// against the template; one that misses sections or is far off the length
// is retried once with the reason. The text then replaces the briefing,
// unapproved: a person reads it and approves it with walkie brief approve.
//
// It is refused once the debate has an entry, like every other change of
// the briefing.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	file, err := filepath.Abs(o.File)
	if err != nil {
		return Result{}, err
	}
	d, err := walkie.Load(file)
	if err != nil {
		return Result{}, engine.BadInput(err)
	}
	if len(d.Entries) > 0 {
		return Result{}, fmt.Errorf("%s has %d entries: %w", o.File, len(d.Entries), ErrBriefingFixed)
	}
	if walkie.ControllerRunning(walkie.StateDir(file, d.Meta.ID)) {
		return Result{}, fmt.Errorf("a controller is running %s, so its briefing cannot change: %w", o.File, walkie.ErrLocked)
	}
	name := o.Agent
	if name == "" {
		name = d.Meta.Participants[0]
	}
	agent, err := o.Config.Agent(name)
	if err != nil {
		return Result{}, engine.BadInput(fmt.Errorf("distilling agent: %w", err))
	}
	raw := []byte(o.ChatText)
	if o.Chat != "" {
		if raw, err = os.ReadFile(o.Chat); err != nil {
			return Result{}, engine.BadInput(fmt.Errorf("read the chat: %w", err))
		}
	}
	chat, err := briefing.ParseChat(raw)
	if err != nil {
		return Result{}, engine.BadInput(fmt.Errorf("%s: %w", o.Chat, err))
	}
	// Out of the debate's folder, where every turn works, and private:
	// the peers must never see the chat (briefing.DistilledRoot; removed
	// at approval). Each run keeps its own folder, so an earlier
	// distillation's transcripts stay for comparison until then.
	root, err := briefing.DistilledRoot(walkie.StateDir(file, d.Meta.ID))
	if err != nil {
		return Result{}, fmt.Errorf("distill: %w", err)
	}
	dir := filepath.Join(root, time.Now().UTC().Format("20060102T150405.000Z"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Result{}, fmt.Errorf("distill: %w", err)
	}
	if err := os.Chmod(root, 0o700); err != nil {
		return Result{}, fmt.Errorf("distill: %w", err)
	}
	chatPath := filepath.Join(dir, "chat.txt")
	if err := os.WriteFile(chatPath, []byte(chat.Text()), 0o600); err != nil {
		return Result{}, fmt.Errorf("distill: %w", err)
	}
	res := Result{Agent: name, ChatFormat: chat.Format, Messages: len(chat.Messages), Dir: dir}
	log := o.Log.With(zap.String("debate", d.Meta.ID), zap.String("agent", name))
	eng := engine.New(o.Config, o.Log)
	defer eng.Close()
	log.Info("distilling the briefing", zap.String("chat", o.Chat), zap.String("format", chat.Format), zap.Int("messages", len(chat.Messages)))

	var text []byte
	reason := ""
	for n := 1; n <= distillTries; n++ {
		a, out, err := distillOnce(ctx, eng, o, agent, file, dir, chatPath, n, reason)
		if err != nil {
			return res, err
		}
		switch {
		case out != nil:
			text = out
			rep := briefing.Check(out)
			a.Words, a.Reason = rep.Words, rep.Reason()
			res.Report = rep
		case a.Reason == "":
			a.Reason = "the agent did not write " + a.Output
		}
		res.Attempts = append(res.Attempts, a)
		log.Info("distill attempt", zap.Int("attempt", n), zap.String("ending", string(a.Ending)), zap.String("ended_by", a.EndedBy),
			zap.Int("exit_code", a.ExitCode), zap.Int64("duration_ms", a.Duration.Milliseconds()), zap.Int("words", a.Words), zap.String("reason", a.Reason), zap.Any("sandbox", a.Sandbox))
		if ctx.Err() != nil {
			return res, fmt.Errorf("distill interrupted: %w", context.Cause(ctx))
		}
		if a.Ending == session.EndBlocked {
			// Not logged in, a usage limit: asking again will not help.
			return res, fmt.Errorf("distill: %s: %s", name, cmp.Or(a.Detail, "blocked on a prompt"))
		}
		if a.Reason == "" {
			break
		}
		reason = a.Reason
	}
	if text == nil {
		last := res.Attempts[len(res.Attempts)-1]
		return res, fmt.Errorf("distill: %s wrote no briefing in %s (last: %s, %s); transcripts in %s", name, walkie.Count(len(res.Attempts), "attempt", "attempts"), last.Ending, last.Detail, dir)
	}
	if res.Warning = res.Report.Reason(); res.Warning != "" {
		log.Warn("the distilled briefing still has problems; kept for a person to fix", zap.String("reason", res.Warning))
	}
	res.Unpinned, err = walkie.SetBriefing(file, text)
	if err != nil {
		return res, fmt.Errorf("distill: write the briefing: %w", err)
	}
	d, err = walkie.Load(file)
	if err != nil {
		return res, err
	}
	res.Briefing = d.Briefing
	return res, nil
}

// distillOnce runs one session and returns what the agent wrote to its
// output file (nil if nothing usable: missing, blank, over the limit,
// not a regular file; the reason goes back to the agent).
func distillOnce(ctx context.Context, eng *engine.Engine, o Options, a config.Agent, file, dir, chatPath string, n int, retry string) (Attempt, []byte, error) {
	out := filepath.Join(dir, fmt.Sprintf("briefing-%d.md", n))
	base := filepath.Join(dir, fmt.Sprintf("attempt-%d", n))
	att := Attempt{Number: n, Output: out, Transcript: engine.Transcript{Raw: base + ".log", Text: base + ".txt"}}
	prompt := briefing.DistillPrompt(briefing.PromptData{Chat: chatPath, Out: out, Retry: retry})
	written := func() bool {
		fi, err := os.Stat(out)
		return err == nil && fi.Size() > 0
	}
	// {file} is the file this session must write: the walkie file in a
	// turn, the output file here. Some CLIs hang after they answer: the
	// session ends once the file has been written and left alone for the
	// grace. The session works in the distillation's own folder, which
	// holds the chat and where it writes: each CLI confines its writes to
	// its working directory, and nothing of the debate is needed. Nothing
	// of it goes into the debate's turn log or its cost: the debate has
	// not begun.
	r, err := eng.RunFile(ctx, engine.FileAttempt{
		Record: engine.TurnRecord{Agent: a.Name, Role: "distill", Attempt: n},
		Prepare: func(string, time.Time) (engine.Job, error) {
			return engine.Job{
				Agent:      a.ForRole(config.RoleDistiller),
				Dir:        dir,
				Vars:       config.Vars{Prompt: prompt, File: out, Agent: a.Name, Dir: filepath.Dir(file)},
				Transcript: base,
				Result:     out,
				Ready:      written,
				Done:       "the briefing is written",
				Output:     o.Output,
				Role:       config.RoleDistiller,
				Reach:      engine.FolderReach(dir),
			}, nil
		},
		Limit: walkie.MaxBriefingBytes,
		Name:  "the briefing written",
		Words: distillWords,
	})
	if err != nil {
		return att, nil, err
	}
	att.Ending, att.EndedBy, att.ExitCode, att.Detail, att.Duration = r.Ending, r.EndedBy, r.ExitCode, r.Detail, r.Duration
	att.Usage, att.Sandbox = r.Usage, r.Sandbox
	switch {
	case !r.Wrote, r.Bad == nil && len(bytes.TrimSpace(r.File.Data)) == 0:
		return att, nil, nil
	case r.Bad != nil:
		// Sent back with the reason, like any briefing that fails its
		// checks; nothing of it is kept in the record.
		att.Reason = r.Bad.Error()
		return att, nil, nil
	}
	return att, cleanDistilled(r.File.Data), nil
}

// distillWords name a distillation's parts in its attempt's outcome.
var distillWords = engine.FileWords{Stopped: "briefing", Written: "briefing written", Writer: "agent", File: "briefing", Missing: "no briefing was written"}

// leadingTitle is a `# Briefing` (or any level-1) title an agent put on
// top although the prompt said not to; the record writes its own.
var leadingTitle = regexp.MustCompile(`\A\s*# [^\n]*\n`)

func cleanDistilled(text []byte) []byte {
	return walkie.BriefingText(leadingTitle.ReplaceAll(text, nil))
}

// QuestionChat is what the distilling agent reads for a question put to a
// debate: the question, then the conversation it came from (the file
// from, "" for none: text, or a Claude Code or Codex session log), as
// briefing.ParseChat renders it.
func QuestionChat(question, from string) (string, error) {
	text := "The question to debate, as the person put it:\n\n" + question + "\n"
	if from == "" {
		return text, nil
	}
	raw, err := os.ReadFile(from)
	if err != nil {
		return "", fmt.Errorf("read the chat: %w", err)
	}
	chat, err := briefing.ParseChat(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	return text + "\nThe conversation it came from:\n\n" + chat.Text(), nil
}
