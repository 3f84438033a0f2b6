package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

// MaxText is the longest message walkie takes from Telegram, in bytes:
// the default turn limit. Telegram itself sends no more than 4096
// characters; anything longer did not come from a person's phone.
const MaxText = walkie.DefaultMaxTurnBytes

// Options configure a bot's poll.
type Options struct {
	Client *Client
	Store  *Store
	// Config is the configuration now (the daemon's may be reloaded):
	// its people: are the allow-list, chat id to person.
	Config func() *config.Config
	// Debates are the walkie files the poll acts on without a reply to
	// name one (/status with no debate, a person's only open turn); a
	// reply to a message walkie sent acts on that message's debate.
	Debates func() []string
	// Registry names the controllers the standing mentions.
	Registry    string
	Log         *zap.Logger
	PollTimeout time.Duration // getUpdates' long poll; default 50s
}

// handleTimeout bounds the acting on and answering of one update.
const handleTimeout = 30 * time.Second

// Bot polls one bot's updates and acts on them for the people.
type Bot struct {
	o  Options
	mu sync.Mutex
	// unknown are the chats already logged as no person's: each is
	// logged once, however many messages it sends.
	unknown map[string]bool
}

// New is the bot of o.
func New(o Options) *Bot {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.Debates == nil {
		o.Debates = func() []string { return nil }
	}
	return &Bot{o: o, unknown: map[string]bool{}}
}

// Run takes the bot's poll (ErrPolling when another process has it) and
// polls until ctx ends. Each update is marked in hand on disk before
// walkie acts on it and acknowledged (the offset) after, so a restart
// neither repeats nor silently loses one.
func (b *Bot) Run(ctx context.Context) error {
	release, err := b.o.Store.TryPoll()
	if err != nil {
		return err
	}
	defer release()
	p, err := b.o.Store.ReadPoll()
	if err != nil {
		return err
	}
	if p, err = b.settlePending(ctx, p); err != nil {
		return err
	}
	wait := time.Second
	for ctx.Err() == nil {
		us, err := b.o.Client.Updates(ctx, p.Offset, b.o.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			wait = b.backoff(ctx, err, wait)
			continue
		}
		wait = time.Second
		for _, u := range us {
			if u.UpdateID < p.Offset {
				// Given again after it was acknowledged: handled already.
				b.o.Log.Warn("telegram gave an update already handled; skipped", zap.Int64("update_id", u.UpdateID), zap.Int64("offset", p.Offset))
				continue
			}
			if p, err = b.take(ctx, p, u); err != nil {
				return err
			}
		}
	}
	return nil
}

// take handles u between the two writes of the poll's memory.
func (b *Bot) take(ctx context.Context, p Poll, u Update) (Poll, error) {
	p.Pending = &Pending{UpdateID: u.UpdateID}
	if m := u.Message; m != nil {
		p.Pending.Chat, p.Pending.Message = ChatID(m.Chat.ID), m.MessageID
	}
	if err := b.o.Store.WritePoll(p); err != nil {
		return p, err
	}
	// An update in hand is finished whole, and answered, even when the
	// poll is told to stop meanwhile (auto stops it as the /halt it acts
	// on ends the debate).
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handleTimeout)
	defer cancel()
	b.handle(hctx, u)
	p.Offset, p.Pending = u.UpdateID+1, nil
	return p, b.o.Store.WritePoll(p)
}

// settlePending ends an update a process was killed in the middle of:
// whether it took cannot be known, so it is not done again, and its
// person is told to look and send it again.
func (b *Bot) settlePending(ctx context.Context, p Poll) (Poll, error) {
	pd := p.Pending
	if pd == nil {
		return p, nil
	}
	if pd.UpdateID >= p.Offset {
		b.o.Log.Warn("telegram: walkie stopped while it handled an update; not done again", zap.Int64("update_id", pd.UpdateID))
		if pd.Chat != "" {
			b.reply(ctx, pd.Chat, pd.Message, "walkie stopped while it handled this message, so it may or may not have taken: look with /status, and send it again if it did not.")
		}
		p.Offset = pd.UpdateID + 1
	}
	p.Pending = nil
	return p, b.o.Store.WritePoll(p)
}

