package session

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrivateDirs(t *testing.T) {
	for _, tt := range []struct {
		name          string
		home, tmp     bool
		wantTmpInHome bool
	}{
		{"private both", true, true, true},
		{"private home only", true, false, false},
		{"own home, private tmp", false, true, false},
		{"nothing private", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{PrivateHome: tt.home, PrivateTmp: tt.tmp, HomeFiles: map[string]string{".tool/s.json": "{}"}}
			made, err := privateDirs(spec)
			if err != nil {
				t.Fatal(err)
			}
			if (made.home != "") != tt.home || (made.tmp != "") != tt.tmp {
				t.Fatalf("made %+v", made)
			}
			if made.home != "" {
				if b, err := os.ReadFile(filepath.Join(made.home, ".tool", "s.json")); err != nil || string(b) != "{}" {
					t.Errorf("home file: %q %v", b, err)
				}
			}
			if tt.wantTmpInHome && made.tmp != filepath.Join(made.home, ".tmp") {
				t.Errorf("TMPDIR %q, want inside HOME %q", made.tmp, made.home)
			}
			if tt.tmp && !tt.home && !strings.HasPrefix(filepath.Base(made.tmp), "walkie-tmp-") {
				t.Errorf("TMPDIR %q", made.tmp)
			}
			env := buildEnv([]string{"HOME=/real", "TMPDIR=/real-tmp", "XDG_CONFIG_HOME=/real/.config"},
				Spec{EnvAllow: []string{"HOME", "TMPDIR", "XDG_*"}, PrivateHome: tt.home, PrivateTmp: tt.tmp}, made)
			for k, want := range map[string]string{"HOME": made.home, "TMPDIR": made.tmp} {
				if got := EnvValue(env, k); want != "" && got != want {
					t.Errorf("%s=%q, want %q", k, got, want)
				}
			}
			if tt.home && EnvValue(env, "XDG_CONFIG_HOME") != "" {
				t.Errorf("the real XDG_CONFIG_HOME reached a session with a private HOME: %q", env)
			}
			for _, d := range []string{made.home, made.tmp} {
				if d == "" {
					continue
				}
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
					t.Errorf("%s: %v %v (want a directory only its owner can enter)", d, fi, err)
				}
			}
			if err := made.remove(); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{made.home, made.tmp} {
				if _, err := os.Stat(d); d != "" && !os.IsNotExist(err) {
					t.Errorf("%s left behind (%v)", d, err)
				}
			}
		})
	}
}

func TestHomeFileMayNotEscape(t *testing.T) {
	for _, name := range []string{"../x", "a/../../x", "/../../x"} {
		made, err := privateDirs(Spec{PrivateHome: true, HomeFiles: map[string]string{name: "x"}})
		if !errors.Is(err, ErrHomeEscape) {
			t.Errorf("%q: err %v, want ErrHomeEscape", name, err)
		}
		if made.home != "" {
			if _, err := os.Stat(made.home); !os.IsNotExist(err) {
				t.Errorf("%q: the private HOME %s was left behind", name, made.home)
			}
		}
	}
}
