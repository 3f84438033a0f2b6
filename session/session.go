package session

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Spec describes one session.
type Spec struct {
	// Argv is the command. Argv[0] is looked up in the PATH of the
	// session's environment (not the caller's); a name with a slash is
	// used as it is, relative to Dir.
	Argv []string
	// Dir is the working directory ("" = the caller's).
	Dir string
	// Env holds the session's own "K=V" entries; they win over inherited
	// ones.
	Env []string
	// EnvAllow names the caller's variables passed through. Names are
	// exact, except that a trailing "*" matches a prefix ("LC_*"). PATH is
	// inherited when neither Env nor EnvAllow provides it, and TERM
	// defaults to xterm-256color.
	EnvAllow []string
	// EnvDeny names caller's variables never passed through, whatever
	// EnvAllow says (exact names): the secrets of a session allowed "*".
	EnvDeny []string
	// PrivateHome gives the session a fresh HOME that is removed when the
	// session ends. Inherited XDG_*_HOME variables are dropped with it,
	// whatever EnvAllow says, since they would point back into the real
	// home; only the session's own Env may set them. Without PrivateHome,
	// HOME passes only if EnvAllow or Env names it.
	PrivateHome bool
	// HomeFiles are written into the private HOME before the start: a
	// path relative to HOME, slash-separated, to its content (mode 0600).
	// A path that leaves HOME is refused.
	HomeFiles map[string]string
	// PrivateTmp gives the session a TMPDIR of its own, removed with the
	// session: inside the private HOME when there is one, so what a CLI
	// leaves there goes with it.
	PrivateTmp bool
	// ID names the session for crash recovery (NewID makes one; empty: the
	// session makes its own). Every process of the session finds it in
	// its environment as WALKIE_SESSION, and the private HOME and TMPDIR
	// are named after it, so a caller that records the ID before Start
	// can end what the session left even if it dies before it learns the
	// pid: Sweep.
	ID string
	// Rows and Cols size the terminal (default 40x120).
	Rows, Cols uint16
	// Input is written to the terminal right after the start, as if typed.
	Input []byte
	// Timeout ends the session this long after the start (0 = never).
	Timeout time.Duration
	// Stall ends the session when there has been no output and no
	// Progress call for this long (0 = never).
	Stall time.Duration
	// Grace is how long the process group has between SIGTERM and SIGKILL
	// (default 2s). It also caps, each on its own, the final drain of the
	// terminal and the wait for the killed group to be gone.
	Grace time.Duration
	// RawPath receives every output byte as it arrives; TextPath the same
	// output as plain text: escape sequences removed, "\r\n" folded to
	// "\n", and a line redrawn after a lone "\r" (a spinner) kept only in
	// its last form. Empty = not written. Missing parent directories are
	// created.
	RawPath, TextPath string
	// Rules are prompt rules checked against the plain-text output.
	Rules []Rule
	// Observer sees each chunk of raw output as it arrives, from a single
	// goroutine. It must not retain the slice, and must return quickly:
	// while it runs, the session reads no output.
	Observer func(chunk []byte)
	// TranscriptCap bounds each transcript file to about this many bytes
	// (0 = no cap). Past it, a transcript keeps the first half of the
	// output and the last half, with a line between them saying how many
	// bytes were cut; the last half is held in memory until the end.
	TranscriptCap int64
	// Sandbox is the session's filesystem boundary (the zero value is
	// none). A sandboxed session always gets a private TMPDIR, whatever
	// PrivateTmp says: the system's temporary directory holds every other
	// session's.
	Sandbox Sandbox
}

// Rule is a prompt rule. Pattern is matched against the plain-text output
// (lone carriage returns read as line breaks). A match may span reads: the
// last 4 KiB of text stay in view, which also bounds the length of a match.
// Each rule fires at most once per session.
type Rule struct {
	Pattern *regexp.Regexp
	// Reply, if not empty, is typed into the terminal when the rule fires.
	Reply string
	// Outcome, if not empty, ends the session at once: Result.Ending is
	// EndBlocked, Result.RuleOutcome is Outcome and Result.Matched is the
	// matched text.
	Outcome string
	// Detail is a one-line explanation carried to Result.Detail.
	Detail string
}

// Ending is how a session ended.
type Ending string

// The endings. Exactly one applies to every session.
const (
	EndExited      Ending = "exited"
	EndTimeout     Ending = "timeout"
	EndStalled     Ending = "stalled"
	EndBlocked     Ending = "blocked-prompt"
	EndCaller      Ending = "ended-by-caller"
	EndCancelled   Ending = "cancelled"
	EndStartFailed Ending = "start-failed"
)