// backoff waits after a failed poll: 1 s, doubling to a minute, or what
// a 429 asks.
func (b *Bot) backoff(ctx context.Context, err error, wait time.Duration) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) && ae.RetryAfter > wait {
		wait = ae.RetryAfter
	}
	b.o.Log.Warn("telegram: getUpdates failed; trying again", zap.Duration("retry_in", wait), zap.Error(err))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return min(wait*2, time.Minute)
}

// handle acts on one update, answering in the sender's chat.
func (b *Bot) handle(ctx context.Context, u Update) {
	m := u.Message
	if m == nil {
		m = u.EditedMessage
	}
	if m == nil {
		return
	}
	chat := ChatID(m.Chat.ID)
	person, ok := b.o.Config().PersonOfChat(chat)
	if ok && !ownChat(m) {
		// The chat is a person's, the writer is not that person: a group
		// or channel given as their chat, where every member would speak
		// as them. Only a person's private chat with the bot is theirs.
		ok = false
	}
	if !ok {
		b.mu.Lock()
		first := !b.unknown[chat]
		b.unknown[chat] = true
		b.mu.Unlock()
		if first {
			b.o.Log.Warn("telegram: a message from a chat no person of the config has, or not from the person in their own private chat; ignored (and this chat not logged again)", zap.String("chat", chat))
		}
		return
	}
	if u.Message == nil {
		b.reply(ctx, chat, m.MessageID, "An edit is not taken: a walkie record is append-only. Send a new message instead.")
		return
	}
	if why := badText(m.Text); why != "" {
		b.reply(ctx, chat, m.MessageID, why)
		return
	}
	var answer string
	if cmd, args, ok := command(m.Text); ok {
		answer = b.command(ctx, person, chat, m, cmd, args)
	} else {
		answer = b.post(ctx, person, chat, m)
	}
	b.reply(ctx, chat, m.MessageID, answer)
}

// badText says why a message is not taken: too long, or with a control
// character; "" when it is fine.
func badText(s string) string {
	if len(s) > MaxText {
		return fmt.Sprintf("Not taken: the message is %d bytes, and walkie takes at most %d from Telegram (a turn's limit). Send a shorter one, or post it with walkie post.", len(s), MaxText)
	}
	if !utf8.ValidString(s) {
		return "Not taken: the message is not UTF-8."
	}
	for i, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return fmt.Sprintf("Not taken: the message has a control character (U+%04X) at byte %d. Send plain text.", r, i)
		}
	}
	if strings.TrimSpace(s) == "" {
		return "Not taken: the message is empty."
	}
	return ""
}

// command splits "/extend@bot 2" into extend and "2".
func command(text string) (cmd, args string, ok bool) {
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	head, rest, _ := strings.Cut(text, " ")
	head, _, _ = strings.Cut(strings.TrimPrefix(head, "/"), "@")
	return strings.ToLower(head), strings.TrimSpace(rest), true
}

// ownChat reports whether m was written by the person whose private chat
// with the bot it is in: in a private chat the chat's id is the user's.
func ownChat(m *Message) bool {
	return m.From != nil && !m.From.IsBot && m.From.ID == m.Chat.ID && m.Chat.Type == "private"
}

// reply answers message id in chat; a failure is logged.
func (b *Bot) reply(ctx context.Context, chat string, id int64, text string) {
	if _, err := b.o.Client.Send(ctx, chat, text, id); err != nil {
		b.o.Log.Warn("telegram: the answer was not delivered", zap.String("chat", chat), zap.Error(err))
	}
}

