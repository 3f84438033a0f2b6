package review

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/controller/review/reviewtest"
	"github.com/walkie-sh/walkie/walkie"
)

func planRepo(t *testing.T) *reviewtest.Repo {
	return reviewtest.NewRepo(t,
		map[string]string{"docs/old.md": "old\n", "docs/gone.md": "gone\n", "README.md": "r\n"},
		map[string]string{"docs/a-b.md": "x\n", "docs/a/b.md": "y\n", "docs/old.md": "old, changed\n", "docs/gone.md": "",
			"docs/latin1.md": "caf\xe9\n", "docs/big.md": strings.Repeat("x", MaxDocBytes+1), "sub/docs/s.md": "s\n"})
}

func TestPlanDocs(t *testing.T) {
	repo := planRepo(t)
	ctx := context.Background()
	p, err := makePlan(ctx, Options{Dir: repo.Dir, Docs: []string{"docs/a-b.md", "docs/a/b.md", "docs/a-b.md", "docs/o*.md"}, Base: "main~1"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range p.docs {
		got = append(got, d.path+"="+d.id)
	}
	if want := "docs/a-b.md=review-docs-a-b docs/a/b.md=review-docs-a-b-2 docs/old.md=review-docs-old"; strings.Join(got, " ") != want {
		t.Errorf("docs %v, want %s", got, want)
	}
	if p.baseSHA != repo.Base || p.head != repo.Head || p.mergeBase != repo.Base || p.out != "" || p.outInRepo {
		t.Errorf("plan %+v", p)
	}
	// Without --out, each run gets a directory of its own outside the
	// checkout: a second run in the same place just works.
	tmp := t.TempDir()
	var outs []string
	for range 2 {
		p, err := makePlan(ctx, Options{Dir: repo.Dir, Docs: []string{"docs/o*.md"}, Base: "main~1", TempDir: tmp})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.makeOut(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.out, tmp+string(filepath.Separator)+"walkie-review-run-") || p.outInRepo {
			t.Errorf("the default output directory is %s (in the checkout: %v), want a new one under %s", p.out, p.outInRepo, tmp)
		}
		outs = append(outs, p.out)
	}
	if outs[0] == outs[1] {
		t.Errorf("two runs share %s", outs[0])
	}
	// From a subdirectory, paths and patterns are relative to it.
	p, err = makePlan(ctx, Options{Dir: filepath.Join(repo.Dir, "sub"), Docs: []string{"docs/s.md", "docs/*.md"}, Base: "main~1", Out: t.TempDir()})
	if err != nil || len(p.docs) != 1 || p.docs[0].path != "sub/docs/s.md" || p.outInRepo {
		t.Fatalf("from sub/: %+v %v", p, err)
	}
	// A pattern that matches nothing changed is no error: nothing to do.
	p, err = makePlan(ctx, Options{Dir: repo.Dir, Docs: []string{"rfcs/**/*.md"}, Base: repo.Base})
	if err != nil || len(p.docs) != 0 || len(p.patterns) != 1 {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestPlanBadInput(t *testing.T) {
	repo := planRepo(t)
	if err := os.WriteFile(filepath.Join(repo.Dir, "docs/untracked.md"), []byte("u\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	earlier := t.TempDir()
	if err := os.Mkdir(filepath.Join(earlier, "review-docs-old"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"outside", Options{Docs: []string{"../x.md"}}, "is outside the repository"},
		{"untracked", Options{Docs: []string{"docs/untracked.md"}}, "exists but is not a file of the head commit"},
		{"deleted", Options{Docs: []string{"docs/gone.md"}}, "does not exist at the head commit"},
		{"unchanged", Options{Docs: []string{"README.md"}}, "is not in the diff"},
		{"too big", Options{Docs: []string{"docs/big.md"}}, "more than the 256 KiB a review reads"},
		{"not UTF-8", Options{Docs: []string{"docs/latin1.md"}}, "is not UTF-8 text"},
		{"earlier review", Options{Docs: []string{"docs/old.md"}, Out: earlier}, "holds an earlier review"},
		{"one agent", Options{Docs: []string{"docs/old.md"}, Agents: []string{"claude"}}, "at least two agents"},
		{"twice", Options{Docs: []string{"docs/old.md"}, Agents: []string{"claude", "claude"}}, "claude is named twice"},
		{"bad name", Options{Docs: []string{"docs/old.md"}, Agents: []string{"claude", "a b"}}, "is not an agent name"},
		{"negative rounds", Options{Docs: []string{"docs/old.md"}, MaxRounds: -1}, "is negative"},
		{"negative budget", Options{Docs: []string{"docs/old.md"}, BudgetUSD: -1}, "is negative"},
		{"unrelated base", Options{Docs: []string{"docs/old.md"}, Base: "orphan"}, "have no common ancestor"},
	}
	repo.Git(t, "checkout", "-q", "--orphan", "orphan")
	repo.Git(t, "commit", "-q", "-m", "unrelated")
	repo.Git(t, "checkout", "-q", "main")
	for _, c := range cases {
		c.o.Dir = repo.Dir
		if c.o.Base == "" {
			c.o.Base = "main~1"
		}
		_, err := makePlan(context.Background(), c.o)
		var ie *walkie.InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || ie.Fix == "" {
			t.Errorf("%s: %v, want an input error saying %q, with a fix", c.name, err, c.want)
		}
	}
}
