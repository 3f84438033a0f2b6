package review

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// Defaults of a review.
const (
	DefaultMaxRounds = 3
	// ArtifactName is what the GitHub action names the artifact of the
	// output directory, and what the reproducing commands call it.
	ArtifactName = "walkie-review"
)

// DefaultAgents review when --agents is not given: two vendors.
var DefaultAgents = []string{"claude", "codex"}

// plan is a review whose input has been checked: every document exists
// at the head commit and changed since the base, every agent is
// configured, and nothing is in the way of the records.
type plan struct {
	opts      Options
	dir       string // where walkie runs
	root      string // the repository's top
	head      string
	base      string // as given
	baseSHA   string
	mergeBase string
	docs      []planDoc
	agents    []string
	mode      string
	out       string // absolute
	outInRepo bool
	patterns  []string
}

// planDoc is one document to review.
type planDoc struct {
	path string // from the top of the repository, slash-separated
	id   string
	text []byte // at the head commit
}

// bad is a review's bad input: what, what is wrong, and the fix.
func bad(what, msg, fix string) error { return &walkie.InputError{File: what, Msg: msg, Fix: fix} }

// makePlan checks everything a review needs before anything is written.
func makePlan(ctx context.Context, o Options) (*plan, error) {
	p := &plan{opts: o, mode: cmp.Or(o.Mode, walkie.ModeDebate), agents: o.Agents}
	if len(p.agents) == 0 {
		p.agents = DefaultAgents
	}
	if len(o.Docs) == 0 {
		return nil, bad("walkie review", "no document to review", "name the design documents: walkie review docs/design/NAME.md (or a pattern: 'docs/design/**/*.md')")
	}
	if err := p.checkSettings(); err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cmp.Or(o.Dir, "."))
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, bad(o.Dir, "the directory cannot be read: "+err.Error(), "run walkie review in the checkout of the change")
	}
	p.dir = dir
	if err := p.resolveCommits(ctx); err != nil {
		return nil, err
	}
	if err := p.findDocs(ctx); err != nil {
		return nil, err
	}
	return p, p.checkOut()
}

func (p *plan) checkSettings() error {
	o := p.opts
	switch p.mode {
	case walkie.ModeDebate, walkie.ModeRoundtable:
	default:
		return bad("--mode", fmt.Sprintf("unknown mode %q", p.mode), "use --mode debate (the reviewers take turns until all sign off) or --mode roundtable (the first agent revises, the others judge)")
	}
	if len(p.agents) < 2 {
		return bad("--agents", fmt.Sprintf("a review needs at least two agents, got %d", len(p.agents)), "name two or more, ideally from different vendors: --agents claude,codex")
	}
	cfg := o.Config
	if cfg == nil {
		cfg = config.Default()
	}
	for i, a := range p.agents {
		switch {
		case !walkie.ValidName(a):
			return bad("--agents", fmt.Sprintf("%q is not an agent name", a), "letters, digits, '.', '_' or '-', up to 32 characters")
		case slices.Contains(p.agents[:i], a):
			return bad("--agents", fmt.Sprintf("%s is named twice", a), "name each agent once; define a second agent in --config to run the same CLI twice")
		}
		if _, err := cfg.Agent(a); err != nil {
			return bad("--agents", err.Error(), "use a preset ("+strings.Join(config.PresetNames, ", ")+") or an agent defined in the file given with --config")
		}
	}
	if o.MaxRounds < 0 {
		return bad("--max-rounds", fmt.Sprintf("%d is negative", o.MaxRounds), fmt.Sprintf("give a positive cap, or leave it out for %d", DefaultMaxRounds))
	}
	if o.BudgetUSD < 0 {
		return bad("--budget", fmt.Sprintf("$%g is negative", o.BudgetUSD), "give the most the review may spend in USD, or leave it out for no cap")
	}
	return nil
}

// resolveCommits finds the repository, the head and the base.
func (p *plan) resolveCommits(ctx context.Context) error {
	root, err := repoRoot(ctx, p.dir)
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return bad("git", "git is not installed", "install git: walkie review reads the change from the repository")
	case err != nil:
		return bad(p.dir, "not in a git repository ("+err.Error()+")", "run walkie review in the checkout of the change (on GitHub: actions/checkout with fetch-depth: 0)")
	}
	p.root = root
	if p.head, err = resolveCommit(ctx, root, "HEAD"); err != nil {
		return err
	}
	if p.head == "" {
		return bad(root, "the repository has no commit at HEAD", "check out the change to review")
	}
	p.base = p.opts.Base
	if p.base == "" && p.opts.Event != nil && p.opts.Event.PullRequest != nil {
		p.base = p.opts.Event.PullRequest.BaseSHA
	}
	if p.base == "" {
		return bad("--base", "no base to compare the documents with", "pass --base REF (e.g. --base origin/main); on a pull_request event walkie takes the base from the event")
	}
	if p.baseSHA, err = resolveCommit(ctx, root, p.base); err != nil {
		return err
	}
	if p.baseSHA == "" {
		return bad("--base", fmt.Sprintf("the base %q does not resolve to a commit in %s", p.base, root),
			"fetch it first (on GitHub: actions/checkout with fetch-depth: 0; elsewhere: git fetch origin BRANCH), or correct the name")
	}
	if p.mergeBase, err = mergeBase(ctx, root, p.baseSHA, p.head); err != nil {
		return err
	}
	if p.mergeBase == "" {
		return bad("--base", fmt.Sprintf("the base %q (%s) and HEAD (%s) have no common ancestor", p.base, short(p.baseSHA), short(p.head)),
			"fetch the whole history (actions/checkout with fetch-depth: 0; git fetch --unshallow), or pick a base the change was made from")
	}
	return nil
}

