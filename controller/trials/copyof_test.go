package trials_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/walkie-sh/walkie/controller/trials"
)

func TestCopyOf(t *testing.T) {
	for _, tt := range []struct {
		file string
		dir  string
		n    int
		ok   bool
	}{
		{"/d/eval.trials/3/eval-3.walkie.md", "/d/eval.trials", 3, true},
		{"/d/x/12/rt-12.walkie.md", "/d/x", 12, true},
		{"/d/eval.trials/3/eval-4.walkie.md", "", 0, false}, // the number of another copy
		{"/d/eval.trials/03/eval-03.walkie.md", "", 0, false},
		{"/d/eval.trials/0/eval-0.walkie.md", "", 0, false},
		{"/d/eval.trials/3/eval-3.md", "", 0, false},
		{"/d/eval.walkie.md", "", 0, false},
		{"/d/3/eval-13.walkie.md", "", 0, false},
	} {
		dir, n, ok := trials.CopyOf(tt.file)
		if dir != tt.dir || n != tt.n || ok != tt.ok {
			t.Errorf("CopyOf(%q) = %q, %d, %v; want %q, %d, %v", tt.file, dir, n, ok, tt.dir, tt.n, tt.ok)
		}
	}
}

// Whatever the path, a copy CopyOf accepts is DIR/K/…-K.walkie.md.
func FuzzCopyOf(f *testing.F) {
	for _, s := range []string{"/d/eval.trials/3/eval-3.walkie.md", "a/1/b-1.walkie.md", "1/-1.walkie.md", "/x/9/9-9.walkie.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, file string) {
		dir, n, ok := trials.CopyOf(file)
		if !ok {
			return
		}
		k := strconv.Itoa(n)
		if n < 1 || filepath.Base(filepath.Dir(file)) != k || filepath.Dir(filepath.Dir(file)) != dir {
			t.Fatalf("CopyOf(%q) = %q, %d", file, dir, n)
		}
	})
}
