package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

func TestSessionDirs(t *testing.T) {
	get := func(env []string, k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return ""
	}
	for _, tt := range []struct {
		name, home, tmp string
		wantHome        bool
		wantTmp         string // "" none, "in-home", "own"
	}{
		{"private both", config.HomePrivate, config.TmpDirPrivate, true, "in-home"},
		{"private home only", config.HomePrivate, config.TmpDirInherit, true, ""},
		{"own home, private tmp", config.HomeInherit, config.TmpDirPrivate, false, "own"},
		{"nothing private", config.HomeInherit, config.TmpDirInherit, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := config.Agent{Home: tt.home, TmpDir: tt.tmp, HomeFiles: map[string]string{".tool/s.json": "{}"}}
			env, cleanup, err := sessionDirs(a)
			if err != nil {
				t.Fatal(err)
			}
			home, tmp := get(env, "HOME"), get(env, "TMPDIR")
			if (home != "") != tt.wantHome {
				t.Errorf("HOME %q", home)
			}
			if home != "" {
				if b, err := os.ReadFile(filepath.Join(home, ".tool", "s.json")); err != nil || string(b) != "{}" {
					t.Errorf("home file: %q %v", b, err)
				}
			}
			switch tt.wantTmp {
			case "":
				if tmp != "" {
					t.Errorf("TMPDIR %q", tmp)
				}
			case "in-home":
				if tmp != filepath.Join(home, ".tmp") {
					t.Errorf("TMPDIR %q, want inside HOME %q", tmp, home)
				}
			case "own":
				if tmp == "" || !strings.Contains(filepath.Base(tmp), "walkie-tmp-") {
					t.Errorf("TMPDIR %q", tmp)
				}
			}
			for _, d := range []string{home, tmp} {
				if d == "" {
					continue
				}
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s: %v %v (want a directory only its owner can enter)", d, fi, err)
				}
			}
			cleanup()
			for _, d := range []string{home, tmp} {
				if _, err := os.Stat(d); d != "" && !os.IsNotExist(err) {
					t.Errorf("%s left behind (%v)", d, err)
				}
			}
		})
	}
}
