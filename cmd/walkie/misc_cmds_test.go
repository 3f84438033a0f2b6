package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/cmd/walkie/skills"
	"github.com/walkie-sh/walkie/walkie"
)

func TestSkillCommandsParse(t *testing.T) {
	if o := parse(t, skillInstallCommand, "--claude", "--project"); !reflect.DeepEqual(o.CLIs, []string{"claude"}) || o.User {
		t.Errorf("skill install options %+v", o)
	}
	if o := parse(t, skillRemoveCommand); !reflect.DeepEqual(o.CLIs, skills.CLIs) || !o.User {
		t.Errorf("skill remove options %+v", o)
	}
	if o := parse(t, skillShowCommand, "--codex"); !reflect.DeepEqual(o.CLIs, []string{"codex"}) {
		t.Errorf("skill show options %+v", o)
	}
}

// The skill installed in the user's home for both CLIs, installed again,
// and removed.
func TestSkillCommandsRun(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	f := fakeFactory("")
	o := &skillOptions{IO: f.IO, CLIs: skills.CLIs, User: true}
	claude, codex := filepath.Join(home, ".claude/skills/walkie-debate/SKILL.md"), filepath.Join(home, ".agents/skills/walkie-debate/SKILL.md")
	out, _, code := f.run(t, func() error { return skillInstallRun(ctx, o) })
	want := "Claude Code skill installed: " + claude + " (walkie " + readBuildVersion().Version + ")\nCodex skill installed: " + codex + " (walkie " + readBuildVersion().Version + ")\n"
	if code != 0 || out != want {
		t.Errorf("install: exit %d\n%s\nwant\n%s", code, out, want)
	}
	if b, err := os.ReadFile(claude); err != nil || !strings.Contains(string(b), skills.Marker) {
		t.Errorf("the skill as written: %v\n%s", err, b)
	}
	out, _, code = f.run(t, func() error { return skillInstallRun(ctx, o) })
	if code != 0 || !strings.HasPrefix(out, "Claude Code skill already installed: "+claude+"\n") {
		t.Errorf("install again: exit %d, %q", code, out)
	}
	out, _, code = f.run(t, func() error { return skillRemoveRun(ctx, o) })
	if code != 0 || out != "Claude Code skill removed: "+claude+"\nCodex skill removed: "+codex+"\n" {
		t.Errorf("remove: exit %d, %q", code, out)
	}
	if _, err := os.Stat(filepath.Dir(claude)); !os.IsNotExist(err) {
		t.Errorf("the skill's folder stays: %v", err)
	}
	out, _, code = f.run(t, func() error { return skillShowRun(ctx, &skillOptions{IO: f.IO, CLIs: []string{"codex"}}) })
	if code != 0 || !strings.Contains(out, skills.Marker) {
		t.Errorf("show: exit %d\n%s", code, out)
	}
}

func TestDoctorCommandsParse(t *testing.T) {
	o := parse(t, doctorCommand, "d.walkie.md", "--agents", "ada=claude", "--config", "ci.yaml", "--json")
	if !reflect.DeepEqual(o.Files, []string{"d.walkie.md"}) || !reflect.DeepEqual(o.Agents, []string{"ada=claude"}) || o.ConfigPath != "ci.yaml" || o.JSON == nil {
		t.Errorf("doctor options %+v", o)
	}
	if v := parse(t, versionCommand, "--json"); v.JSON == nil {
		t.Errorf("version options %+v", v)
	}
}

// doctor on a debate whose participants no agent plays nor anyone
// declared, then cast to agents whose CLIs are not installed; and the
// version.
func TestDoctorCommandsRun(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ada", "brook"}, MaxRounds: 2}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	f := fakeFactory("")
	out, stderr, code := f.run(t, func() error { return doctorRun(ctx, &doctorOptions{IO: f.IO, Config: f.Config, Files: []string{file}}) })
	if code != exitBadInput || out != "" {
		t.Errorf("doctor of undeclared participants: exit %d, want %d\n%s%s", code, exitBadInput, out, stderr)
	}
	out, _, code = f.run(t, func() error {
		return doctorRun(ctx, &doctorOptions{IO: f.IO, Config: f.Config, Files: []string{file}, Agents: []string{"claude", "codex"}})
	})
	if code != exitError || !strings.HasPrefix(out, "AGENT") || !strings.Contains(out, "\nclaude  yes") || !strings.Contains(out, "\ncodex   yes") {
		t.Errorf("doctor: exit %d, want %d\n%s", code, exitError, out)
	}
	out, _, code = f.run(t, func() error { return versionRun(ctx, &versionOptions{IO: f.IO}) })
	if code != 0 || !strings.HasPrefix(out, "walkie "+readBuildVersion().Version+"\ncommit ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}
