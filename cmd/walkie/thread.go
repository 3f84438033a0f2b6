package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/gitrepo/sshsig"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// Review threads and channels (docs/review-threads.md): walkie thread new,
// walkie status DIR, and what walkie post adds for typed entries.

func threadCommand(f *Factory, runF func(context.Context, *threadNewOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "thread",
		Usage: "review threads in a channel: a directory with one open thread at a time",
		Description: `walkie thread new starts a thread; walkie status DIR lists a channel's
threads, the open one marked (--json and --jq for scripts: walkie status DIR
--jq '.threads[] | select(.status == "open") | .file').`,
		Subcommands: []*cli.Command{{
			Name:      "new",
			Usage:     "start a review thread in a channel, unless another is open",
			ArgsUsage: "DIR SLUG",
			Description: `Creates DIR/SLUG.walkie.md, a review thread (format 3: typed entries and
refs) between the --agents, the first of them the builder. DIR becomes a
channel: at most one of its threads is open at a time, so this is refused
(exit 3), naming the open thread, until that one is closed (an entry of type
close) or converged. The channel's doorbell, DIR/.walkie/channel.json, names
the open thread; walkie watch --once DIR and walkie serve --dir DIR act only
on it.

Without --briefing the thread gets walkie's briefing of the review vocabulary
(how a turn says its type and refs). --approve pins the briefing at once.
The thread is bound to the git repository DIR is in (refs must resolve
there; a verdict must name its branch's head); --repo names another,
--no-repo binds it to none; --git-commit makes every entry a commit
of the record; --worktree runs each agent's session in a git worktree of its
own, starting at --base until the thread cites a commit; --test names the
thread's test command, which walkie runs at the cited commit to check a
verdict's count of passing tests.

EXAMPLES:
   walkie thread new reviews login-fix --agents claude,codex --repo .. --approve
   walkie thread new reviews login-fix --agents claude,codex --repo .. --git-commit --worktree --base main`,
			Flags: append([]cli.Flag{
				&cli.StringSliceFlag{Name: "agents", Usage: "the builder, then the reviewer (and more), comma separated"},
				&cli.IntFlag{Name: "max-rounds", Value: 6, Usage: "round cap; a round is one turn by each participant"},
				&cli.StringFlag{Name: "briefing", Usage: "file whose text becomes the briefing, or - for standard input (default: walkie's review briefing)"},
				&cli.BoolFlag{Name: "approve", Usage: "pin the briefing now (walkie brief approve)"},
				&cli.BoolFlag{Name: "no-repo", Category: "review thread", Usage: "bind the thread to no git repository, not even the one DIR is in (refs are then not checked)"},
				copyInitFlag(),
			}, threadFlags()...),
			Action: func(c *cli.Context) error {
				if c.NArg() != 2 {
					return withCode(exitBadInput, fmt.Errorf("thread new needs DIR and SLUG (got %s); see `walkie thread new --help`", argCount(c.NArg())))
				}
				opts := &threadNewOptions{IO: f.IO, Dir: c.Args().Get(0), Slug: c.Args().Get(1), Briefing: c.String("briefing")}
				var err error
				if opts.Init, err = debateInit(c); err != nil {
					return err
				}
				if err := threadOptions(c, &opts.Init); err != nil {
					return err
				}
				opts.Init.Approve = c.Bool("approve")
				if opts.NoRepo = c.Bool("no-repo"); opts.NoRepo && opts.Init.Repo != "" {
					return withCode(exitBadInput, errors.New("give --repo (the repository to bind the thread to) or --no-repo (none), not both"))
				}
				return runWith(c.Context, runF, threadNew, opts)
			},
		}},
	}
}

// threadFlags are the flags of a review thread's front matter, for
// walkie init and walkie thread new.
func threadFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "typed", Category: "review thread", Usage: "format 3: entries may carry types and refs (implied by the flags below)"},
		&cli.StringFlag{Name: "repo", Category: "review thread", Usage: "bind the record to this git repository, relative to FILE's directory"},
		&cli.BoolFlag{Name: "git-commit", Category: "review thread", Usage: "make every recorded entry a commit of the record (git: commit)"},
		&cli.BoolFlag{Name: "worktree", Category: "review thread", Usage: "run each agent's session in a git worktree of its own (workspace: worktree)"},
		&cli.StringFlag{Name: "base", Category: "review thread", Usage: "where worktrees start until the record cites a commit (a branch or a sha)"},
		&cli.StringFlag{Name: "test", Category: "review thread", Usage: "the thread's test command (sh -c): a verdict saying how many tests pass is held to what it prints at the cited commit"},
		&cli.StringFlag{Name: "test-passed", Category: "review thread", Usage: "the pattern of an output line of --test that reports one passing test (default: go test -v's)"},
	}
}