// target is the debate a message is about: the one the message it
// replies to names, else the first word of args when it is a debate's
// id (cut from args), else the only debate there is.
func (b *Bot) target(ctx context.Context, chat string, m *Message, args string) (file string, sent *Sent, rest string, err error) {
	if r := m.ReplyTo; r != nil {
		s, ok, err := b.findSent(ctx, chat, r.MessageID)
		switch {
		case err != nil:
			return "", nil, args, err
		case !ok:
			return "", nil, args, errors.New("that message is not one walkie sent to this chat, or too old to remember: reply to a newer one, or name the debate")
		}
		return s.File, &s, args, nil
	}
	files := b.o.Debates()
	first, more, _ := strings.Cut(args, " ")
	var ids []string
	for _, f := range files {
		meta, err := walkie.ReadMeta(f)
		if err != nil {
			continue
		}
		if first != "" && meta.ID == first {
			return f, nil, strings.TrimSpace(more), nil
		}
		ids = append(ids, meta.ID)
	}
	if len(files) == 1 {
		return files[0], nil, args, nil
	}
	return "", nil, args, fmt.Errorf("which debate? reply to one of its messages, or name it first (debates here: %s)", strings.Join(ids, ", "))
}

// findSent is the sent message id in chat. Its sender (a notify sink,
// often of another process) writes it down just after Telegram took it,
// so a reply that comes at once may find it missing: a miss is looked
// for again for a moment before it counts.
func (b *Bot) findSent(ctx context.Context, chat string, id int64) (Sent, bool, error) {
	for try := 0; ; try++ {
		s, ok, err := b.o.Store.Find(chat, id)
		if ok || err != nil || try == 20 {
			return s, ok, err
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return s, false, nil
		}
	}
}

// may says why person may not act as the supervisor of the debate in
// file, or "": its named supervisor, or, where it names none, any person.
func may(person, file string) string {
	meta, err := walkie.ReadMeta(file)
	if err != nil {
		return err.Error()
	}
	if meta.Supervisor != "" && meta.Supervisor != person {
		return fmt.Sprintf("Refused: %s is supervised by %s; only they may do that from Telegram.", meta.ID, meta.Supervisor)
	}
	return ""
}

const help = `walkie takes, from the people of its config:
- a reply to a turn's message: your turn in that debate (end it with a line Signed-off-by: YOU to sign off)
- /status [DEBATE]: where it stands
- /halt [DEBATE] REASON, /resume, /extend [DEBATE] N, /note [DEBATE] TEXT: the supervisor's controls
- /approve, in reply to a briefing sent for approval: pin it as sent
Reply to one of a debate's messages to name it, or give its id first.`

func (b *Bot) command(ctx context.Context, person, chat string, m *Message, cmd, args string) string {
	switch cmd {
	case "start", "help":
		return help
	case "status":
		return b.status(ctx, chat, m, args)
	case "halt", "resume", "extend", "note", "approve":
	default:
		return fmt.Sprintf("/%s is not a walkie command.\n\n%s", cmd, help)
	}
	file, sent, rest, err := b.target(ctx, chat, m, args)
	if err != nil {
		return "Not done: " + err.Error()
	}
	if why := may(person, file); why != "" {
		return why
	}
	b.o.Log.Info("telegram: a person's control", zap.String("person", person), zap.String("command", cmd), zap.String("file", file))
	switch cmd {
	case "halt":
		if err := walkie.Halt(file, rest); err != nil {
			return "Not halted: " + err.Error()
		}
		return fmt.Sprintf("Halted %s; /resume lifts it.", file)
	case "resume":
		note, err := controller.Resume(file, b.o.Config())
		if err != nil {
			return "Not resumed: " + err.Error()
		}
		return note
	case "extend":
		n, err := strconv.Atoi(strings.TrimSpace(rest))
		if err != nil {
			return fmt.Sprintf("Not extended: %q is not a number of rounds: /extend N", rest)
		}
		roundCap, err := walkie.Extend(file, n)
		if err != nil {
			return "Not extended: " + err.Error()
		}
		return fmt.Sprintf("%s: round cap is now %d", file, roundCap)
	case "note":
		rc, warning, err := controller.Post(ctx, file, walkie.Post{Supervisor: true, Body: []byte(rest + "\n")})
		if err != nil {
			return "Not recorded: " + err.Error()
		}
		return posted(rc, warning)
	}
	return b.approve(file, sent)
}

