package walkie

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The front matter of a review thread (format 3): which git repository
// the record is bound to, which rules its entries' refs obey, whether
// each entry becomes a commit, and whether agents work in worktrees.

// GitCommit is the value of `git:` that makes every recorded entry a
// commit of the record.
const GitCommit = "commit"

// WorkspaceWorktree is the value of a debate's `workspace:` that runs
// each unattended session in a git worktree of its own.
const WorkspaceWorktree = "worktree"

// IsTyped reports whether the file's format has entry types and refs.
func (m *Meta) IsTyped() bool { return m.Walkie >= FormatTyped }

// Bound reports whether the record is bound to a git repository, whose
// refs its entries' refs must name.
func (m *Meta) Bound() bool { return m.Repo != "" }

// RepoDir is the bound repository's directory (repo:, relative to the
// file's directory), or "" when the record is not bound.
func (m *Meta) RepoDir(file string) string {
	if m.Repo == "" {
		return ""
	}
	if filepath.IsAbs(m.Repo) {
		return filepath.Clean(m.Repo)
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(file), m.Repo))
	if err != nil {
		return filepath.Join(filepath.Dir(file), m.Repo)
	}
	return abs
}

// RefsRequired reports whether an entry of type typ must cite a ref:
// require_refs, by default a verdict and a fix-report.
func (m *Meta) RefsRequired(typ string) bool {
	if typ == "" {
		return false
	}
	if m.RequireRefs == nil {
		return slices.Contains(DefaultRequireRefs, typ)
	}
	return slices.Contains(*m.RequireRefs, typ)
}

// FreshVerdictsRequired reports whether a verdict must name its branch's
// current head: in a bound record, unless fresh_verdicts is false.
func (m *Meta) FreshVerdictsRequired() bool {
	return m.Bound() && (m.FreshVerdicts == nil || *m.FreshVerdicts)
}

// CommitsEntries reports whether every recorded entry becomes a commit.
func (m *Meta) CommitsEntries() bool { return m.Git == GitCommit }

// Worktrees reports whether the debate runs each unattended session in a
// git worktree of its own (an agent's config can ask for it too).
func (m *Meta) Worktrees() bool { return !m.IsRoundtable() && m.Workspace == WorkspaceWorktree }

// validateReview checks the review-thread keys: only in format 3, each a
// value walkie knows.
func (m *Meta) validateReview(bad func(key, msg, fix string) error) error {
	for _, k := range []struct {
		key string
		set bool
	}{{"repo", m.Repo != ""}, {"require_refs", m.RequireRefs != nil}, {"fresh_verdicts", m.FreshVerdicts != nil}, {"git", m.Git != ""},
		{"base", m.Base != ""}, {"workspace", m.Worktrees()}, {"test", !m.Test.IsZero()}, {"test_passed", m.TestPassed != ""}, {"test_timeout", m.TestTimeout != 0}} {
		if k.set && !m.IsTyped() {
			return bad(k.key, fmt.Sprintf("%s needs format %d, and this file says walkie: %d", k.key, FormatTyped, m.Walkie),
				fmt.Sprintf("set `walkie: %d` before the first entry (an older walkie then refuses the file instead of ignoring the key)", FormatTyped))
		}
	}
	if strings.TrimSpace(m.Repo) != m.Repo || strings.ContainsRune(m.Repo, 0) {
		return bad("repo", fmt.Sprintf("repo %q is not a usable path", m.Repo), "name the git repository's directory, relative to this file, e.g. `repo: .`")
	}
	if m.RequireRefs != nil {
		for _, t := range *m.RequireRefs {
			if !slices.Contains(EntryTypes, t) {
				return bad("require_refs", fmt.Sprintf("require_refs names %q, which is not an entry type", t), "list types from: "+strings.Join(EntryTypes, ", "))
			}
		}
	}
	if m.FreshVerdicts != nil && !m.Bound() {
		return bad("fresh_verdicts", "fresh_verdicts needs a repository to check heads in", "add `repo: .` (the repository, relative to this file), or remove fresh_verdicts")
	}
	if m.Git != "" && m.Git != GitCommit {
		return bad("git", fmt.Sprintf("git: %q is not a mode walkie knows", m.Git), "use `git: commit` (every entry a commit of the record), or remove it")
	}
	if err := m.validateTest(bad); err != nil {
		return err
	}
	if m.Base != "" {
		if _, err := ParseRef(m.Base); err != nil || (!shaRe.MatchString(m.Base) && checkBranchName(m.Base) != nil) {
			return bad("base", fmt.Sprintf("base %q is neither a branch nor a commit", m.Base), "name where worktrees start, e.g. `base: main`")
		}
	}
	return nil
}

// DefaultTestPassed is what a line of the test command's output that
// reports one passing test looks like, unless test_passed says: go test
// -v's, subtests included.
const DefaultTestPassed = `^\s*--- PASS: `

// DefaultTestTimeout bounds one run of the test command unless
// test_timeout says otherwise.
const DefaultTestTimeout = 10 * time.Minute

// TestPassedRe is the pattern a passing test's line of output matches.
func (m *Meta) TestPassedRe() *regexp.Regexp {
	return regexp.MustCompile(cmp.Or(m.TestPassed, DefaultTestPassed)) // checked by validateTest
}

// TestTimeoutOrDefault bounds one run of the test command.
func (m *Meta) TestTimeoutOrDefault() time.Duration { return cmp.Or(m.TestTimeout, DefaultTestTimeout) }

// validateTest checks the test keys: a command walkie can run at a
// commit of the bound repository, a pattern that compiles.
func (m *Meta) validateTest(bad func(key, msg, fix string) error) error {
	if m.Test.IsZero() {
		for _, k := range []struct {
			key string
			set bool
		}{{"test_passed", m.TestPassed != ""}, {"test_timeout", m.TestTimeout != 0}} {
			if k.set {
				return bad(k.key, k.key+" needs test: the command it is about", "add `test: go test -v ./...` (the thread's test command), or remove "+k.key)
			}
		}
		return nil
	}
	if !m.Bound() {
		return bad("test", "test needs a repository to run it in, at the commit a verdict cites", "add `repo: .` (the repository, relative to this file), or remove test")
	}
	if _, err := regexp.Compile(cmp.Or(m.TestPassed, DefaultTestPassed)); err != nil {
		return bad("test_passed", fmt.Sprintf("test_passed %q is not a regular expression: %v", m.TestPassed, err), "give the pattern of an output line that reports one passing test, e.g. `test_passed: '^ok '`")
	}
	if m.TestTimeout < 0 {
		return bad("test_timeout", fmt.Sprintf("test_timeout %s is negative", m.TestTimeout), "give how long one run may take, e.g. `test_timeout: 10m`")
	}
	return nil
}
