package walkie

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func roundtableHeader(keys string) string {
	return "---\nwalkie: 1\nid: rt\nmode: roundtable\nmax_rounds: 4\n" + keys + "---\n# Briefing\nBuild it.\n"
}

func TestRoundtableMeta(t *testing.T) {
	d, err := Parse("rt.walkie.md", []byte(roundtableHeader(
		"implementer: ada\nreviewers: [brook, cy]\nquorum: 1\ngrader: [make, test]\ngrader_timeout: 90s\nworkspace: src\n")))
	if err != nil {
		t.Fatal(err)
	}
	m := d.Meta
	if !m.IsRoundtable() || !slices.Equal(m.Participants, []string{"ada", "brook", "cy"}) {
		t.Fatalf("participants = %v, want the implementer then the reviewers", m.Participants)
	}
	if m.QuorumNeeded() != 1 || m.GraderLimit() != 90*time.Second || !slices.Equal(m.Grader.Argv, []string{"make", "test"}) || m.Workspace != "src" {
		t.Fatalf("meta = %+v", m)
	}
	// Turn order is round robin: implementer, then each reviewer.
	if m.TurnAgent(4) != "ada" || m.TurnAgent(6) != "cy" || m.RoundOf(4) != 2 {
		t.Fatal("turn order is not implementer, reviewers, implementer, …")
	}

	d, err = Parse("rt.walkie.md", []byte(roundtableHeader("implementer: ada\nreviewers: [brook]\ngrader: go test ./...\nworkspace: .\n")))
	if err != nil {
		t.Fatal(err)
	}
	if d.Meta.Grader.Shell != "go test ./..." || d.Meta.QuorumNeeded() != 1 || d.Meta.GraderLimit() != DefaultGraderTimeout {
		t.Fatalf("meta = %+v", d.Meta)
	}
}

func TestRoundtableMetaErrors(t *testing.T) {
	const ok = "implementer: ada\nreviewers: [brook, cy]\ngrader: [true]\nworkspace: src\n"
	for _, tc := range []struct{ name, src, want string }{
		{"no implementer", "reviewers: [brook]\ngrader: [true]\nworkspace: src\n", "implementer"},
		{"no reviewers", "implementer: ada\ngrader: [true]\nworkspace: src\n", "at least one reviewer"},
		{"self review", "implementer: ada\nreviewers: [ada]\ngrader: [true]\nworkspace: src\n", "cannot review its own work"},
		{"twice", "implementer: ada\nreviewers: [brook, brook]\ngrader: [true]\nworkspace: src\n", "listed twice"},
		{"quorum high", ok + "quorum: 3\n", "quorum 3"},
		{"quorum negative", ok + "quorum: -1\n", "quorum -1"},
		{"no grader", "implementer: ada\nreviewers: [brook]\nworkspace: src\n", "grader"},
		{"blank grader", "implementer: ada\nreviewers: [brook]\ngrader: \"  \"\nworkspace: src\n", "grader"},
		{"grader map", "implementer: ada\nreviewers: [brook]\ngrader: {a: b}\nworkspace: src\n", "grader"},
		{"no workspace", "implementer: ada\nreviewers: [brook]\ngrader: [true]\n", "workspace"},
		{"bare timeout", ok + "grader_timeout: 90\n", "grader_timeout"},
		{"participants differ", ok + "participants: [brook, ada, cy]\n", "do not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("rt.walkie.md", []byte(roundtableHeader(tc.src)))
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an InputError mentioning %q", err, tc.want)
			}
		})
	}
	// Listing the participants in the right order is allowed.
	if _, err := Parse("rt.walkie.md", []byte(roundtableHeader(ok+"participants: [ada, brook, cy]\n"))); err != nil {
		t.Fatal(err)
	}
	// Round-table keys in a debate are a mistake worth naming.
	src := "---\nwalkie: 1\nid: d\nparticipants: [a, b]\nmax_rounds: 2\nreviewers: [c]\n---\n# Briefing\nx\n"
	if _, err := Parse("d.walkie.md", []byte(src)); err == nil || !strings.Contains(err.Error(), "round-table key") {
		t.Fatalf("err = %v, want a round-table key refused in a debate", err)
	}
}

// Approval rewrites the front matter from Meta: every round-table key must
// survive it unchanged, in the form it was written in.
func TestRoundtableMetaSurvivesApproval(t *testing.T) {
	for _, grader := range []string{"[python3, -m, pytest, -q]", "\"make test && ./check\""} {
		file := filepath.Join(t.TempDir(), "rt.walkie.md")
		src := roundtableHeader("implementer: ada\nreviewers: [brook, cy]\nquorum: 2\ngrader: " + grader + "\ngrader_timeout: 2m\nworkspace: work\nbudget_usd: 3\n")
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		before, err := ReadMeta(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Approve(file); err != nil {
			t.Fatal(err)
		}
		after, err := ReadMeta(file)
		if err != nil {
			t.Fatal(err)
		}
		after.BriefingSHA256 = ""
		if !slices.Equal(before.Participants, after.Participants) || before.Grader.String() != after.Grader.String() ||
			slices.Equal(before.Grader.Argv, nil) != slices.Equal(after.Grader.Argv, nil) || before.GraderTimeout != after.GraderTimeout ||
			before.Quorum != after.Quorum || before.Workspace != after.Workspace || before.BudgetUSD != after.BudgetUSD {
			b, _ := os.ReadFile(file)
			t.Fatalf("approval changed the round table:\nbefore %+v\nafter  %+v\n%s", before, after, b)
		}
	}
}

// A round table's participants are derived, so rewriting its front matter
// (as SetBriefing does) does not write them.
func TestRoundtableMetaRendersWithoutParticipants(t *testing.T) {
	d, err := Parse("rt.walkie.md", []byte(roundtableHeader("implementer: ada\nreviewers: [brook, cy]\ngrader: [\"true\"]\nworkspace: src\n")))
	if err != nil {
		t.Fatal(err)
	}
	out := string(renderMeta(d.Meta))
	if strings.Contains(out, "participants") || !strings.Contains(out, "reviewers: [brook, cy]") {
		t.Fatalf("rendered:\n%s", out)
	}
	again, err := Parse("rt.walkie.md", []byte(out+"# Briefing\nBuild it.\n"))
	if err != nil || !slices.Equal(again.Meta.Participants, d.Meta.Participants) {
		t.Fatalf("re-read: %v %v", again, err)
	}
}