// approve pins the briefing sent is the message of, as it was sent.
func (b *Bot) approve(file string, sent *Sent) string {
	if sent == nil || sent.Kind != KindBriefing {
		return "Not approved: reply /approve to the message that sent the briefing for approval (walkie brief send FILE)."
	}
	d, err := walkie.Load(file)
	if err != nil {
		return "Not approved: " + err.Error()
	}
	if walkie.BriefingHash(d.Briefing) != sent.SHA256 {
		return "Not approved: the briefing changed since it was sent, so what you read is not what would be pinned; send it again (walkie brief send " + file + ")."
	}
	a, err := briefing.Approve(file, d.Briefing)
	if err != nil {
		return "Not approved: " + err.Error()
	}
	if a.NotKept != nil {
		b.o.Log.Warn("telegram: approved, but the copy for later diffs was not kept", zap.Error(a.NotKept))
	}
	return fmt.Sprintf("%s: briefing approved, briefing_sha256 %s", file, a.Hash[:12])
}

// post records a plain message as person's turn in the debate its reply
// names (or the one debate waiting for them).
func (b *Bot) post(ctx context.Context, person, chat string, m *Message) string {
	file, _, _, err := b.target(ctx, chat, m, "")
	if err != nil {
		if file = b.waitingFor(person); file == "" {
			return "Not posted: reply to the message of the turn you answer. " + help
		}
	}
	body, signer := walkie.SplitSignOff([]byte(m.Text + "\n"))
	p := walkie.Post{From: person, Body: []byte(m.Text + "\n")}
	if signer == person {
		p.Body, p.Sign = body, true
	}
	rc, warning, err := controller.Post(ctx, file, p)
	if err != nil {
		return "Not posted: " + err.Error()
	}
	b.o.Log.Info("telegram: a person's turn", zap.String("person", person), zap.String("file", file), zap.Int("seq", rc.Entry.Seq))
	return posted(rc, warning)
}

// waitingFor is the one debate whose next turn is person's, or "".
func (b *Bot) waitingFor(person string) string {
	found := ""
	for _, f := range b.o.Debates() {
		d, err := walkie.Load(f)
		if err != nil {
			continue
		}
		if p := d.Progress(); !p.Converged && p.NextAgent == person {
			if found != "" {
				return ""
			}
			found = f
		}
	}
	return found
}

func posted(rc walkie.Receipt, warning error) string {
	var s string
	switch {
	case rc.Queued:
		s = "A turn is running: the note is queued and will be recorded right after it."
	case rc.Entry.Turn == 0:
		s = fmt.Sprintf("Recorded the supervisor entry (seq %d).", rc.Entry.Seq)
	default:
		s = fmt.Sprintf("Recorded turn %d by %s (seq %d); status %s.", rc.Entry.Turn, rc.Entry.Agent, rc.Entry.Seq, rc.Status)
	}
	if warning != nil {
		s += " " + warning.Error()
	}
	return s
}

// status is where the debate (or every debate here) stands.
func (b *Bot) status(ctx context.Context, chat string, m *Message, args string) string {
	files := []string{}
	if file, _, _, err := b.target(ctx, chat, m, args); err == nil {
		files = append(files, file)
	} else if m.ReplyTo != nil || args != "" {
		return "No status: " + err.Error()
	} else {
		files = b.o.Debates()
	}
	if len(files) == 0 {
		return "No debate here."
	}
	var out []string
	for _, f := range files {
		d, err := walkie.Load(f)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		s, err := controller.ReadStanding(d, controller.StandingOptions{Config: b.o.Config(), Registry: b.o.Registry})
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		out = append(out, StandingText(s))
	}
	return strings.Join(out, "\n\n")
}
