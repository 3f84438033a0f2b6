package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/urfave/cli/v2"

	"github.com/walkie-sh/walkie/cmd/walkie/term"
	mergegate "github.com/walkie-sh/walkie/controller/gate"
)

var gateSHARe = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

func gateCommand(f *Factory, runF func(context.Context, *gateOptions) error) *cli.Command {
	return &cli.Command{
		Name:      "gate",
		Usage:     "the merge gate: exit 0 only if a signed verdict approves this commit and a person acknowledged it",
		ArgsUsage: "FILE",
		Description: `Exits 0 only when the record verifies, its last verdict (by a reviewer, not
the builder) approves exactly --ref SHA, signed by an allowed signer (the
controller that stamped it, with its WALKIE_SIGNING_KEY), and after it
someone else acknowledged it for SHA: a supervisor entry of type ack signed
by another allowed signer (walkie post --signing-key), or, with
--github-pr, an approving GitHub review by a login the allowed signers list
as github:LOGIN. The allowed signers are read from --base (the branch merged
into), never from the pull request: an ssh-keygen allowed_signers file at
--signers in the repository. Verdict and ack name the commit by its full id.
Otherwise it exits 3 and says what is missing (4 when the record does not
verify, 2 for bad flags). Make it a required check of the merge (docs/ci.md,
"The merge gate"; who may say what: docs/review-threads.md).

EXAMPLES:
   walkie gate reviews/login.walkie.md --ref "$HEAD_SHA" --base "$BASE_SHA" --github-pr 42
   walkie post reviews/login.walkie.md --supervisor --type ack --refs "$SHA" --signing-key ~/.ssh/id_ed25519 --body-file - <<< "Read it."`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "ref", Usage: "the commit to be merged (required)"},
			&cli.StringFlag{Name: "base", Usage: "the revision merged into, whose allowed signers count (required)"},
			&cli.StringFlag{Name: "signers", Value: mergegate.DefaultSigners, Usage: "the allowed-signers file at --base, from the repository's top"},
			&cli.IntFlag{Name: "github-pr", Usage: "count an approving review of this pull request by a listed login as the ack (GITHUB_TOKEN, GITHUB_API_URL)"},
			&cli.StringFlag{Name: "github-repo", EnvVars: []string{"GITHUB_REPOSITORY"}, Usage: "OWNER/NAME of the pull request's repository"},
		}, jsonFlags(gateView{})...),
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
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			o := &gateOptions{IO: f.IO, JSON: exp.onOneLine(),
				Gate: mergegate.Options{File: file, Ref: sha, Base: c.String("base"), Signers: c.String("signers")}}
			if n := c.Int("github-pr"); n > 0 {
				if c.String("github-repo") == "" {
					return withCode(exitBadInput, errors.New("--github-pr needs --github-repo OWNER/NAME (or GITHUB_REPOSITORY)"))
				}
				o.Gate.GitHub = &mergegate.GitHub{API: os.Getenv("GITHUB_API_URL"), Repo: c.String("github-repo"), PR: n, Token: os.Getenv("GITHUB_TOKEN")}
			}
			return runWith(c.Context, runF, gateRun, o)
		},
	}
}

// gateOptions are walkie gate's: the record, the commit to be merged, and
// whose word counts.
type gateOptions struct {
	IO   *IOStreams
	Gate mergegate.Options
	JSON *jsonExporter
}

// gateView is the gate's finding as --json prints it.
type gateView struct {
	Open      bool     `json:"open"`
	Ref       string   `json:"ref"`
	Why       string   `json:"why"`
	Verdict   int      `json:"verdict_seq,omitempty"`
	Ack       int      `json:"ack_seq,omitempty"`
	VerdictBy []string `json:"verdict_by,omitempty"`
	AckBy     []string `json:"ack_by,omitempty"`
}

func gateRun(ctx context.Context, o *gateOptions) error {
	sha := o.Gate.Ref
	d, err := loadVerified(o.Gate.File)
	if err != nil {
		return err
	}
	g, err := mergegate.Check(ctx, d, o.Gate)
	if errors.Is(err, mergegate.ErrBadInput) {
		return withCode(exitBadInput, err)
	}
	if err != nil {
		return err
	}
	if o.JSON != nil {
		out := gateView{Open: g.Open, Ref: sha, Why: g.Why, VerdictBy: g.VerdictBy, AckBy: g.AckBy}
		if g.Verdict != nil {
			out.Verdict = g.Verdict.Marker.Seq
		}
		if g.Ack != nil {
			out.Ack = g.Ack.Marker.Seq
		}
		if err := o.JSON.Write(o.IO.Out, out); err != nil {
			return err
		}
	}
	if !g.Open {
		return withCode(exitRefused, fmt.Errorf("gate shut for %s: %s", sha, g.Why))
	}
	if o.JSON == nil {
		fmt.Fprintf(o.IO.Out, "gate open for %s: %s\n", sha, term.Clean(g.Why))
	}
	return nil
}