// findDocs resolves the DOC arguments. A path must name a file of the
// head commit that changed since the merge base; a pattern stands for
// every such file it matches, possibly none.
func (p *plan) findDocs(ctx context.Context) error {
	changed, err := changedFiles(ctx, p.root, p.mergeBase, p.head)
	if err != nil {
		return err
	}
	var paths []string
	for _, arg := range p.opts.Docs {
		if isPattern(arg) {
			p.patterns = append(p.patterns, arg)
			// Relative to where walkie runs, as the shell would read it.
			m, err := changedFiles(ctx, p.dir, p.mergeBase, p.head, ":(glob)"+arg)
			if err != nil {
				return bad(arg, "not a pattern git understands: "+err.Error(), "use git's glob syntax, e.g. 'docs/design/**/*.md'")
			}
			paths = append(paths, m...)
			continue
		}
		rel, err := p.docPath(ctx, arg, changed)
		if err != nil {
			return err
		}
		paths = append(paths, rel)
	}
	ids := map[string]bool{}
	for _, rel := range paths {
		if slices.ContainsFunc(p.docs, func(d planDoc) bool { return d.path == rel }) {
			continue
		}
		d := planDoc{path: rel, id: uniqueID(docID(rel), ids)}
		if d.text, err = p.docText(ctx, rel); err != nil {
			return err
		}
		p.docs = append(p.docs, d)
	}
	return nil
}

// docPath checks one DOC path and returns it from the top of the repository.
func (p *plan) docPath(ctx context.Context, arg string, changed []string) (string, error) {
	abs := arg
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(p.dir, arg)
	}
	rel, err := filepath.Rel(p.root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", bad(arg, "is outside the repository "+p.root, "name a document inside the checkout")
	}
	rel = filepath.ToSlash(rel)
	size, err := blobSize(ctx, p.root, p.head, rel)
	if err != nil {
		return "", err
	}
	if size < 0 {
		if _, serr := os.Stat(abs); serr == nil {
			return "", bad(arg, "exists but is not a file of the head commit "+short(p.head), "commit it: walkie reviews what the change holds, not the work tree")
		}
		return "", bad(arg, "does not exist at the head commit "+short(p.head), "check the path (it is relative to where walkie runs)")
	}
	if !slices.Contains(changed, rel) {
		return "", bad(arg, fmt.Sprintf("is not in the diff: it did not change between %s (merge base %s) and HEAD", p.base, short(p.mergeBase)),
			"review documents the change adds or edits (see git diff --name-only "+short(p.mergeBase)+" HEAD), or pass another --base")
	}
	return rel, nil
}

func (p *plan) docText(ctx context.Context, rel string) ([]byte, error) {
	size, err := blobSize(ctx, p.root, p.head, rel)
	if err != nil {
		return nil, err
	}
	if size > MaxDocBytes {
		return nil, bad(rel, fmt.Sprintf("is %d KiB, more than the %d KiB a review reads", size>>10, MaxDocBytes>>10), "split the design into smaller documents")
	}
	text, err := showFile(ctx, p.root, p.head, rel)
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(text) || strings.ContainsRune(string(text), 0) {
		return nil, bad(rel, "is not UTF-8 text", "review text documents (markdown); save it as UTF-8")
	}
	return text, nil
}

// checkOut makes sure no earlier review's record is in the way of an
// --out given; without one, the review gets a new directory (makeOut).
func (p *plan) checkOut() error {
	if p.opts.Out == "" {
		return nil
	}
	out := p.opts.Out
	if !filepath.IsAbs(out) {
		out = filepath.Join(p.dir, out)
	}
	p.out = filepath.Clean(out)
	if rel, err := filepath.Rel(p.root, p.out); err == nil && filepath.IsLocal(rel) {
		p.outInRepo = true
	}
	for _, d := range p.docs {
		dir := filepath.Join(p.out, d.id)
		if _, err := os.Lstat(dir); err == nil {
			return bad(dir, "holds an earlier review", "remove it, pass another --out, or leave --out out for a new directory")
		}
	}
	return nil
}

// makeOut makes the output directory, once the input is known to be
// good: the --out given, or a new one under the temporary directory.
func (p *plan) makeOut() error {
	if p.out != "" {
		if err := os.MkdirAll(p.out, 0o755); err != nil {
			return fmt.Errorf("make %s: %w", p.out, err)
		}
		return nil
	}
	parent := cmp.Or(p.opts.TempDir, os.TempDir())
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("make %s: %w", parent, err)
	}
	out, err := os.MkdirTemp(parent, ArtifactName+"-run-*")
	if err != nil {
		return fmt.Errorf("make the output directory: %w", err)
	}
	if out, err = filepath.EvalSymlinks(out); err != nil {
		return fmt.Errorf("make the output directory: %w", err)
	}
	p.out = out
	if rel, err := filepath.Rel(p.root, p.out); err == nil && filepath.IsLocal(rel) {
		p.outInRepo = true
	}
	return nil
}

var notID = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// docID names a document's debate: "review-" and its path, e.g.
// docs/design/cache.md → review-docs-design-cache.
func docID(rel string) string {
	s := strings.TrimSuffix(rel, filepath.Ext(rel))
	s = strings.Trim(notID.ReplaceAllString(s, "-"), "-.")
	s = "review-" + s
	if len(s) > 56 {
		s = strings.TrimRight(s[:56], "-.")
	}
	return s
}

// uniqueID makes id unique among seen (two paths can fold to one id).
func uniqueID(id string, seen map[string]bool) string {
	out := id
	for n := 2; seen[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	seen[out] = true
	return out
}