// threadOptions adds the review-thread flags to o.
func threadOptions(c *cli.Context, o *walkie.InitOptions) error {
	o.Typed, o.Repo, o.Base = c.Bool("typed"), c.String("repo"), c.String("base")
	o.Test, o.TestPassed = walkie.Command{Shell: c.String("test")}, c.String("test-passed")
	if c.Bool("git-commit") {
		o.Git = walkie.GitCommit
	}
	if c.Bool("worktree") {
		if o.Mode == walkie.ModeRoundtable {
			return withCode(exitBadInput, fmt.Errorf("--worktree is for a debate's sessions: a round table's implementer works in its --workspace, which its reviewers judge a frozen copy of"))
		}
		o.Workspace = walkie.WorkspaceWorktree
	}
	return nil
}

// threadNewOptions are walkie thread new's: where, and the thread's
// front matter.
type threadNewOptions struct {
	IO        *IOStreams
	Dir, Slug string
	Init      walkie.InitOptions
	Briefing  string // a file, or - for standard input; "": walkie's review briefing
	// NoRepo binds the thread to no repository; without it and --repo,
	// it is bound to the one Dir is in.
	NoRepo bool
}

func threadNew(ctx context.Context, opts *threadNewOptions) error {
	o := opts.Init
	var err error
	if o.Repo == "" && !opts.NoRepo {
		if o.Repo, err = enclosingRepo(ctx, opts.Dir); err != nil {
			return err
		}
	}
	if p := opts.Briefing; p != "" {
		if o.Briefing, err = readBriefing(opts.IO.In, p); err != nil {
			return err
		}
	} else {
		o.Briefing = []byte(threadBriefing(o))
	}
	file, err := walkie.NewThread(opts.Dir, opts.Slug, o)
	if err != nil {
		return err
	}
	if o.Git == walkie.GitCommit {
		// The side files stay out of git from the first one on.
		if err := gitrepo.WriteIgnore(file); err != nil {
			return err
		}
	}
	note := "approve the briefing with walkie brief approve " + file
	if o.Approve {
		note = "briefing approved"
	}
	bound := "bound to no git repository, so refs are not checked (--repo binds it)"
	if o.Repo != "" {
		bound = "bound to the git repository at " + o.Repo + ", where refs must resolve"
	}
	review := "reviews"
	if len(o.Participants) > 2 {
		review = "review"
	}
	fmt.Fprintf(opts.IO.Out, "created thread %s (%s builds, %s %s); %s; %s\n", file, o.Participants[0], term.AndList(o.Participants[1:]), review, bound, note)
	return nil
}

