package briefing

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified line diff, with three lines of context, from the
// approved briefing to the one about to be approved; "" when they are the
// same. The names label the two sides.
func Diff(oldName, newName string, old, cur []byte) string {
	if string(old) == string(cur) {
		return ""
	}
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(withNewline(string(old))), B: difflib.SplitLines(withNewline(string(cur))),
		FromFile: oldName, ToFile: newName, Context: 3,
	})
	if err != nil {
		// Writes to a strings.Builder do not fail.
		panic("briefing: diff: " + err.Error())
	}
	return s
}

// withNewline ends text with a newline, so a last line without one is
// not shown as changed only for that.
func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}
