// Package scripts holds no Go code, only tests of the service files and
// installers beside them: what launchd would read is checked here, on any
// platform, without plutil or launchctl.
package scripts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	template = "dev.walkie.serve.plist"
	label    = "dev.walkie.serve"
)

// parsePlist decodes an XML property list into Go values (map[string]any,
// []any, string, int64, bool), as strictly as launchd reads it: one root
// value, a dict of alternating key and value, no duplicate keys, no text
// outside strings, and comments without "--".
func parsePlist(b []byte) (map[string]any, error) {
	if !bytes.Contains(b, []byte(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"`)) {
		return nil, errors.New("no plist DOCTYPE")
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var root any
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.Comment:
			if bytes.Contains(t, []byte("--")) {
				return nil, fmt.Errorf("line %d: \"--\" inside a comment is not XML", line(d, b))
			}
		case xml.StartElement:
			if t.Name.Local != "plist" || root != nil {
				return nil, fmt.Errorf("line %d: <%s> where <plist> was expected", line(d, b), t.Name.Local)
			}
			v, err := plistValue(d, b)
			if err != nil {
				return nil, err
			}
			if err := d.Skip(); err != nil { // </plist>, and nothing else inside
				return nil, err
			}
			root = v
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, fmt.Errorf("line %d: text outside the plist", line(d, b))
			}
		}
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the root is %T, want a dict", root)
	}
	return m, nil
}

func line(d *xml.Decoder, b []byte) int {
	return bytes.Count(b[:d.InputOffset()], []byte("\n")) + 1
}

// plistValue reads the next element as a value.
func plistValue(d *xml.Decoder, b []byte) (any, error) {
	start, err := nextStart(d, b)
	if err != nil {
		return nil, err
	}
	return elementValue(d, b, start)
}

func nextStart(d *xml.Decoder, b []byte) (*xml.StartElement, error) {
	for {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return &t, nil
		case xml.EndElement:
			return nil, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, fmt.Errorf("line %d: stray text %q", line(d, b), t)
			}
		case xml.Comment:
			if bytes.Contains(t, []byte("--")) {
				return nil, fmt.Errorf("line %d: \"--\" inside a comment is not XML", line(d, b))
			}
		}
	}
}

func elementValue(d *xml.Decoder, b []byte, start *xml.StartElement) (any, error) {
	if start == nil {
		return nil, fmt.Errorf("line %d: a value is missing", line(d, b))
	}
	text := func() (string, error) {
		var s string
		err := d.DecodeElement(&s, start)
		return s, err
	}
	switch start.Name.Local {
	case "string":
		return text()
	case "integer":
		s, err := text()
		if err != nil {
			return nil, err
		}
		return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, err
		}
		return start.Name.Local == "true", nil
	case "array":
		var a []any
		for {
			next, err := nextStart(d, b)
			if err != nil {
				return nil, err
			}
			if next == nil {
				return a, nil
			}
			v, err := elementValue(d, b, next)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case "dict":
		m := map[string]any{}
		for {
			key, err := nextStart(d, b)
			if err != nil {
				return nil, err
			}
			if key == nil {
				return m, nil
			}
			if key.Name.Local != "key" {
				return nil, fmt.Errorf("line %d: <%s> where a <key> was expected", line(d, b), key.Name.Local)
			}
			var k string
			if err := d.DecodeElement(&k, key); err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: key %s twice", line(d, b), k)
			}
			v, err := plistValue(d, b)
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", k, err)
			}
			m[k] = v
		}
	}
	return nil, fmt.Errorf("line %d: <%s> is not a plist value walkie uses", line(d, b), start.Name.Local)
}

// launchdKeys are the launchd.plist(5) keys the agent may use: a typo
// (KeepALive) would be ignored by launchd without a word.
var launchdKeys = []string{
	"Label", "ProgramArguments", "WorkingDirectory", "EnvironmentVariables", "RunAtLoad", "KeepAlive",
	"ThrottleInterval", "ExitTimeOut", "ProcessType", "StandardOutPath", "StandardErrorPath",
}