// enclosingRepo is the top of the git work tree dir is in, relative to
// dir (as --repo is given), or "" when it is in none. dir may not exist
// yet: its nearest existing parent is asked.
func enclosingRepo(ctx context.Context, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	at := abs
	for {
		if fi, err := os.Stat(at); err == nil && fi.IsDir() {
			break
		}
		parent := filepath.Dir(at)
		if parent == at {
			return "", nil
		}
		at = parent
	}
	r, err := gitrepo.Open(ctx, at)
	switch {
	case errors.Is(err, gitrepo.ErrNotRepo), errors.Is(err, exec.ErrNotFound):
		return "", nil // not in a repository, or no git to ask: unbound, as said
	case err != nil:
		return "", fmt.Errorf("find the git repository %s is in: %w", dir, err)
	}
	// Both sides with their links resolved: a temporary directory under
	// a linked /tmp would otherwise seem outside the repository.
	from, err := filepath.EvalSymlinks(at)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(filepath.Join(from, strings.TrimPrefix(abs, at)), r.Root)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// threadBriefing is walkie's briefing of a review thread: the vocabulary,
// and what the thread's front matter makes of it.
func threadBriefing(o walkie.InitOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This is a review thread: %s builds, %s reviews. One turn each, in that order.\n\n", o.Participants[0], strings.Join(o.Participants[1:], " and "))
	b.WriteString(`End every turn with trailer lines saying what it is, in one block at the
very end (right before a sign-off, if you sign):

    Type: review-request
    Refs: main@3f2a9c1

Types: review-request (please review this commit), verdict (with a line
Verdict: approve or Verdict: changes-requested), fix-report (the changes
asked for are in this commit), question, info, close (ends the thread; its
text is the outcome). Refs: BRANCH@SHA, SHA or a path, comma separated. A
verdict and a fix-report must cite a ref.

- The builder asks for a review citing the commit, e.g. main@3f2a9c1.
- The reviewer checks out and tests that commit itself, never trusting what this thread says about the repository, and answers with a verdict citing the branch's head it tested and what it checked (e.g. 27 tests pass).
- The builder answers changes requested with a fix-report citing the new commit; the reviewer reviews that one.
- Either closes the thread once the work is merged or abandoned.
`)
	if o.Repo != "" {
		b.WriteString("\nEvery ref must name something in the repository, and a verdict must name\nthe current head of its branch: a verdict on a commit the branch has moved\npast is refused.\n")
	}
	if !o.Test.IsZero() {
		fmt.Fprintf(&b, "\nA verdict that says how many tests pass (\"27 tests pass\") is checked: walkie\nruns `%s` itself at the commit the verdict cites, and refuses a count\nit does not see there.\n", o.Test)
	}
	if o.Workspace == walkie.WorkspaceWorktree {
		b.WriteString("\nEach turn runs in a git worktree of its own (its path is in WALKIE_WORKTREE),\non a branch named in WALKIE_BRANCH, started at the last commit this thread\ncites. Commit your work there and cite it as that branch @ the commit.\n")
	}
	return b.String()
}

// dirArg reports whether the one argument is a directory.
func dirArg(c *cli.Context) (string, bool) {
	if c.NArg() != 1 {
		return "", false
	}
	fi, err := os.Stat(c.Args().First())
	return c.Args().First(), err == nil && fi.IsDir()
}

// channelView is walkie status DIR --json.
type channelView struct {
	Dir     string                 `json:"dir"`
	Channel bool                   `json:"channel"`
	Open    string                 `json:"open,omitempty"` // the open thread's file
	Threads []*controller.Standing `json:"threads"`
}

// statusDir lists the walkie files in a directory (a channel's threads).
func statusDir(o *statusOptions) error {
	dir := o.Dir
	files, err := walkie.Threads(dir)
	if err != nil {
		return withCode(exitBadInput, err)
	}
	v := channelView{Dir: dir, Channel: walkie.IsChannel(dir), Threads: []*controller.Standing{}}
	if v.Channel {
		ch, err := walkie.LoadChannel(dir)
		if err != nil {
			return err
		}
		if ch.Open != nil {
			v.Open = filepath.Join(dir, ch.Open.File)
		}
	}
	for _, f := range files {
		_, dv, err := loadStanding(f, o.Stand)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		v.Threads = append(v.Threads, dv)
	}
	if o.JSON != nil {
		return o.JSON.Write(o.IO.Out, v)
	}
	return writeClean(o.IO.Out, func(w io.Writer) error { return printChannel(w, v) })
}

func printChannel(w io.Writer, v channelView) error {
	what := "directory"
	if v.Channel {
		what = "channel"
	}
	var head string
	switch {
	case v.Open != "":
		head = walkie.Count(len(v.Threads), "thread", "threads") + ", open: " + filepath.Base(v.Open)
	case v.Channel:
		head = walkie.Count(len(v.Threads), "thread", "threads") + ", no thread open"
	default:
		// Not a channel: its debates are not threads, and any number of
		// them may be open at once.
		head = walkie.Count(len(v.Threads), "debate", "debates") + statusCounts(v.Threads)
	}
	fmt.Fprintf(w, "%s %s (%s)\n", what, v.Dir, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range v.Threads {
		mark := " "
		if v.Open != "" && filepath.Base(t.File) == filepath.Base(v.Open) {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\n", mark, filepath.Base(t.File), t.Status, threadLine(t))
	}
	return tw.Flush()
}

// statusCounts is ": 2 open, 1 converged", most first ("" for none).
func statusCounts(ts []*controller.Standing) string {
	n := map[string]int{}
	var order []string
	for _, t := range ts {
		if n[t.Status] == 0 {
			order = append(order, t.Status)
		}
		n[t.Status]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return n[b] - n[a] })
	var parts []string
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// threadLine is one thread's state after its status: whose turn and the
// last entry's type and refs, or why it ended.
func threadLine(t *controller.Standing) string {
	var parts []string
	if t.Whose != "" {
		parts = append(parts, fmt.Sprintf("turn %d · %s", t.NextTurn, t.Whose))
	} else if t.Reason != "" {
		parts = append(parts, t.Reason)
	}
	if e := t.LastEntry; e != nil && e.Type != "" {
		last := "last: " + strings.TrimSpace(e.Type+" "+e.Verdict)
		if len(e.Refs) > 0 {
			last += " " + strings.Join(shortRefs(e.Refs), ",")
		}
		parts = append(parts, last)
	}
	return strings.Join(parts, "   ")
}

// shortRefs abbreviates the full ids of refs as people read them in a
// line; the record and --json keep them whole.
func shortRefs(refs []string) []string {
	out := make([]string, len(refs))
	for i, s := range refs {
		out[i] = s
		if r, err := walkie.ParseRef(s); err == nil && len(r.SHA) > 12 {
			r.SHA = r.SHA[:12]
			out[i] = r.String()
		}
	}
	return out
}

// postTags reads walkie post's --type, --verdict and --refs, and opens the
// bound repository to check them in unless --verify-refs=false.
func postTags(ctx context.Context, o *postOptions, meta *walkie.Meta) (walkie.Tags, walkie.RefResolver, error) {
	file := o.File
	t := walkie.Tags{Type: o.Type, Verdict: o.Verdict}
	if s := o.Refs; s != "" {
		refs, err := walkie.ParseRefs(s)
		if err != nil {
			return t, nil, withCode(exitBadInput, fmt.Errorf("--refs %s: %w", s, err))
		}
		t.Refs = refs
	}
	if !meta.Bound() || !o.VerifyRefs {
		return t, nil, nil
	}
	repo, err := gitrepo.Open(ctx, meta.RepoDir(file))
	if err != nil {
		return t, nil, withCode(exitBadInput, fmt.Errorf("%s is bound to repo: %s, which walkie cannot read (%w); fix repo: in its front matter, or post with --verify-refs=false", file, meta.Repo, err))
	}
	return t, repo.Resolver(ctx), nil
}

// postSigner is the signer of walkie post --signing-key, nil without
// one. A signed entry stands for a person: inside a session walkie
// started (an agent's), it is refused.
func postSigner(key string) (*sshsig.Signer, error) {
	if key == "" {
		return nil, nil
	}
	if os.Getenv(session.SessionVar) != "" {
		return nil, withCode(exitRefused, fmt.Errorf("post refused: --signing-key signs for a person, and this runs inside a session walkie started (%s is set): an agent's entry is never signed as a person's", session.SessionVar))
	}
	s, err := sshsig.NewSigner(key)
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("--signing-key: %w", err))
	}
	return s, nil
}

// signPosted signs the entry just posted, when there is a signer.
func signPosted(ctx context.Context, file string, seq int, s *sshsig.Signer) error {
	if s == nil {
		return nil
	}
	err := walkie.SignEntry(file, seq, func(msg []byte) (string, error) { return s.Sign(ctx, msg) })
	if err != nil {
		return fmt.Errorf("the entry is recorded (seq %d), but not signed: %w", seq, err)
	}
	return nil
}

// commitRecord makes the entries just recorded commits of the record
// (git: commit). The entry is recorded whatever git says: a failure is
// reported, and the next commit catches up.
func commitRecord(ctx context.Context, file string, meta *walkie.Meta, stderr io.Writer) {
	if !meta.CommitsEntries() {
		return
	}
	if _, err := gitrepo.CommitEntries(ctx, file); err != nil {
		fmt.Fprintf(stderr, "walkie: warning: git: commit: %v (the entry is recorded; the next commit catches up)\n", err)
	}
}
