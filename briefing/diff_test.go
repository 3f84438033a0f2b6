package briefing

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDiff(t *testing.T) {
	old := "## Question\nHow to page?\n\n## Options\nOffset or cursor.\n"
	cur := "## Question\nHow to page GET /v1/orders?\n\n## Options\nOffset or cursor.\n"
	want := `--- approved
+++ now
@@ -1,5 +1,5 @@
 ## Question
-How to page?
+How to page GET /v1/orders?
 
 ## Options
 Offset or cursor.
`
	if got := Diff("approved", "now", []byte(old), []byte(cur)); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := Diff("a", "b", []byte(old), []byte(old)); got != "" {
		t.Fatalf("same text gave a diff: %q", got)
	}
	// A missing final newline is not a change.
	if got := Diff("a", "b", []byte("x\ny"), []byte("x\ny\n")); got != "" {
		t.Fatalf("final newline gave a diff: %q", got)
	}
}

func TestApprovedCopy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".walkie", "x")
	if b, err := ReadApproved(dir); b != nil || err != nil {
		t.Fatalf("no copy yet: %q %v", b, err)
	}
	for _, text := range []string{"first\n", "second, longer\n"} {
		if err := WriteApproved(dir, []byte(text)); err != nil {
			t.Fatal(err)
		}
		if b, err := ReadApproved(dir); string(b) != text || err != nil {
			t.Fatalf("read back %q %v, want %q", b, err, text)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("temporary files left behind: %v", ents)
	}
}