// Values of Result.EndedBy.
const (
	EndedBySelf       = "self"       // the process exited on its own
	EndedByController = "controller" // the session signalled it
)

// Result describes a finished session.
type Result struct {
	Started, Ended time.Time
	Duration       time.Duration
	// ExitCode is the leader's exit status, -1 if it was killed by a
	// signal or never started.
	ExitCode int
	// Signal names the signal that killed the leader ("SIGTERM"), "" if
	// it exited.
	Signal  string
	Ending  Ending
	EndedBy string
	// Matched, RuleOutcome and Detail: for EndBlocked the matched text, the
	// rule's Outcome and its Detail; otherwise Detail says in one line what
	// happened (the timeout, the caller's reason, the exit code).
	Matched, RuleOutcome, Detail string
	// Bytes counts raw output bytes.
	Bytes             int64
	RawPath, TextPath string
	// Pid is the leader's pid, which is also its process group id.
	Pid int
	// Sandbox says how the boundary was applied and what the output
	// reported refused; nil when Spec.Sandbox asked for none.
	Sandbox *SandboxReport
}

const (
	defaultRows  = 40
	defaultCols  = 120
	defaultGrace = 2 * time.Second
	// readSize is the pty read buffer; with the transcript buffers it is
	// all the memory a session holds for output, whatever its size.
	readSize       = 32 << 10
	transcriptSize = 64 << 10
)

// Session is one running command. Its methods may be called from any
// goroutine.
type Session struct {
	spec    Spec
	cmd     *exec.Cmd
	pty     *os.File // non-blocking dup of the master: deadlines and Close work on it
	pid     int
	made    madeDirs // private HOME and TMPDIR, removed at the end
	started time.Time
	// guard kills the group should the controller die first; owned by
	// the supervisor, which releases it once the group is gone.
	guard    groupGuard
	guardErr error

	raw, text   *capWriter
	rawW, textW *bufio.Writer

	// activity is the time of the last output or Progress, as a duration
	// since started (monotonic).
	activity atomic.Int64
	bytes    atomic.Int64

	endOnce   sync.Once
	endReason string
	endCh     chan struct{}

	// Owned by the reader goroutine until readerDone is closed.
	strip    stripper
	fold     textFolder
	rules    *ruleSet
	blocked  *ruleMatch
	refusals *refusalScanner // nil without a sandbox
	readErr  error

	sandbox *SandboxReport // nil without a sandbox

	blockedCh  chan struct{} // closed by the reader when an Outcome rule fires
	writes     chan []byte   // input and rule replies, typed in order
	closing    chan struct{} // tells the writer to stop
	exited     chan struct{} // closed when the leader has been reaped
	state      *os.ProcessState
	readerDone chan struct{}
	writerDone chan struct{}
	done       chan struct{}
	result     Result
}

// Start starts the command of spec in a new pseudo-terminal, as the leader
// of a new session and process group. The context ends the session when
// cancelled (EndCancelled). An error means nothing was started and nothing
// is left behind.
func Start(ctx context.Context, spec Spec) (*Session, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("session start: empty argv")
	}
	if spec.ID == "" {
		spec.ID = NewID()
	} else if !validID(spec.ID) {
		return nil, fmt.Errorf("session start: id %q: use letters, digits, - and _ only (NewID makes one)", spec.ID)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("session start %q: %w", spec.Argv[0], context.Cause(ctx))
	}
	if spec.Rows == 0 {
		spec.Rows = defaultRows
	}
	if spec.Cols == 0 {
		spec.Cols = defaultCols
	}
	if spec.Grace <= 0 {
		spec.Grace = defaultGrace
	}
	if spec.Sandbox.Level.On() {
		spec.PrivateTmp = true
	}
	s := &Session{
		spec:       spec,
		rules:      newRuleSet(spec.Rules),
		endCh:      make(chan struct{}),
		blockedCh:  make(chan struct{}),
		writes:     make(chan []byte, len(spec.Rules)+1), // each rule replies at most once: sends never block
		closing:    make(chan struct{}),
		exited:     make(chan struct{}),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
		done:       make(chan struct{}),
	}
	if err := s.start(); err != nil {
		s.cleanup()
		return nil, fmt.Errorf("session start %q: %w", spec.Argv[0], err)
	}
	if len(spec.Input) > 0 {
		s.writes <- append([]byte(nil), spec.Input...)
	}
	go s.wait()
	go s.read()
	go s.write()
	go s.supervise(ctx)
	return s, nil
}

