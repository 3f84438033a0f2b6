package scripts

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// The systemd units and scripts/install-systemd.sh, checked as systemd
// reads them (systemd.unit(5), systemd.service(5), systemd.exec(5)):
// sections and keys, specifiers (%h, %%), quoting and C escapes, and $
// in command lines. When systemd-analyze is on PATH (it is wherever
// systemd is), every rendered unit must also verify without a word.

// unitFile is a parsed unit: section → key → its values, in order.
type unitFile map[string]map[string][]string

// parseUnit reads a unit file: comments (# and ;), [Section] lines,
// KEY=VALUE lines, a trailing backslash joining the next line.
func parseUnit(b []byte) (unitFile, error) {
	u := unitFile{}
	section := ""
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		for strings.HasSuffix(line, `\`) && i+1 < len(lines) {
			i++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(lines[i])
		}
		switch {
		case line == "", strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: %q is neither a section nor a key=value in one", i+1, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			u[section][k] = append(u[section][k], v)
		}
	}
	return u, nil
}

// one is the single value of a key, or fails.
func (u unitFile) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Fatalf("[%s] %s: %d values %q, want one", section, key, len(vs), vs)
	}
	return vs[0]
}

// specifiers resolves a value's specifiers as systemd does for a user
// unit: %h is home, %% a percent sign; any other is an error here (the
// units use no other, and a stray % from a path would be read as one).
func specifiers(v, home string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 >= len(v) {
			return "", fmt.Errorf("%q: a lone %% at the end", v)
		}
		i++
		switch v[i] {
		case '%':
			b.WriteByte('%')
		case 'h':
			b.WriteString(home)
		default:
			return "", fmt.Errorf("%q: specifier %%%c", v, v[i])
		}
	}
	return b.String(), nil
}

// words splits a command line or an assignment list into its words:
// white space separates them, double or single quotes wrap a whole word,
// and a backslash escapes the next character C-style (\\ \" \' \n \t).
func words(v string) ([]string, error) {
	var out []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 >= len(v) {
				return nil, fmt.Errorf("%q: a backslash at the end", v)
			}
			i++
			switch v[i] {
			case 'n':
				w.WriteByte('\n')
			case 't':
				w.WriteByte('\t')
			case '\\', '"', '\'', ' ':
				w.WriteByte(v[i])
			default:
				return nil, fmt.Errorf("%q: escape \\%c", v, v[i])
			}
			in = true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			w.WriteByte(c)
		case c == '"' || c == '\'':
			if in {
				return nil, fmt.Errorf("%q: a quote inside a word", v)
			}
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out, in = append(out, w.String()), false
				w.Reset()
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unbalanced quoting", v)
	}
	if in {
		out = append(out, w.String())
	}
	return out, nil
}

// unitWords is a value's words once its specifiers are resolved, in
// systemd's order.
func unitWords(v, home string) ([]string, error) {
	v, err := specifiers(v, home)
	if err != nil {
		return nil, err
	}
	return words(v)
}

// execArgs is an ExecStart= line's argv: specifiers, words, then $$ for
// a dollar sign; a $ that would expand a variable is an error here.
func execArgs(v, home string) ([]string, error) {
	ws, err := unitWords(v, home)
	if err != nil {
		return nil, err
	}
	for i, w := range ws {
		var b strings.Builder
		for j := 0; j < len(w); j++ {
			switch {
			case w[j] != '$':
				b.WriteByte(w[j])
			case j+1 < len(w) && w[j+1] == '$':
				b.WriteByte('$')
				j++
			default:
				return nil, fmt.Errorf("%q: a $ systemd would expand", w)
			}
		}
		ws[i] = b.String()
	}
	return ws, nil
}

// environment is the NAME=value pairs of a unit's Environment= lines.
func environment(u unitFile, home string) (map[string]string, error) {
	env := map[string]string{}
	for _, line := range u["Service"]["Environment"] {
		ws, err := unitWords(line, home)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			k, val, ok := strings.Cut(w, "=")
			if !ok {
				return nil, fmt.Errorf("Environment= %q: no =", w)
			}
			env[k] = val
		}
	}
	return env, nil
}

// checkUnit checks what systemd and walkie need of a serve or worker
// unit, whatever the paths, and returns ExecStart's argv, its working
// directory and its PATH.
func checkUnit(t *testing.T, b []byte, home, command string) (args []string, dir, path string) {
	t.Helper()
	u, err := parseUnit(b)
	if err != nil {
		t.Fatal(err)
	}
	// Issue 32 item 17: a user manager cannot order against the system's
	// targets; After=network-online.target there does nothing.
	for _, k := range []string{"After", "Wants", "Requires", "Before", "BindsTo"} {
		for _, v := range u["Unit"][k] {
			if strings.Contains(v, "network") {
				t.Errorf("[Unit] %s=%s: a user unit cannot order against a system target", k, v)
			}
		}
	}
	args, err = execArgs(u.one(t, "Service", "ExecStart"), home)
	if err != nil {
		t.Fatalf("ExecStart: %v", err)
	}
	if len(args) < 2 || !filepath.IsAbs(args[0]) || args[1] != command {
		t.Fatalf("ExecStart = %q, want an absolute walkie, then %s", args, command)
	}
	flagValue := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("ExecStart %q: no %s value", args, name)
		}
		return args[i+1]
	}
	if flagValue("--log-format") != "json" {
		t.Errorf("logs are not JSON: %q", args)
	}
	grace, err := time.ParseDuration(flagValue("--grace"))
	if err != nil {
		t.Fatal(err)
	}
	stop, err := strconv.Atoi(u.one(t, "Service", "TimeoutStopSec"))
	if err != nil || time.Duration(stop)*time.Second < grace+10*time.Second {
		t.Errorf("TimeoutStopSec %q is not comfortably above --grace %s", u.one(t, "Service", "TimeoutStopSec"), grace)
	}
	if u.one(t, "Service", "KillMode") != "mixed" || u.one(t, "Service", "RestartPreventExitStatus") != "2" {
		t.Errorf("KillMode %q, RestartPreventExitStatus %q", u.one(t, "Service", "KillMode"), u.one(t, "Service", "RestartPreventExitStatus"))
	}
	if u.one(t, "Install", "WantedBy") != "default.target" {
		t.Errorf("WantedBy %q: a user unit is wanted by default.target", u.one(t, "Install", "WantedBy"))
	}
	env, err := environment(u, home)
	if err != nil {
		t.Fatal(err)
	}
	path = env["PATH"]
	if !slices.Contains(strings.Split(path, ":"), "/usr/bin") {
		t.Errorf("PATH %q lacks /usr/bin (node's #!/usr/bin/env)", path)
	}
	if vs := u["Service"]["WorkingDirectory"]; len(vs) == 1 {
		if dir, err = specifiers(vs[0], home); err != nil {
			t.Fatal(err)
		}
	}
	return args, dir, path
}

// verifyUnit runs systemd-analyze verify on a rendered unit whose binary
// exists: it must say nothing. Without systemd-analyze the check is
// skipped, except in CI.
func verifyUnit(t *testing.T, b []byte) {
	t.Helper()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		sessiontest.Need(t, errors.New("no systemd-analyze on PATH: the units are checked by this file's parser alone"))
		return
	}
	p := filepath.Join(t.TempDir(), "walkie.service")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, "verify", p).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

func TestSystemdTemplates(t *testing.T) {
	for _, tc := range []struct{ file, command string }{{"walkie.service", "serve"}, {"walkie-worker.service", "worker"}} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			args, dir, path := checkUnit(t, b, "/home/YOU", tc.command)
			if args[0] != "/home/YOU/go/bin/walkie" {
				t.Errorf("the binary is %q; install-systemd.sh replaces ExecStart=", args[0])
			}
			if !strings.HasPrefix(path, "/home/YOU/.local/bin:") {
				t.Errorf("PATH %q, want ~/.local/bin first (where pip, pipx and many installers put CLIs)", path)
			}
			if tc.command == "serve" {
				if i := slices.Index(args, "--dir"); dir != args[i+1] {
					t.Errorf("--dir %q, WorkingDirectory %q: the same directory", args[i+1], dir)
				}
			}
		})
	}
}

// TestParseUnitRefuses: the checker itself catches what systemd misreads.
func TestParseUnitRefuses(t *testing.T) {
	for name, v := range map[string]string{
		"unbalanced quote": `"/bin/walkie serve`,
		"a stray percent":  `/bin/walkie serve --dir "/a/100% b"`,
		"a variable":       `/bin/walkie serve --dir "/a/$HOME"`,
		"unknown escape":   `/bin/walkie serve --dir "/a/\x"`,
	} {
		if _, err := execArgs(v, "/home/x"); err == nil {
			t.Errorf("%s: %q parsed", name, v)
		}
	}
	if _, err := parseUnit([]byte("ExecStart=/bin/true\n")); err == nil {
		t.Error("a key outside a section parsed")
	}
}