// checkAgent checks what launchd and walkie need of a plist, whatever the
// paths, and returns its arguments.
func checkAgent(t *testing.T, p map[string]any) []string {
	t.Helper()
	for k := range p {
		if !slices.Contains(launchdKeys, k) {
			t.Errorf("key %s: not a launchd key this agent should use", k)
		}
	}
	if p["Label"] != label {
		t.Errorf("Label = %v", p["Label"])
	}
	raw, _ := p["ProgramArguments"].([]any)
	var args []string
	for _, a := range raw {
		s, ok := a.(string)
		if !ok {
			t.Fatalf("ProgramArguments holds %T", a)
		}
		args = append(args, s)
	}
	if len(args) < 2 || !filepath.IsAbs(args[0]) || args[1] != "serve" {
		t.Fatalf("ProgramArguments = %q, want an absolute walkie, then serve", args)
	}
	flagValue := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			t.Fatalf("ProgramArguments %q: no %s value", args, name)
		}
		return args[i+1]
	}
	if dir := flagValue("--dir"); !filepath.IsAbs(dir) || p["WorkingDirectory"] != dir {
		t.Errorf("--dir %q, WorkingDirectory %v: both the same absolute path", dir, p["WorkingDirectory"])
	}
	if flagValue("--log-format") != "json" {
		t.Errorf("logs are not JSON: %q", args)
	}
	// launchd sends SIGKILL ExitTimeOut after SIGTERM: walkie must have
	// had its whole grace, and the agents their 2 s kill_grace, by then.
	grace, err := time.ParseDuration(flagValue("--grace"))
	if err != nil {
		t.Fatal(err)
	}
	if exit, _ := p["ExitTimeOut"].(int64); time.Duration(exit)*time.Second < grace+10*time.Second {
		t.Errorf("ExitTimeOut %v s is not comfortably above --grace %s", p["ExitTimeOut"], grace)
	}
	if keep, _ := p["KeepAlive"].(map[string]any); keep["SuccessfulExit"] != false || len(keep) != 1 {
		t.Errorf("KeepAlive = %v, want a restart after a crash only", p["KeepAlive"])
	}
	if p["RunAtLoad"] != true || p["ProcessType"] != "Background" {
		t.Errorf("RunAtLoad %v, ProcessType %v", p["RunAtLoad"], p["ProcessType"])
	}
	for _, k := range []string{"StandardOutPath", "StandardErrorPath"} {
		if s, _ := p[k].(string); !filepath.IsAbs(s) || !strings.HasSuffix(s, "/Library/Logs/walkie/serve.log") {
			t.Errorf("%s = %v, want ~/Library/Logs/walkie/serve.log, absolute", k, p[k])
		}
	}
	env, _ := p["EnvironmentVariables"].(map[string]any)
	if path, _ := env["PATH"].(string); !slices.Contains(strings.Split(path, ":"), "/usr/bin") {
		t.Errorf("PATH %q lacks /usr/bin (node's env, /usr/bin/security)", path)
	}
	return args
}

func TestTemplate(t *testing.T) {
	b, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePlist(b)
	if err != nil {
		t.Fatalf("%s: %v", template, err)
	}
	args := checkAgent(t, p)
	if args[0] != "/Users/YOU/go/bin/walkie" {
		t.Errorf("the template's binary is %q; install-launchd.sh replaces /Users/YOU/go/bin/walkie", args[0])
	}
}

