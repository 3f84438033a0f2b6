package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/gitrepo"
	"github.com/walkie-sh/walkie/walkie"
)

var gateSHARe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:      "gate",
		Usage:     "the merge gate: exit 0 only if the last verdict approves this commit and a person acknowledged it",
		ArgsUsage: "FILE",
		Description: `Exits 0 only when the record verifies, its last verdict approves exactly
--ref SHA (every commit that verdict cites is SHA), and after that verdict a
supervisor entry of type ack cites SHA too: a person read the verdict before
the merge. Otherwise it exits 3 and says which of these is missing (4 when
the record does not verify). The verdict and the ack must name the commit by
its full id (walkie records full ids in a record bound to a repository): an
abbreviation another commit can come to share never opens the gate. In a
bound record (repo:) the commits are compared there, and --ref may be
abbreviated if exactly one commit starts so; otherwise --ref is the full id.
Make it a required check of the merge (docs/ci.md, "The merge gate").

EXAMPLES:
   walkie gate reviews/login.walkie.md --ref "$GITHUB_SHA"
   walkie post reviews/login.walkie.md --supervisor --type ack --refs "$SHA" --body-file - <<< "Read it."`,
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
			d, err := loadVerified(file)
			if err != nil {
				return err
			}
			same, err := gateCompare(c, file, &d.Meta, sha)
			if err != nil {
				return err
			}
			g, err := d.MergeGate(sha, same)
			if err != nil {
				return err
			}
			if c.Bool("json") {
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
				if err := json.NewEncoder(c.App.Writer).Encode(out); err != nil {
					return err
				}
			}
			if !g.Open {
				return withCode(exitRefused, fmt.Errorf("gate shut for %s: %s", sha, g.Why))
			}
			if !c.Bool("json") {
				fmt.Fprintf(c.App.Writer, "gate open for %s: %s\n", sha, g.Why)
			}
			return nil
		},
	}
}

// gateCompare is how the gate tells two shas name one commit: through
// the bound repository, else by their text.
func gateCompare(c *cli.Context, file string, m *walkie.Meta, sha string) (walkie.SameCommit, error) {
	if !m.Bound() {
		if !walkie.IsFullID(sha) {
			return nil, withCode(exitBadInput, fmt.Errorf("--ref %s is abbreviated, and the record is bound to no repository to tell which commit it names: give the full id (git rev-parse %s)", sha, sha))
		}
		return walkie.SamePrefix, nil
	}
	repo, err := gitrepo.Open(c.Context, m.RepoDir(file))
	if err != nil {
		return nil, withCode(exitBadInput, fmt.Errorf("%s is bound to repo: %s, which walkie cannot read: %w", file, m.Repo, err))
	}
	full, err := repo.Commit(c.Context, sha)
	if errors.Is(err, walkie.ErrAmbiguous) {
		return nil, withCode(exitRefused, fmt.Errorf("gate shut for %s: %v in the repository the record is bound to (repo: %s); give the full id", sha, err, m.Repo))
	}
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
		got, err := repo.Commit(c.Context, refSHA)
		if err != nil || got == "" {
			return false, err
		}
		if same, err := repo.Unchanged(c.Context, got, full); same || err != nil {
			return same, err
		}
		return repo.Unchanged(c.Context, full, got)
	}, nil
}
