package review

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/briefing"
	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
	"github.com/walkie-sh/walkie/walkie/mdsafe"
)

// Options configure a review.
type Options struct {
	// Dir is where the review runs (DOC paths and patterns are relative
	// to it); "" is the current directory.
	Dir string
	// Docs are the documents: paths, or git glob patterns standing for
	// every changed file they match.
	Docs []string
	// Base is the commit the change is compared with; "" takes the pull
	// request's base from Event.
	Base      string
	Agents    []string // default DefaultAgents
	Mode      string   // walkie.ModeDebate (default) or walkie.ModeRoundtable
	MaxRounds int      // 0 is DefaultMaxRounds
	BudgetUSD float64  // per document; 0 is the config's (none by default)
	// Out is where records and reports go; "" is a new directory
	// "walkie-review-run-*" under TempDir, so a second run never meets the
	// first one's records.
	Out string
	// TempDir holds the new directory when Out is ""; "" is the system's
	// (os.TempDir).
	TempDir string
	Config  *config.Config
	// ConfigPath is the file Config was read from, as given (--config),
	// for the command that reproduces the review; "" for the presets.
	ConfigPath string
	Event      *Event // the CI event, if any
	// ApprovedBy says who approved the generated briefing, for the
	// record: the CI run, e.g. "GitHub Actions run URL".
	ApprovedBy string
	Log        *zap.Logger
	Observe    func(controller.Event)
}

// Run reviews every document: one debate each, one after the other. It
// returns an error only for bad input (a *walkie.InputError, before
// anything is written) or when the reports cannot be written; a debate
// that could not finish is a failed verdict in the result.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	p, err := makePlan(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := p.makeOut(); err != nil {
		return nil, err
	}
	res := &Result{Version: ReportVersion, Mode: p.mode, Agents: p.agents, Head: p.head, Base: p.base, BaseSHA: p.baseSHA,
		MergeBase: p.mergeBase, Out: p.out, Patterns: p.patterns, Docs: []DocResult{}, Warnings: []string{}}
	if o.Event != nil && o.Event.PullRequest != nil {
		pr := *o.Event.PullRequest
		pr.Body = "" // in the briefing; the report need not repeat it
		res.PullRequest = &pr
	}
	if p.outInRepo {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the records are inside the checkout (%s): agent CLIs may read project settings from the directories above their copy; in CI pass --out outside the checkout", p.out))
	}
	before, serr := statusSnapshot(ctx, p.root, p.outRel())
	for _, d := range p.docs {
		var dr DocResult
		if ctx.Err() != nil {
			dr = DocResult{Doc: d.path, ID: d.id, Verdict: VerdictFailed, Failure: FailureInterrupted, Status: walkie.StatusOpen,
				Reason: "not started: the run was cancelled first; this is not a rejection"}
		} else {
			dr = p.runDoc(ctx, d)
		}
		res.Docs = append(res.Docs, dr)
	}
	if after, aerr := statusSnapshot(context.WithoutCancel(ctx), p.root, p.outRel()); serr == nil && aerr == nil && after != before {
		res.Warnings = append(res.Warnings, "the checkout changed while the agents ran (git status differs from before the review): something wrote outside the agents' copies")
	}
	res.Reproduce = p.reproduce()
	res.summarize()
	return res, WriteReports(res)
}

// outRel is the output directory from the top of the repository, or ""
// when it is outside.
func (p *plan) outRel() string {
	if !p.outInRepo {
		return ""
	}
	rel, _ := filepath.Rel(p.root, p.out)
	return filepath.ToSlash(rel)
}