// TestParsePlistRefuses: the checker itself catches what launchd refuses.
func TestParsePlistRefuses(t *testing.T) {
	good, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string][2]string{
		"dashes in a comment": {"<!-- Restart after a crash", "<!-- --Restart after a crash"},
		"unclosed string":     {"<string>serve</string>", "<string>serve"},
		"key twice":           {"<key>RunAtLoad</key>", "<key>Label</key>"},
		"value missing":       {"<key>RunAtLoad</key>\n\t<true/>", "<key>RunAtLoad</key>"},
		"bare ampersand":      {"<string>serve</string>", "<string>a & b</string>"},
	} {
		bad := strings.Replace(string(good), edit[0], edit[1], 1)
		if bad == string(good) {
			t.Fatalf("%s: the edit did not apply", name)
		}
		if _, err := parsePlist([]byte(bad)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// fakeWalkie makes an executable to stand for the walkie binary.
func fakeWalkie(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "walkie")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// runScript runs install-launchd.sh with args under env (added to a
// minimal environment) and returns its stdout, stderr and exit code.
func runScript(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runInstaller(t, "install-launchd.sh", append([]string{"HOME=/Users/alice"}, env...), args...)
}

// runInstaller runs one of the installers with args under env (added to a
// minimal environment; a later value of a name wins) and returns its
// stdout, stderr and exit code.
func runInstaller(t *testing.T, script string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestInstallPrint: the rendered plist is valid, carries every value
// given, escaped, and nothing of the template's placeholders.
func TestInstallPrint(t *testing.T) {
	bin := fakeWalkie(t)
	dir := "/Users/alice/Debates & <Reviews>"
	out, stderr, code := runScript(t, nil, "--print", "--bin", bin, "--dir", dir,
		"--listen", "127.0.0.1:7499", "--path", "/opt/homebrew/bin:/Users/alice/.npm-global/bin")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(out, "/Users/YOU") || strings.Contains(out, "launchctl") {
		t.Errorf("placeholders or by-hand instructions left:\n%s", out)
	}
	p, err := parsePlist([]byte(out))
	if err != nil {
		t.Fatalf("rendered plist: %v\n%s", err, out)
	}
	args := checkAgent(t, p)
	want := []string{bin, "serve", "--dir", dir, "--listen", "127.0.0.1:7499", "--grace", "2m", "--log-format", "json"}
	if !slices.Equal(args, want) {
		t.Errorf("ProgramArguments = %q\nwant %q", args, want)
	}
	env := p["EnvironmentVariables"].(map[string]any)
	if env["PATH"] != "/opt/homebrew/bin:/Users/alice/.npm-global/bin:/usr/bin:/bin" {
		t.Errorf("PATH = %q, want the given one with /usr/bin and /bin added", env["PATH"])
	}
	if p["StandardOutPath"] != "/Users/alice/Library/Logs/walkie/serve.log" {
		t.Errorf("StandardOutPath = %v", p["StandardOutPath"])
	}
	checkGolden(t, "launchd-print.golden", strings.ReplaceAll(out, bin, "/Users/alice/go/bin/walkie"))
}

// TestInstallRefuses: bad input is refused with exit 2, a message that
// names the value and the fix, and no plist.
func TestInstallRefuses(t *testing.T) {
	bin := fakeWalkie(t)
	checkRefusals(t, runScript, bin, "/Users/alice", nil)
	// Not on a Mac, only --print works.
	if _, stderr, code := runScript(t, []string{"PATH=" + fakeTools(t, "Linux") + ":" + os.Getenv("PATH")}, "--bin", bin); code != 2 || !strings.Contains(stderr, "macOS only") {
		t.Errorf("install on Linux: exit %d, %q", code, stderr)
	}
}

// fakeTools writes uname (saying os), launchctl, plutil and curl into a
// directory: launchctl logs its arguments to $FAKE_LOG and keeps whether
// the agent is loaded in $FAKE_LOADED, as launchd would.
func fakeTools(t *testing.T, os_ string) string {
	tools := map[string]string{
		"uname": "echo " + os_,
		"launchctl": `echo "launchctl $*" >>"$FAKE_LOG"
case $1 in
print) [ -e "$FAKE_LOADED" ] ;;
bootout) rm -f "$FAKE_LOADED" ;;
bootstrap) [ -f "$3" ] && cp "$3" "$FAKE_LOADED" ;;
*) exit 64 ;;
esac`,
		"plutil": `echo "plutil $*" >>"$FAKE_LOG"; [ "$1" = -lint ] && [ -s "$2" ]`,
		"curl":   `echo "curl $*" >>"$FAKE_LOG"; echo '{"status":"ok"}'`,
	}
	return writeTools(t, tools)
}

// TestInstallFlow runs the install against fake launchd tools: first
// install, reinstall over a running agent (boot out first, then
// bootstrap), uninstall.
func TestInstallFlow(t *testing.T) {
	home := t.TempDir()
	bin := fakeWalkie(t)
	tools := fakeTools(t, "Darwin")
	log := filepath.Join(t.TempDir(), "calls")
	loaded := filepath.Join(t.TempDir(), "loaded")
	uid := strconv.Itoa(os.Getuid())
	env := []string{"HOME=" + home, "PATH=" + tools + ":" + os.Getenv("PATH"), "FAKE_LOG=" + log, "FAKE_LOADED=" + loaded}
	plist := filepath.Join(home, "Library", "LaunchAgents", label+".plist")
	calls := func() []string { return takeCalls(log, 2) }

	out, stderr, code := runScript(t, env, "--bin", bin, "--path", "/opt/homebrew/bin")
	if code != 0 {
		t.Fatalf("install: exit %d: %s%s", code, out, stderr)
	}
	if got, want := calls(), []string{"plutil -lint", "launchctl print", "launchctl bootstrap", "curl -fsS"}; !reflect.DeepEqual(got, want) {
		t.Errorf("install calls %q, want %q", got, want)
	}
	installed, err := os.ReadFile(plist)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(plist); fi.Mode().Perm() != 0o644 {
		t.Errorf("plist mode %v, want 0644", fi.Mode().Perm())
	}
	p, err := parsePlist(installed)
	if err != nil {
		t.Fatal(err)
	}
	checkAgent(t, p)
	if p["WorkingDirectory"] != filepath.Join(home, "debates") {
		t.Errorf("default --dir: WorkingDirectory = %v", p["WorkingDirectory"])
	}
	for _, d := range []string{filepath.Join(home, "debates"), filepath.Join(home, "Library", "Logs", "walkie")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s not created: %v", d, err)
		}
	}
	printed, _, _ := runScript(t, env, "--print", "--bin", bin, "--path", "/opt/homebrew/bin")
	calls()
	if string(installed) != printed {
		t.Errorf("the installed plist is not what --print shows")
	}
	if !strings.Contains(out, "started gui/"+uid+"/"+label) || !strings.Contains(out, `healthy: {"status":"ok"}`) {
		t.Errorf("install output:\n%s", out)
	}
	if ents, _ := os.ReadDir(filepath.Dir(plist)); len(ents) != 1 {
		t.Errorf("LaunchAgents holds %d entries, want the plist alone (a temp file left?)", len(ents))
	}

	// Again, over the running agent.
	if out, stderr, code := runScript(t, env, "--bin", bin); code != 0 {
		t.Fatalf("reinstall: exit %d: %s%s", code, out, stderr)
	}
	if got, want := calls(), []string{"plutil -lint", "launchctl print", "launchctl bootout", "launchctl print", "launchctl bootstrap", "curl -fsS"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reinstall calls %q, want %q", got, want)
	}

	if out, stderr, code := runScript(t, env, "--uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d: %s%s", code, out, stderr)
	}
	if got, want := calls(), []string{"launchctl print", "launchctl bootout", "launchctl print"}; !reflect.DeepEqual(got, want) {
		t.Errorf("uninstall calls %q, want %q", got, want)
	}
	if _, err := os.Stat(plist); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plist still there after uninstall: %v", err)
	}
}

