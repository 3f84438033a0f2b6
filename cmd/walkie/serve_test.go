package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/walkie"
)

// The systemd unit and the launchd plist in scripts/ start walkie serve
// with flags that exist: a renamed flag must not leave them broken.
func TestServiceFilesMatchServeFlags(t *testing.T) {
	known := map[string]bool{}
	for _, f := range serveCommand(newFactory(nil, io.Discard, io.Discard), nil).Flags {
		for _, n := range f.Names() {
			known["--"+n] = true
		}
	}
	unit, err := os.ReadFile("../../scripts/walkie.service")
	if err != nil {
		t.Fatal(err)
	}
	exec := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindSubmatch(unit)
	if exec == nil {
		t.Fatal("walkie.service has no ExecStart")
	}
	unitArgs := strings.Fields(string(exec[1]))
	for _, want := range []string{"KillMode=mixed", "ExecReload=/bin/kill -HUP $MAINPID", "RestartPreventExitStatus=2"} {
		if !bytes.Contains(unit, []byte(want)) {
			t.Errorf("walkie.service lacks %s", want)
		}
	}

	plist, err := os.ReadFile("../../scripts/dev.walkie.serve.plist")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Dict struct {
			Inner []byte `xml:",innerxml"`
		} `xml:"dict"`
	}
	if err := xml.Unmarshal(plist, &doc); err != nil {
		t.Fatalf("the plist is not well-formed XML: %v", err)
	}
	var plistArgs []string
	if m := regexp.MustCompile(`(?s)<key>ProgramArguments</key>\s*<array>(.*?)</array>`).FindSubmatch(doc.Dict.Inner); m != nil {
		for _, s := range regexp.MustCompile(`<string>(.*?)</string>`).FindAllSubmatch(m[1], -1) {
			plistArgs = append(plistArgs, string(s[1]))
		}
	}
	for name, args := range map[string][]string{"walkie.service": unitArgs, "dev.walkie.serve.plist": plistArgs} {
		if len(args) < 2 || args[1] != "serve" {
			t.Errorf("%s does not run `walkie serve`: %q", name, args)
			continue
		}
		for _, a := range args[2:] {
			if strings.HasPrefix(a, "--") && !known[strings.SplitN(a, "=", 2)[0]] {
				t.Errorf("%s passes %s, which walkie serve does not know", name, a)
			}
		}
	}
}

func TestServeAndWatchRefuseBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"walkie", "watch", "."}, "one tick"},
		{[]string{"walkie", "watch", "--once"}, "exactly one PATH"},
		{[]string{"walkie", "serve", "somedir"}, "--dir somedir"},
		{[]string{"walkie", "serve", "--dir", "/nonexistent/walkie-test", "--listen", ""}, "no such file"},
		{[]string{"walkie", "serve", "--dir", ".", "--listen", "0.0.0.0:0", "--token", ""}, "needs a token"},
	} {
		var out, errOut bytes.Buffer
		code := run(c.args, strings.NewReader(""), &out, &errOut)
		if code == 0 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want a failure saying %q", c.args, code, errOut.String(), c.want)
		}
	}
}

// walkie watch --once, as cron runs it: a party whose CLI is missing is
// invoked, retried once, then the supervisor is told through the webhook.
func TestWatchOnceEscalatesToAWebhook(t *testing.T) {
	got := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e struct{ Kind, Agent, Reason string }
		_ = json.NewDecoder(r.Body).Decode(&e)
		got <- e.Kind + " " + e.Agent + " " + e.Reason
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "walkie.yaml")
	y := "defaults:\n  debounce: 0s\n  retries: 0\nagents:\n  ghost:\n    command: [" + filepath.Join(dir, "no-such-cli") + "]\n    usage: none\n" +
		"notify:\n  webhook:\n    url: " + srv.URL + "\n"
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "ghosted.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ghost", "alice"}, Briefing: []byte("Decide.\n")}); err != nil {
		t.Fatal(err)
	}
	if _, err := walkie.Approve(file); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"invoked", "retried", "escalated", "waiting"} {
		time.Sleep(5 * time.Millisecond) // past --retry-after
		var out, errOut bytes.Buffer
		code := run([]string{"walkie", "watch", "--once", dir, "--config", cfg, "--retry-after", "1ms", "--log-format", "json"}, strings.NewReader(""), &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), ": "+want+": ") {
			t.Fatalf("tick expecting %s: exit %d\nstdout %s\nstderr %s", want, code, out.String(), errOut.String())
		}
	}
	// The webhook also hears of each turn that started; exactly one
	// escalation must be among the events.
	var esc []string
	deadline := time.After(5 * time.Second)
	for len(esc) == 0 {
		select {
		case e := <-got:
			if strings.HasPrefix(e, "escalation ") {
				esc = append(esc, e)
			}
		case <-deadline:
			t.Fatal("the webhook got no escalation")
		}
	}
	for len(got) > 0 {
		if e := <-got; strings.HasPrefix(e, "escalation ") {
			esc = append(esc, e)
		}
	}
	if len(esc) != 1 || !strings.HasPrefix(esc[0], "escalation ghost ghost was invoked 2 times for turn 1") {
		t.Errorf("escalations: %q", esc)
	}
}
