package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestRoundtableScripts runs testdata/script/roundtable*.txtar with the
// real walkie and fake agent on PATH, built here for these scripts alone.
func TestRoundtableScripts(t *testing.T) {
	bins := t.TempDir()
	for name, pkg := range map[string]string{"walkie": ".", "fakeagent": "../fakeagent"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bins, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, out)
		}
	}
	files, err := filepath.Glob("testdata/script/roundtable*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no round-table scripts (%v)", err)
	}
	testscript.Run(t, testscript.Params{
		Files: files,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", bins+string(os.PathListSeparator)+env.Getenv("PATH"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": cmdExits},
	})
}