// start prepares HOME and the transcripts and starts the process.
func (s *Session) start() error {
	var err error
	if s.made, err = privateDirs(s.spec); err != nil {
		return err
	}
	env := buildEnv(os.Environ(), s.spec, s.made)
	path, err := lookPath(s.spec.Argv[0], EnvValue(env, "PATH"), s.spec.Dir)
	if err != nil {
		return err
	}
	if err := checkDir(s.spec.Dir); err != nil {
		return err
	}
	if s.raw, s.rawW, err = createTranscript(s.spec.RawPath, s.spec.TranscriptCap); err != nil {
		return err
	}
	if s.text, s.textW, err = createTranscript(s.spec.TextPath, s.spec.TranscriptCap); err != nil {
		return err
	}
	s.fold.out = s.textW

	cmd := &exec.Cmd{
		Path:        path,
		Args:        s.spec.Argv,
		Env:         env,
		Dir:         s.spec.Dir,
		SysProcAttr: sysProcAttr(),
	}
	if s.spec.Sandbox.Level.On() {
		release, err := s.enclose(cmd, path, env)
		if err != nil {
			return err
		}
		defer release()
	}
	ws := &pty.Winsize{Rows: s.spec.Rows, Cols: s.spec.Cols}
	type started struct {
		f   *os.File
		err error
	}
	ch := make(chan started, 1)
	s.started = time.Now()
	// Fork from a fresh goroutine: it never runs on a thread locked with
	// LockOSThread, so the thread Pdeathsig is tied to lives as long as the
	// controller (see sysProcAttr).
	go func() {
		f, err := pty.StartWithSize(cmd, ws)
		ch <- started{f, err}
	}()
	st := <-ch
	if st.err != nil {
		return fmt.Errorf("pty.StartWithSize: %w", st.err)
	}
	s.cmd = cmd
	s.pid = cmd.Process.Pid
	if s.pty, err = nonblockingDup(st.f); err != nil {
		s.abandon()
		return err
	}
	if s.guard, err = guardGroup(s.pid); err != nil {
		s.pty.Close()
		s.abandon()
		return err
	}
	// While the agent starts up: off the path between two agents.
	reserveTranscripts(s.spec.RawPath, s.spec.TextPath)
	return nil
}

// enclose puts cmd, which runs path with env, inside the session's
// boundary. release is called once the process has started.
func (s *Session) enclose(cmd *exec.Cmd, path string, env []string) (release func(), err error) {
	home, _ := os.UserHomeDir()
	p := newPolicy(s.spec, s.made, absFrom(path, s.spec.Dir), env, home)
	rep, release, err := enclose(s.spec.Sandbox.Level, p, cmd)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	s.sandbox = &rep
	s.refusals = &refusalScanner{}
	return release, nil
}