// runDoc runs one document's debate and reports it.
func (p *plan) runDoc(ctx context.Context, d planDoc) DocResult {
	log := p.opts.Log.With(zap.String("doc", d.path)) // the controller adds the debate
	dir := filepath.Join(p.out, d.id)
	name := d.id + walkie.FileSuffix
	file := filepath.Join(dir, name)
	dr := DocResult{Doc: d.path, ID: d.id, Record: file, Status: walkie.StatusOpen, MaxRounds: p.opts.MaxRounds,
		BudgetUSD: p.opts.BudgetUSD, Parties: []Party{}, Objections: []Objection{}, Costs: []AgentCost{},
		Failures: []string{}, Discarded: []string{}, LeftOut: []string{}}
	fail := func(err error) DocResult {
		// The report says it; the log keeps it for --log-format json.
		log.Info("review failed", zap.Error(err))
		dr.Verdict, dr.Failure, dr.Reason = VerdictFailed, FailureWalkie, "walkie could not run the review: "+err.Error()+"; this is not a rejection"
		return dr
	}
	ws, err := makeWorkspace(ctx, p.root, p.head, dir, name)
	if err != nil {
		return fail(err)
	}
	dr.LeftOut = append(dr.LeftOut, ws.left...)
	defer func() {
		if err := ws.clear(); err != nil {
			log.Warn("the agents' copy was not removed", zap.Error(err))
		}
	}()
	if err := p.openDebate(ctx, d, file, log); err != nil {
		return fail(err)
	}
	cfg := p.config()
	dr.BudgetUSD = cfg.BudgetUSD
	log.Info("review started", zap.Strings("agents", p.agents), zap.String("mode", p.mode))
	p.note(fmt.Sprintf("reviewing %s: %s, %s, at most %s", d.path, andList(p.agents), p.mode, walkie.Count(p.opts.MaxRounds, "round", "rounds")))
	sum, runErr := controller.Run(ctx, controller.Options{File: file, Config: cfg, Log: log, Observe: p.opts.Observe})
	if err := p.collect(&dr, d, ws, sum, runErr); err != nil {
		return fail(err)
	}
	log.Info("review ended", zap.String("verdict", dr.Verdict), zap.String("reason", dr.Reason))
	return dr
}

// openDebate writes the record with its generated briefing, pins the
// briefing, and records in the record itself who approved it.
func (p *plan) openDebate(ctx context.Context, d planDoc, file string, log *zap.Logger) error {
	diff, err := fileDiff(ctx, p.root, p.mergeBase, p.head, d.path)
	if err != nil {
		return err
	}
	var pr *PullRequest
	if p.opts.Event != nil {
		pr = p.opts.Event.PullRequest
	}
	text := writeBriefing(briefData{Doc: d.path, Text: d.text, Diff: diff, Head: p.head, Base: p.base, BaseSHA: p.baseSHA,
		MergeBase: p.mergeBase, PR: pr, Mode: p.mode, Agents: p.agents})
	init := walkie.InitOptions{ID: d.id, MaxRounds: p.opts.MaxRounds, Briefing: []byte(text)}
	if p.mode == walkie.ModeRoundtable {
		init.Mode, init.Implementer, init.Reviewers, init.Workspace = walkie.ModeRoundtable, p.agents[0], p.agents[1:], "."
		// The document must still be there, and hold text: what the
		// grader can check of a design. The reviewers judge the rest.
		init.Grader = walkie.Command{Argv: []string{"test", "-s", "{workspace}/" + d.path}}
	} else {
		init.Participants = p.agents
	}
	if err := walkie.Init(file, init); err != nil {
		return fmt.Errorf("write the record: %w", err)
	}
	doc, err := walkie.Load(file)
	if err != nil {
		return err
	}
	a, err := briefing.Approve(file, doc.Briefing)
	if err != nil {
		return fmt.Errorf("pin the briefing: %w", err)
	}
	if a.NotKept != nil {
		log.Warn("approved, but the copy kept for later diffs was not written", zap.Error(a.NotKept))
	}
	hash := a.Hash
	by := cmp.Or(p.opts.ApprovedBy, "walkie review, run without a CI")
	note := fmt.Sprintf("Briefing generated by walkie review from %s at commit %s (compared with %s, merge base %s) and approved by CI, not by a person: %s. Briefing sha256 %s.",
		mdsafe.Text(d.path), p.head, mdsafe.Text(p.base), p.mergeBase, oneLine(by), hash)
	if _, err := walkie.Append(file, walkie.Post{Supervisor: true, Body: []byte(note + "\n")}); err != nil {
		return fmt.Errorf("record the approval: %w", err)
	}
	// Expected, and said in the record: not a warning.
	log.Info("briefing approved by CI", zap.String("briefing_sha256", hash), zap.String("approved_by", by))
	return nil
}