// runSystemd runs install-systemd.sh with args under env, HOME
// /home/alice unless env says otherwise.
func runSystemd(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runInstaller(t, "install-systemd.sh", append([]string{"HOME=/home/alice"}, env...), args...)
}

// TestSystemdPrint: the rendered unit carries every value given, quoted
// and escaped so that systemd reads them back exactly (spaces, %, $,
// quotes, backslashes), the user's PATH, and none of the template's
// placeholders; systemd-analyze verifies it.
func TestSystemdPrint(t *testing.T) {
	bin := fakeWalkie(t)
	dir := `/home/alice/Debates & 100% $HOME "q" \x`
	path := "/home/alice/.nvm/versions/node/v22/bin:/home/alice/.local/bin"
	out, stderr, code := runSystemd(t, nil, "--print", "--bin", bin, "--dir", dir, "--listen", "127.0.0.1:7499", "--path", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(out, "/home/YOU") || strings.Contains(out, "%h/debates") || strings.Contains(out, "systemctl --user enable") {
		t.Errorf("placeholders or by-hand instructions left:\n%s", out)
	}
	args, wd, gotPath := checkUnit(t, []byte(out), "/home/alice", "serve")
	want := []string{bin, "serve", "--dir", dir, "--listen", "127.0.0.1:7499", "--grace", "2m", "--log-format", "json"}
	if !slices.Equal(args, want) {
		t.Errorf("ExecStart = %q\nwant %q", args, want)
	}
	if wd != dir {
		t.Errorf("WorkingDirectory = %q, want %q", wd, dir)
	}
	if gotPath != path+":/usr/bin:/bin" {
		t.Errorf("PATH = %q, want the given one with /usr/bin and /bin added", gotPath)
	}
	verifyUnit(t, []byte(out))
	checkGolden(t, "systemd-print.golden", strings.ReplaceAll(out, bin, "/home/alice/go/bin/walkie"))
	// Defaults: the caller's PATH, ~/debates.
	out, _, _ = runSystemd(t, []string{"PATH=/opt/cli/bin:" + os.Getenv("PATH")}, "--print", "--bin", bin)
	_, wd, gotPath = checkUnit(t, []byte(out), "/home/alice", "serve")
	if wd != "/home/alice/debates" || !strings.HasPrefix(gotPath, "/opt/cli/bin:") {
		t.Errorf("defaults: WorkingDirectory %q, PATH %q", wd, gotPath)
	}
}

// TestSystemdRefuses: bad input is refused with exit 2, a message that
// names the value and the fix, and no unit.
func TestSystemdRefuses(t *testing.T) {
	bin := fakeWalkie(t)
	checkRefusals(t, runSystemd, bin, "/home/alice", []refusal{
		{[]string{"--dir", `/home/alice/a\`}, "ends in a backslash"},
		{[]string{"--dir", "/home/alice/a "}, "ends in white space"},
	})
	// Without systemd, only --print works.
	tools := t.TempDir()
	for _, name := range []string{"bash", "dirname", "sed", "awk", "mktemp", "id"} {
		if p, err := exec.LookPath(name); err == nil {
			if err := os.Symlink(p, filepath.Join(tools, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, stderr, code := runSystemd(t, []string{"PATH=" + tools}, "--bin", bin); code != 2 || !strings.Contains(stderr, "no systemctl") {
		t.Errorf("install without systemctl: exit %d, %q", code, stderr)
	}
}

// fakeSystemd writes systemctl, loginctl and curl into a directory, as a
// user manager would answer them: systemctl logs its arguments to
// $FAKE_LOG and keeps whether the service runs in $FAKE_RUNNING (a copy
// of the unit it started, from $XDG_CONFIG_HOME or ~/.config); loginctl
// says $FAKE_LINGER.
func fakeSystemd(t *testing.T) string {
	tools := map[string]string{
		"systemctl": `echo "systemctl $*" >>"$FAKE_LOG"
[ "$1" = --user ] || exit 64
unit=${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user/$3
case $2 in
daemon-reload) ;;
enable) [ -f "$unit" ] || exit 1 ;;
restart) [ -f "$unit" ] && cp "$unit" "$FAKE_RUNNING" ;;
disable) rm -f "$FAKE_RUNNING" ;;
*) exit 64 ;;
esac`,
		"loginctl": `echo "loginctl $*" >>"$FAKE_LOG"; echo "${FAKE_LINGER:-no}"`,
		"curl":     `echo "curl $*" >>"$FAKE_LOG"; echo '{"status":"ok"}'`,
	}
	return writeTools(t, tools)
}

// TestSystemdFlow runs the install against a stand-in systemctl: first
// install (the unit written, the manager reloaded, the service enabled and
// started, its health asked), reinstall over the running service, the
// linger hint, uninstall.
func TestSystemdFlow(t *testing.T) {
	home := t.TempDir()
	bin := fakeWalkie(t)
	tools := fakeSystemd(t)
	log := filepath.Join(t.TempDir(), "calls")
	running := filepath.Join(t.TempDir(), "running")
	agents := t.TempDir()
	if err := os.WriteFile(filepath.Join(agents, "claude"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + tools + ":" + os.Getenv("PATH"), "FAKE_LOG=" + log, "FAKE_RUNNING=" + running}
	unit := filepath.Join(home, ".config", "systemd", "user", "walkie.service")
	calls := func() []string { return takeCalls(log, 3) }

	out, stderr, code := runSystemd(t, env, "--bin", bin, "--path", agents)
	if code != 0 {
		t.Fatalf("install: exit %d: %s%s", code, out, stderr)
	}
	want := []string{"systemctl --user daemon-reload", "systemctl --user enable", "systemctl --user restart", "loginctl show-user " + userName(t), "curl -fsS --max-time"}
	if got := calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("install calls %q, want %q", got, want)
	}
	installed, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(unit); fi.Mode().Perm() != 0o644 {
		t.Errorf("unit mode %v, want 0644", fi.Mode().Perm())
	}
	started, _ := os.ReadFile(running)
	if !bytes.Equal(started, installed) {
		t.Error("the service was not restarted with the unit installed")
	}
	_, wd, path := checkUnit(t, installed, home, "serve")
	if wd != filepath.Join(home, "debates") || path != agents+":/usr/bin:/bin" {
		t.Errorf("installed: WorkingDirectory %q, PATH %q", wd, path)
	}
	if fi, err := os.Stat(filepath.Join(home, "debates")); err != nil || !fi.IsDir() {
		t.Errorf("~/debates not created: %v", err)
	}
	printed, _, _ := runSystemd(t, env, "--print", "--bin", bin, "--path", agents)
	calls()
	if string(installed) != printed {
		t.Error("the installed unit is not what --print shows")
	}
	for _, w := range []string{"started walkie.service with " + unit, "claude: " + filepath.Join(agents, "claude"),
		"codex: not on the service's PATH", "loginctl enable-linger", `healthy: {"status":"ok"}`} {
		if !strings.Contains(out, w) {
			t.Errorf("install output lacks %q:\n%s", w, out)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(unit)); len(ents) != 1 {
		t.Errorf("the unit directory holds %d entries, want the unit alone (a temp file left?)", len(ents))
	}

	// Again, over the running service, lingering, with XDG_CONFIG_HOME.
	xdg := t.TempDir()
	env2 := append(env, "FAKE_LINGER=yes", "XDG_CONFIG_HOME="+xdg)
	out, stderr, code = runSystemd(t, env2, "--bin", bin)
	if code != 0 {
		t.Fatalf("reinstall: exit %d: %s%s", code, out, stderr)
	}
	if got := calls(); !reflect.DeepEqual(got, want) {
		t.Errorf("reinstall calls %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(xdg, "systemd", "user", "walkie.service")); err != nil || strings.Contains(out, "enable-linger") {
		t.Errorf("reinstall under XDG_CONFIG_HOME: %v\n%s", err, out)
	}

	if out, stderr, code := runSystemd(t, env, "--uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d: %s%s", code, out, stderr)
	}
	if got, want := calls(), []string{"systemctl --user disable", "systemctl --user daemon-reload"}; !reflect.DeepEqual(got, want) {
		t.Errorf("uninstall calls %q, want %q", got, want)
	}
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit still there after uninstall: %v", err)
	}
	if _, err := os.Stat(running); !errors.Is(err, os.ErrNotExist) {
		t.Error("the service still runs after uninstall")
	}
}

func userName(t *testing.T) string {
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
