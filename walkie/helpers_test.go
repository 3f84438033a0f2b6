package walkie

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// t0 is the time stamped on generated entries, so generated files are
// the same on every run.
var t0 = time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)

const testBriefing = "Pick a name for the new API.\n\nA sign-off means: ship it as proposed.\n"

// newDebate creates a debate with Init in a fresh directory.
func newDebate(t testing.TB, maxRounds int, agents ...string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := Init(file, InitOptions{Participants: agents, MaxRounds: maxRounds, Briefing: []byte(testBriefing)}); err != nil {
		t.Fatal(err)
	}
	return file
}

// atFormat rewrites the front matter of file, which has no entry yet, to
// say walkie: format: a record of an older format (1 to 3), as walkie
// wrote them before format 4, whose markers must still verify as they are.
func atFormat(t testing.TB, file string, format int) string {
	t.Helper()
	b := readFile(t, file)
	from := "walkie: " + itoa(FormatCompact) + "\n"
	if !bytes.HasPrefix(b, []byte("---\n"+from)) {
		t.Fatalf("%s does not start with %q", file, from)
	}
	must(t, os.WriteFile(file, append([]byte("---\nwalkie: "+itoa(format)+"\n"), b[len("---\n"+from):]...), 0o644))
	return file
}

func turn(from, body string) Post     { return Post{From: from, Body: []byte(body)} }
func signed(from, body string) Post   { return Post{From: from, Body: []byte(body), Sign: true} }
func supervisorNote(body string) Post { return Post{Supervisor: true, Body: []byte(body)} }
func readFile(t testing.TB, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(f)
	must(t, err)
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mustAppend posts every p in order and fails the test on any refusal.
func mustAppend(t testing.TB, file string, ps ...Post) Receipt {
	t.Helper()
	var rc Receipt
	for _, p := range ps {
		var err error
		if rc, err = Append(file, p); err != nil {
			t.Fatalf("post %+v: %v", p, err)
		}
	}
	return rc
}

// mustVerify loads file and checks it verifies against its chain and its
// state record.
func mustVerify(t testing.TB, file string) *Doc {
	t.Helper()
	d, err := Load(file)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := d.Verify(); err != nil {
		t.Fatalf("verify: %v", err)
	}
	st, err := LoadState(StateDir(file, d.Meta.ID))
	must(t, err)
	if err := CheckAgainstState(file, d.Progress(), st); err != nil {
		t.Fatalf("check against state: %v", err)
	}
	return d
}

// tree is every regular file under a directory, by relative path, with
// its content: equal trees mean nothing on disk changed.
type tree map[string]string

func snapshotTree(t testing.TB, dir string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	must(t, err)
	return out
}

func (a tree) diff(b tree) string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			d = append(d, "removed "+k)
		} else if v != w {
			d = append(d, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, "added "+k)
		}
	}
	return strings.Join(d, ", ")
}

// asInput asserts err is an *InputError naming file and line (0 means any
// line) and carrying a fix, and returns it.
func asInput(t testing.TB, err error, file string, line int) *InputError {
	t.Helper()
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("got %T %v, want *InputError", err, err)
	}
	if ie.File != file {
		t.Errorf("error names file %q, want %q", ie.File, file)
	}
	if line > 0 && ie.Line != line {
		t.Errorf("error names line %d, want %d: %v", ie.Line, line, err)
	}
	if ie.Fix == "" {
		t.Errorf("error has no fix: %v", err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("message does not name the file: %v", err)
	}
	return ie
}

// asRefused asserts err is a *RefusedError whose message contains every
// want, and returns it.
func asRefused(t testing.TB, err error, want ...string) *RefusedError {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("got %T %v, want *RefusedError", err, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
	return re
}

// asChain asserts err is a *ChainError at entry seq and line, and returns it.
func asChain(t testing.TB, err error, seq, line int) *ChainError {
	t.Helper()
	var ce *ChainError
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *ChainError", err, err)
	}
	if ce.Seq != seq {
		t.Errorf("chain error names entry %d, want %d: %v", ce.Seq, seq, err)
	}
	if line > 0 && ce.Line != line {
		t.Errorf("chain error names line %d, want %d: %v", ce.Line, line, err)
	}
	if ce.Fix == "" {
		t.Errorf("chain error has no fix: %v", err)
	}
	return ce
}

// lineOf is the 1-based line on which the first occurrence of s starts.
func lineOf(t testing.TB, data []byte, s string) int {
	t.Helper()
	i := strings.Index(string(data), s)
	if i < 0 {
		t.Fatalf("%q not in the file", s)
	}
	return strings.Count(string(data[:i]), "\n") + 1
}

// genRecord builds a walkie file of n turns round robin among the given
// participants, stamped as the enforced writer would, without touching
// the disk: big fixtures are cheap this way. Every fifth turn is signed.
func genRecord(tb testing.TB, n int, participants ...string) []byte {
	tb.Helper()
	return genRecordAt(tb, FormatVersion, n, participants...)
}

// genRecordAt is genRecord in the given format.
func genRecordAt(tb testing.TB, format, n int, participants ...string) []byte {
	tb.Helper()
	m := Meta{Walkie: format, ID: "gen", Participants: participants, MaxRounds: n/len(participants) + 100}
	m.BriefingSHA256 = BriefingHash(BriefingText([]byte(testBriefing)))
	var b []byte
	b = append(b, renderMeta(m)...)
	b = append(b, "# Briefing\n\n"+testBriefing...)
	prev := GenesisHash(b)
	for i := 1; i <= n; i++ {
		agent := m.TurnAgent(i)
		content := []byte("\n## Turn " + itoa(i) + " · " + agent + "\n\n" +
			"Turn " + itoa(i) + ": a paragraph of argument, long enough to look like one,\nwith a second line and `code`.\n")
		if i%5 == 0 {
			content = append(content, "Signed-off-by: "+agent+"\n"...)
		}
		mk := Marker{Seq: i, Turn: i, Agent: agent, At: t0.Add(time.Duration(i) * time.Second), Prev: prev}
		b = append(b, content...)
		b = append(b, stamp(content, &mk, m.Walkie)...)
		prev = mk.Hash
	}
	return b
}

func itoa(i int) string { return strconv.Itoa(i) }

func readFileErr(f string) ([]byte, error) { return os.ReadFile(f) }