// takeCalls is what the stand-in tools logged to log since the last
// look, each call as its first n words, and empties the log.
func takeCalls(log string, n int) []string {
	b, _ := os.ReadFile(log)
	os.Remove(log)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		out = append(out, strings.Join(f[:min(len(f), n)], " "))
	}
	return out
}

// refusal is bad input an installer must refuse, and what it says.
type refusal struct {
	args []string
	want string
}

// checkRefusals runs an installer (run) with --print and each refusal the
// installers share (install-common.sh), then its own (more): each must
// exit 2, say what is wrong and print nothing.
func checkRefusals(t *testing.T, run func(*testing.T, []string, ...string) (string, string, int), bin, home string, more []refusal) {
	t.Helper()
	notExec := filepath.Join(t.TempDir(), "walkie")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range append([]refusal{
		{[]string{"--dir", "debates"}, "debates: give an absolute path"},
		{[]string{"--dir", "~/debates"}, "~/debates: give an absolute path"},
		{[]string{"--bin", "walkie"}, "walkie: give an absolute path"},
		{[]string{"--bin", "/nonexistent/walkie"}, "/nonexistent/walkie: not an executable file"},
		{[]string{"--bin", notExec}, notExec + ": not an executable file"},
		{[]string{"--dir", home + "/a\nb"}, "a value holds a line break"},
		{[]string{"--path", "/bin\n/usr/bin"}, "a value holds a line break"},
		{[]string{"--dir"}, "--dir needs a value"},
		{[]string{"--frobnicate"}, "unknown argument --frobnicate"},
	}, more...) {
		args := []string{"--print"}
		if !slices.Contains(tc.args, "--bin") {
			args = append(args, "--bin", bin)
		}
		args = append(args, tc.args...)
		out, stderr, code := run(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %d bytes; want exit 2 saying %q and nothing written", tc.args, code, stderr, len(out), tc.want)
		}
	}
}

// writeTools writes each stand-in tool, a sh script of its body, into a
// new directory for PATH.
func writeTools(t *testing.T, tools map[string]string) string {
	dir := t.TempDir()
	for name, body := range tools {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// checkGolden compares got with testdata/name, which -update rewrites.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the output differs from %s (go test ./scripts -update to accept):\n%s", golden, got)
	}
}