// abandon ends a process that started but cannot be supervised: nothing
// may be left behind.
func (s *Session) abandon() {
	_ = signalGroup(s.pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// nonblockingDup returns a non-blocking duplicate of the pty master and
// closes the original. creack/pty hands back a blocking descriptor, on
// which Close does not interrupt a pending Read and deadlines do nothing; a
// non-blocking one is run through Go's poller, where both work. Fd() must
// not be called on the result (it would make it blocking again).
func nonblockingDup(f *os.File) (*os.File, error) {
	defer f.Close()
	// F_DUPFD_CLOEXEC, not dup: a concurrent fork must not inherit the
	// master, or that child would keep this terminal open.
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup pty master: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("set pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

func createTranscript(path string, limit int64) (*capWriter, *bufio.Writer, error) {
	if path == "" {
		return nil, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("transcript: %w", err)
	}
	// 0600: a transcript can hold whatever the agent printed, secrets
	// included.
	f := takeReserve(path)
	if f == nil {
		var err error
		if f, err = newTranscriptFile(path); err != nil {
			return nil, nil, fmt.Errorf("transcript: %w", err)
		}
	}
	c := newCapWriter(f, limit)
	return c, bufio.NewWriterSize(c, transcriptSize), nil
}

// newTranscriptFile creates path afresh. Whatever had the name goes first:
// a transcript's name is predictable, and a link an agent put there would
// otherwise be followed, and the file it leads to truncated.
func newTranscriptFile(path string) (*os.File, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
}

// cleanup releases what start acquired when the start failed.
func (s *Session) cleanup() {
	for _, c := range []*capWriter{s.raw, s.text} {
		if c != nil {
			c.f.Close()
		}
	}
	s.made.remove()
}

// Pid returns the leader's pid, which is also the process group id.
func (s *Session) Pid() int { return s.pid }

// Progress reports progress seen by the caller (for example the watched
// file changed): it restarts the stall window.
func (s *Session) Progress() { s.touch() }

func (s *Session) touch() { s.activity.Store(int64(time.Since(s.started))) }

// End asks for the session to end (EndCaller, with reason as the Detail):
// SIGTERM to the group, the grace period, SIGKILL. It returns at once; only
// the first call counts, and a session that already ended is unaffected.
func (s *Session) End(reason string) {
	s.endOnce.Do(func() {
		s.endReason = reason
		close(s.endCh)
	})
}

// Wait blocks until the session has ended, every process of its group has
// been killed and the leader reaped, and the transcripts are closed; then it
// returns the result. It may be called any number of times.
func (s *Session) Wait() Result {
	<-s.done
	return s.result
}

// Run starts a session and waits for it. A start failure gives an error and
// a Result whose Ending is EndStartFailed.
func Run(ctx context.Context, spec Spec) (Result, error) {
	s, err := Start(ctx, spec)
	if err != nil {
		now := time.Now()
		return Result{
			Started: now, Ended: now, ExitCode: -1,
			Ending: EndStartFailed, Detail: err.Error(),
		}, err
	}
	return s.Wait(), nil
}

// wait reaps the leader.
func (s *Session) wait() {
	// The error repeats what ProcessState says; nothing else can fail
	// here since no I/O goroutines were attached to the Cmd.
	_ = s.cmd.Wait()
	s.state = s.cmd.ProcessState
	close(s.exited)
}

// read copies the terminal's output to the transcripts, the rules and the
// observer until the end of output.
func (s *Session) read() {
	defer close(s.readerDone)
	buf := make([]byte, readSize)
	var plain, norm []byte
	for {
		n, err := s.pty.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			s.bytes.Add(int64(n))
			s.touch()
			if s.rawW != nil {
				// A write error sticks in the bufio.Writer and is
				// reported by the final Flush; the pty must keep being
				// read meanwhile or the child would block.
				_, _ = s.rawW.Write(chunk)
			}
			plain = s.strip.strip(plain[:0], chunk)
			norm = s.fold.fold(norm[:0], plain)
			if s.rules.active() {
				s.applyRules(norm)
			}
			if s.refusals != nil {
				s.refusals.feed(norm)
			}
			if s.spec.Observer != nil {
				s.spec.Observer(chunk)
			}
		}
		if err != nil {
			// EIO: every holder of the terminal has closed it, the normal
			// end of output on Linux. A deadline is the capped drain; a
			// closed file is the session tearing down.
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) &&
				!errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, fs.ErrClosed) {
				s.readErr = err
			}
			return
		}
	}
}

func (s *Session) applyRules(text []byte) {
	for _, m := range s.rules.check(text) {
		if m.rule.Reply != "" {
			s.writes <- []byte(m.rule.Reply)
		}
		if m.rule.Outcome != "" && s.blocked == nil {
			s.blocked = &m
			close(s.blockedCh)
		}
	}
}

// write types the initial input and the rules' replies into the terminal,
// in order, on its own goroutine so that a child that does not read cannot
// stall the output.
func (s *Session) write() {
	defer close(s.writerDone)
	for {
		select {
		case b := <-s.writes:
			if _, err := s.pty.Write(b); err != nil {
				return // the terminal is gone or closing
			}
		case <-s.closing:
			return
		}
	}
}

// supervise waits for a reason to end, ends the process group, drains the
// output and records the result. It is the only goroutine that signals.
func (s *Session) supervise(ctx context.Context) {
	ending, detail := s.awaitEnding(ctx)
	endedBy := EndedByController
	if ending == EndExited {
		endedBy = EndedBySelf
	} else {
		select {
		case <-s.exited:
			// It exited on its own in the same instant: say so.
			ending, detail, endedBy = EndExited, "", EndedBySelf
		default:
			s.terminate()
		}
	}
	// Always, even after a clean exit: a descendant that ignores SIGHUP
	// would otherwise keep the terminal open and the reader blocked. A
	// descendant that moved to a process group of its own (a shell with
	// job control, `set -m`) is still in the terminal's session: the
	// session is swept too, as crash recovery does.
	_ = signalGroup(s.pid, syscall.SIGKILL)
	killSession(s.pid)

	// Drain: the kernel hands over what is buffered, then EIO once the last
	// holder of the terminal is gone. A descendant that escaped the group
	// with setsid may hold it forever, so the wait is capped.
	drain := time.NewTimer(s.spec.Grace)
	select {
	case <-s.readerDone:
	case <-drain.C:
		_ = s.pty.SetReadDeadline(time.Now())
		<-s.readerDone
	}
	drain.Stop()
	awaitGroupExit(s.pid, s.spec.Grace)
	s.guardErr = s.guard.release()
	close(s.closing)
	s.pty.Close() // also unblocks a write stuck on a full terminal
	<-s.writerDone

	s.result = s.finish(ending, detail, endedBy)
	close(s.done)
}

// awaitEnding blocks until the session must end and says why.
func (s *Session) awaitEnding(ctx context.Context) (Ending, string) {
	var timeoutC, stallC <-chan time.Time
	if s.spec.Timeout > 0 {
		t := time.NewTimer(s.spec.Timeout - time.Since(s.started))
		defer t.Stop()
		timeoutC = t.C
	}
	var stall *time.Timer
	if s.spec.Stall > 0 {
		stall = time.NewTimer(s.spec.Stall)
		defer stall.Stop()
		stallC = stall.C
	}
	for {
		select {
		case <-s.exited:
			return EndExited, ""
		case <-s.blockedCh:
			return EndBlocked, ""
		case <-timeoutC:
			return EndTimeout, fmt.Sprintf("still running after the %s timeout", s.spec.Timeout)
		case <-stallC:
			// The timer runs from the last activity it knew of; activity
			// since then pushes the deadline back.
			idle := time.Since(s.started) - time.Duration(s.activity.Load())
			if idle < s.spec.Stall {
				stall.Reset(s.spec.Stall - idle)
				continue
			}
			return EndStalled, fmt.Sprintf("no output and no progress for %s", idle.Round(time.Millisecond))
		case <-s.endCh:
			return EndCaller, s.endReason
		case <-ctx.Done():
			return EndCancelled, fmt.Sprintf("cancelled: %v", context.Cause(ctx))
		}
	}
}

// terminate ends the process group politely, then not.
func (s *Session) terminate() {
	_ = signalGroup(s.pid, syscall.SIGTERM)
	grace := time.NewTimer(s.spec.Grace)
	defer grace.Stop()
	select {
	case <-s.exited:
	case <-grace.C:
	}
	_ = signalGroup(s.pid, syscall.SIGKILL)
	<-s.exited
}

// finish closes the transcripts, removes HOME and builds the result. The
// reader has finished, so its fields are safe to read.
func (s *Session) finish(ending Ending, detail, endedBy string) Result {
	r := Result{
		Started:  s.started,
		ExitCode: -1,
		Ending:   ending,
		EndedBy:  endedBy,
		Detail:   detail,
		Bytes:    s.bytes.Load(),
		RawPath:  s.spec.RawPath,
		TextPath: s.spec.TextPath,
		Pid:      s.pid,
		Sandbox:  s.sandbox,
	}
	if s.refusals != nil {
		s.refusals.close()
		s.sandbox.Refused = s.refusals.found
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Signaled():
			r.Signal = signalName(ws.Signal())
		case ws.Exited():
			r.ExitCode = ws.ExitStatus()
		}
	}
	// An Outcome rule that matched the last words of a process that then
	// exited by itself ("Not logged in", exit 1) is still that outcome.
	if s.blocked != nil && (ending == EndBlocked || ending == EndExited) {
		r.Ending = EndBlocked
		r.Matched = s.blocked.text
		r.RuleOutcome = s.blocked.rule.Outcome
		r.Detail = s.blocked.rule.Detail
	}
	if r.Ending == EndExited {
		if r.Signal != "" {
			r.Detail = "killed by " + r.Signal
		} else {
			r.Detail = fmt.Sprintf("exit code %d", r.ExitCode)
		}
	}
	var problems []error
	if s.readErr != nil {
		problems = append(problems, fmt.Errorf("pty read: %w", s.readErr))
	}
	problems = append(problems, s.guardErr)
	s.fold.close()
	problems = append(problems, closeTranscript("raw transcript", s.raw, s.rawW))
	problems = append(problems, closeTranscript("text transcript", s.text, s.textW))
	if err := s.made.remove(); err != nil {
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		if r.Detail != "" {
			r.Detail += "; "
		}
		r.Detail += err.Error()
	}
	r.Ended = time.Now()
	r.Duration = r.Ended.Sub(r.Started)
	return r
}

func closeTranscript(what string, c *capWriter, w *bufio.Writer) error {
	if c == nil {
		return nil
	}
	err := w.Flush()
	if ferr := c.finish(); err == nil {
		err = ferr
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
