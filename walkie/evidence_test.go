package walkie

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPassCounts(t *testing.T) {
	for in, want := range map[string][]int{
		"Approved: the 27 tests pass at 8d41e07.":           {27},
		"All 27 tests passed, and a replayed token fails.":  {27},
		"27 unit tests are green; 3 integration tests pass": {27, 3},
		"1 test passes.":                       {1},
		"27 tests pass. Again: 27 tests pass.": {27},
		"The 3 tests fail.":                    nil,
		"Tests pass.":                          nil,
		"27 passes of the loop":                nil,
		"27 tests still pass after the fix":    {27},
	} {
		if got := PassCounts(in); !slices.Equal(got, want) {
			t.Errorf("PassCounts(%q) = %v, want %v", in, got, want)
		}
	}
}

// Every count found is one the text holds, never negative, never twice.
func FuzzPassCounts(f *testing.F) {
	f.Add("Approved: the 27 tests pass at 8d41e07.")
	f.Add("9999999 tests passed; 027 tests pass")
	f.Fuzz(func(t *testing.T, text string) {
		got := PassCounts(text)
		for i, n := range got {
			if n < 0 || !strings.Contains(text, strconv.Itoa(n)) || slices.Contains(got[i+1:], n) {
				t.Fatalf("PassCounts(%q) = %v", text, got)
			}
		}
	})
}

// The test keys: a command walkie can run at a commit of the bound
// repository, a pattern that compiles; each refusal names its key.
func TestTestKeys(t *testing.T) {
	head := "walkie: 3\nid: t\nparticipants: [a, b]\nmax_rounds: 2\n"
	m, err := parseMeta("t.walkie.md", []byte(head+"repo: .\ntest: go test -v ./...\ntest_timeout: 2m\n"), 2)
	if err != nil || m.Test.Shell != "go test -v ./..." || m.TestTimeoutOrDefault().Minutes() != 2 || !m.TestPassedRe().MatchString("    --- PASS: TestX/y (0.00s)") {
		t.Fatalf("meta %+v, %v", m, err)
	}
	for in, want := range map[string]string{
		"test: make test\n":                             "test needs a repository to run it in",
		"repo: .\ntest_passed: '^ok'\n":                 "test_passed needs test",
		"repo: .\ntest: make test\ntest_passed: '('\n":  "test_passed \"(\" is not a regular expression",
		"repo: .\ntest: make test\ntest_timeout: -1s\n": "test_timeout -1s is negative",
	} {
		if _, err := parseMeta("t.walkie.md", []byte(head+in), 2); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