// note tells the observer (the progress lines on standard error) what
// the review does next.
func (p *plan) note(line string) {
	if p.opts.Observe != nil {
		p.opts.Observe(controller.Event{Kind: controller.EventNote, Line: line})
	}
}

// reproduce is how to run the same review on one's own machine.
func (p *plan) reproduce() []string {
	var cmds []string
	switch pr := p.pullRequest(); {
	case pr != nil && pr.HeadSHA == p.head:
		cmds = append(cmds, fmt.Sprintf("git fetch origin pull/%d/head && git checkout %s", pr.Number, p.head))
	case pr != nil:
		// Actions checks out the merge of the pull request into its base.
		cmds = append(cmds, fmt.Sprintf("git fetch origin pull/%d/merge && git checkout FETCH_HEAD   # the merge commit reviewed was %s", pr.Number, p.head))
	default:
		cmds = append(cmds, "git checkout "+p.head)
	}
	args := []string{"walkie", "review"}
	for _, d := range p.docs {
		args = append(args, shellQuote(d.path))
	}
	args = append(args, "--base", p.baseSHA, "--agents", strings.Join(p.agents, ","), "--max-rounds", fmt.Sprint(p.opts.MaxRounds))
	if p.mode != walkie.ModeDebate {
		args = append(args, "--mode", p.mode)
	}
	if p.opts.BudgetUSD > 0 {
		args = append(args, "--budget", fmt.Sprint(p.opts.BudgetUSD))
	}
	line := strings.Join(args, " ")
	if path := p.opts.ConfigPath; path != "" {
		// The agents it names ("no agent alice" without it).
		line += " --config " + shellQuote(p.configArg(path))
		if filepath.IsAbs(p.configArg(path)) {
			line += "   # not in the checkout: a copy of the run's config"
		}
	}
	cmds = append(cmds, line)
	for _, d := range p.docs {
		cmds = append(cmds, fmt.Sprintf("walkie verify %s/%s/%s%s   # the record, from the artifact", ArtifactName, d.id, d.id, walkie.FileSuffix))
	}
	return cmds
}

// configArg is the config's path as the reproducing command gives it:
// from the top of the repository when it is in the checkout (the
// commands run there), else absolute.
func (p *plan) configArg(path string) string {
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.dir, path)
	}
	if rel, err := filepath.Rel(p.root, abs); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return abs
}

func (p *plan) pullRequest() *PullRequest {
	if p.opts.Event != nil {
		return p.opts.Event.PullRequest
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errAsInput reports whether err is bad input the controller found, such
// as an agent whose command cannot start.
func errAsInput(err error) bool {
	var ie *walkie.InputError
	return errors.Is(err, controller.ErrBadInput) || errors.As(err, &ie)
}

// config is the configuration the review's debates run under: the given
// one, with --budget in place of its budget and the agents' keys behind
// the credential proxy.
func (p *plan) config() *config.Config {
	cfg := *p.opts.Config
	// A review reads a pull request someone else wrote: key_proxy: auto
	// keeps the agents' API keys out of their shells here.
	cfg.ProxyKeys = true
	if p.opts.BudgetUSD > 0 {
		cfg.BudgetUSD = p.opts.BudgetUSD
	}
	return &cfg
}
