package trials

import (
	"path/filepath"
	"testing"
)

func TestDirPath(t *testing.T) {
	for _, c := range []struct {
		arg, want string
		ok        bool
	}{
		{"{dir}/ada.yaml", "ada.yaml", true},
		{"--script={dir}/scripts/a.yaml", filepath.Join("scripts", "a.yaml"), true},
		{"cat {dir}/a.txt; echo", "a.txt", true},
		{"{dir}", "", false},
		{"{dir}/", "", false},
		{"{dir}/../secret", "", false},
		{"/abs/ada.yaml", "", false},
	} {
		got, ok := dirPath(c.arg)
		if ok != c.ok || ok && got != c.want {
			t.Errorf("dirPath(%q) = %q, %v; want %q, %v", c.arg, got, ok, c.want, c.ok)
		}
	}
}

func FuzzDirPath(f *testing.F) {
	f.Add("--script={dir}/a/b.yaml")
	f.Fuzz(func(t *testing.T, arg string) {
		if rel, ok := dirPath(arg); ok && (!filepath.IsLocal(rel) || rel == "") {
			t.Errorf("dirPath(%q) = %q, outside {dir}", arg, rel)
		}
	})
}
