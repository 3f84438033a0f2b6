package config

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	if err != nil {
		t.Fatalf("rule %q: %v", s, err)
	}
	return re
}

func TestArgv(t *testing.T) {
	v := Vars{Prompt: "say \"hi\"; rm -rf / $(x)\nline 2", File: "/a b/d.walkie.md", Agent: "fake-a", Dir: "/a b", Turn: 7, Round: 4}
	tests := []struct {
		name    string
		command []string
		model   string
		want    []string
		err     string
	}{
		{"all placeholders", []string{"fake", "{agent}", "{file}", "{dir}", "{turn}", "{round}", "{prompt}"}, "",
			[]string{"fake", "fake-a", "/a b/d.walkie.md", "/a b", "7", "4", v.Prompt}, ""},
		{"inside text", []string{"fake", "--turn={turn}", "{dir}/notes-{agent}.txt"}, "",
			[]string{"fake", "--turn=7", "/a b/notes-fake-a.txt"}, ""},
		{"repeated", []string{"{turn}{turn}"}, "", []string{"77"}, ""},
		{"model", []string{"x", "-m", "{model}"}, "gpt-5", []string{"x", "-m", "gpt-5"}, ""},
		{"json braces stay", []string{"x", `{"a":{"b":1}}`, "{}", "{A}", "{ turn }", "{", "}"}, "",
			[]string{"x", `{"a":{"b":1}}`, "{}", "{A}", "{ turn }", "{", "}"}, ""},
		{"brace before placeholder", []string{"{{turn}}"}, "", []string{"{7}"}, ""},
		{"unknown", []string{"x", "{prmopt}"}, "", nil, `config: agent "t": command[1]: unknown placeholder {prmopt} (did you mean {prompt}?)`},
		{"unknown far", []string{"x", "{home}"}, "", nil, `unknown placeholder {home}; known: {prompt} {file} {agent} {turn} {round} {dir} {model}`},
		{"empty command", nil, "", nil, `config: agent "t" has no command`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Agent{Name: "t", Command: tt.command, Model: tt.model}
			got, err := a.Argv(v)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestArgvDoesNotModifyCommand(t *testing.T) {
	a := Agent{Command: []string{"x", "{turn}"}}
	if _, err := a.Argv(Vars{Turn: 3}); err != nil {
		t.Fatal(err)
	}
	if a.Command[1] != "{turn}" {
		t.Error("Argv changed the agent's command")
	}
}

func TestWorkDir(t *testing.T) {
	v := Vars{Dir: "/w", Agent: "a"}
	for _, tt := range []struct{ dir, want string }{
		{"", "/w"},
		{"{dir}", "/w"},
		{"{dir}/work-{agent}", "/w/work-a"},
		{"/abs", "/abs"},
	} {
		got, err := Agent{Dir: tt.dir}.WorkDir(v)
		if err != nil || got != tt.want {
			t.Errorf("WorkDir(%q) = %q, %v; want %q", tt.dir, got, err, tt.want)
		}
	}
	if _, err := (Agent{Name: "a", Dir: "{nope}"}).WorkDir(v); err == nil || !strings.Contains(err.Error(), `agent "a": dir: unknown placeholder {nope}`) {
		t.Errorf("err %v", err)
	}
}

func TestEnvVars(t *testing.T) {
	a := Agent{Name: "c", Env: map[string]string{"WALKIE_TURN": "{turn}", "LANG": "C.UTF-8", "M": "{model}"}, Model: "m1"}
	got, err := a.EnvVars(Vars{Turn: 5})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"LANG=C.UTF-8", "M=m1", "WALKIE_TURN=5"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	a.Env["BAD"] = "{x}"
	if _, err := a.EnvVars(Vars{}); err == nil || !strings.Contains(err.Error(), "env.BAD: unknown placeholder {x}") {
		t.Errorf("err %v", err)
	}
}
