package roundtable

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/walkie-sh/walkie/walkie"
)

// Whatever a reviewer writes, parseVerdict either refuses it or returns a
// verdict whose reading follows the rules: approves exactly when nothing
// blocks, every blocker names a rule and an input, every field bounded.
func FuzzParseVerdict(f *testing.F) {
	for _, s := range []string{
		`{"verdict": "approve"}`,
		"```json\n{\"verdict\": \"request_changes\", \"objections\": [{\"rule\": \"r\", \"failing_input\": \"\\n\", \"blocking\": true}]}\n```",
		`{"verdict": "request_changes", "objections": [{"rule": "r", "failing_input": "", "blocking": true}]}`,
		`{"verdict": "approve", "objections": [{"rule": 1, "failing_input": [1, 2], "blocking": "yes"}]}`,
		`{"verdict": "Request Changes", "objections": null}`,
		"Here is my verdict:\n\n```json\n{\"verdict\": \"approve\"}\n```\nThanks.",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseVerdict(data)
		if err != nil {
			return
		}
		if v.Verdict != VerdictApprove && v.Verdict != VerdictRequestChanges {
			t.Fatalf("verdict %q", v.Verdict)
		}
		if v.Approves != (len(v.Blockers()) == 0) || len(v.Objections) > maxObjections {
			t.Fatalf("approves %v with %d blockers of %d objections", v.Approves, len(v.Blockers()), len(v.Objections))
		}
		for _, o := range v.Objections {
			for _, s := range []string{o.Summary, o.Rule, o.FailingInput} {
				if len(s) > maxFieldBytes+len("…") || !utf8.ValidString(s) {
					t.Fatalf("field of %d bytes, valid UTF-8 %v", len(s), utf8.ValidString(s))
				}
			}
			if o.Rule != strings.TrimSpace(o.Rule) {
				t.Fatalf("rule %q is not trimmed", o.Rule)
			}
			if o.blocker() && (o.Rule == "" || o.FailingInput == "") {
				t.Fatalf("blocker %+v lacks a rule or an input", o)
			}
		}
	})
}

// Whatever a supervisor entry says, PhasePins reads a pin only from one
// that opens like walkie's approval and carries a whole sha256 line.
func FuzzPhasePins(f *testing.F) {
	f.Add([]byte("walkie: the plan phase is approved. x\n\n- sha256: " + strings.Repeat("ab", 32) + "\n"))
	f.Add([]byte("\nwalkie: the research phase is approved.\n- sha256: 12\n"))
	f.Add([]byte("a person says: walkie: the plan phase is approved.\n- sha256: " + strings.Repeat("0", 64) + "\n"))
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	f.Fuzz(func(t *testing.T, body []byte) {
		d := &walkie.Doc{Entries: []walkie.Entry{{Kind: walkie.KindSupervisor, Body: body}, {Kind: walkie.KindTurn, Body: body}}}
		for kind, pin := range PhasePins(d) {
			if !slices.Contains(walkie.PhaseKinds, kind) || !hex64.MatchString(pin.SHA256) {
				t.Fatalf("pin %q: %+v", kind, pin)
			}
			if !strings.HasPrefix(strings.TrimLeft(string(body), "\n"), "walkie: the "+kind+" phase is approved.") {
				t.Fatalf("a pin from %q", body)
			}
		}
	})
}
