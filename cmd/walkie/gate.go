package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

var gateSHARe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

func gateCommand(f *Factory, runF func(context.Context, *gateOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "gate",
		Usage:     "the merge gate: exit 0 only if the last verdict approves this commit and a person acknowledged it",
		ArgsUsage: "FILE",
		Description: `Exits 0 only when the record verifies, its last verdict approves exactly
--ref SHA (every commit that verdict cites is SHA), and after that verdict a
supervisor entry of type ack cites SHA too: a person read the verdict before
the merge. Otherwise it exits 3 and says which of these is missing (4 when
the record does not verify). In a record bound to a repository (repo:) the
shas are compared as commits there, so an abbreviated sha in the record
matches the full one CI gives; otherwise one must be the start of the other.
Make it a required check of the merge (docs/ci.md, "The merge gate").

EXAMPLES:
   walkie gate reviews/login.walkie.md --ref "$GITHUB_SHA"
   walkie post reviews/login.walkie.md --supervisor --type ack --refs 3f2a9c1 --body-file - <<< "Read it."`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "ref", Usage: "the commit to be merged (required)"},
			&cli.BoolFlag{Name: "json", Usage: "print the finding as JSON"},
		},
		Action: func(c *cli.Context) error {
			file, err := recordArg(c)
			if err != nil {
				return err
			}
			if err := requiredFlag(c, "ref"); err != nil {
				return err
			}
			sha := c.String("ref")
			if !gateSHARe.MatchString(sha) {
				return withCode(exitBadInput, fmt.Errorf("--ref %q is not a commit's sha (7 to 64 lower-case hex digits)", sha))
			}
			return runWith(c.Context, runF, gateRun, &gateOptions{IO: f.IO, File: file, Ref: sha, JSON: c.Bool("json")})
		},
	}
}

// gateOptions are walkie gate's: the record, and the commit to be merged.
type gateOptions struct {
	IO   *IOStreams
	File string
	Ref  string
	JSON bool
}

func gateRun(ctx context.Context, o *gateOptions) error {
	file, sha := o.File, o.Ref
	d, err := loadVerified(file)
	if err != nil {
		return err
	}
	same, err := gateCompare(ctx, file, &d.Meta, sha)
	if err != nil {
		return err
	}
	g, err := d.MergeGate(sha, same)
	if err != nil {
		return err
	}
	if o.JSON {
		out := struct {
			Open    bool   `json:"open"`
			Ref     string `json:"ref"`
			Why     string `json:"why"`
			Verdict int    `json:"verdict_seq,omitempty"`
			Ack     int    `json:"ack_seq,omitempty"`
		}{Open: g.Open, Ref: sha, Why: g.Why}
		if g.Verdict != nil {
			out.Verdict = g.Verdict.Marker.Seq
		}
		if g.Ack != nil {
			out.Ack = g.Ack.Marker.Seq
		}
		if err := json.NewEncoder(o.IO.Out).Encode(out); err != nil {
			return err
		}
	}
	if !g.Open {
		return withCode(exitRefused, fmt.Errorf("gate shut for %s: %s", sha, g.Why))
	}
	if !o.JSON {
		fmt.Fprintf(o.IO.Out, "gate open for %s: %s\n", sha, term.Clean(g.Why))
	}
	return nil
}

// gateCompare is how the gate tells two shas name one commit: through
// the bound repository, else by their text.
func gateCompare(ctx context.Context, file string, m *walkie.Meta, sha string) (walkie.SameCommit, error) {
	if !m.Bound() {
		return walkie.SamePrefix, nil
	}
	repo, err := gitrepo.Open(ctx, m.RepoDir(file))
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("%s is bound to repo: %s, which walkie cannot read: %w", file, m.Repo, err))
	}
	full, err := repo.Commit(ctx, sha)
	if err != nil {
		return nil, err
	}
	if full == "" {
		return nil, withCode(exitRefused, fmt.Errorf("gate shut for %s: it names no commit in the repository the record is bound to (repo: %s)", sha, m.Repo))
	}
	// A commit of the record itself (git: commit) changes no code: the
	// approved commit and one that only adds entries on top (or the other
	// way round: a verdict citing the branch's head, which was such a
	// commit) are the same to the gate, as to a verdict's freshness.
	return func(refSHA, _ string) (bool, error) {
		got, err := repo.Commit(ctx, refSHA)
		if err != nil || got == "" {
			return false, err
		}
		if same, err := repo.Unchanged(ctx, got, full); same || err != nil {
			return same, err
		}
		return repo.Unchanged(ctx, full, got)
	}, nil
}
