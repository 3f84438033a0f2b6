package daemon

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/controller/engine"
	"github.com/walkie-sh/walkie/walkie"
)

// secretText is what a file outside every debate holds: an agent's
// attack succeeds when the page serves it.
const secretText = "TOP SECRET: the daemon's user's private key"

// outsideFile is a file of the daemon's user outside the debate.
func outsideFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "id_ed25519")
	must(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

// logTranscript adds an attempt to the debate's turn log whose plain-text
// transcript is rel (relative to the state directory, as the controller
// writes it) and returns the attempt's index.
func logTranscript(t *testing.T, file, rel string) int {
	t.Helper()
	sd := walkie.StateDir(file, "api")
	must(t, engine.AppendTurnLog(sd, engine.TurnRecord{Turn: 2, Agent: "bob", Attempt: 1,
		Outcome: walkie.OutcomeCrashed, Transcript: engine.Transcript{Text: rel}}))
	recs, err := engine.ReadTurnLog(sd)
	must(t, err)
	return len(recs) - 1
}

// unblockFIFO opens the named pipe at p for writing and closes it, so a
// reader that opened it (today's code) gets EOF instead of waiting for
// good, and the daemon can stop.
func unblockFIFO(p string) {
	if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		f.Close()
	}
}

// getPath GETs path from the daemon over TCP, with a deadline only so that
// a daemon that hangs fails the test instead of hanging it.
func getPath(t *testing.T, d *running, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + d.Addr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Issue 27, item 9: an agent swapped a transcript for a symbolic link and
// /d/KEY/transcript/N served the target. Every way of making the name of
// a transcript lead to another file is refused with 403, through the
// real HTTP server: a link at the transcript, a link at a directory on
// the way (turns, the debate's state directory), a second name (hard
// link) of a file outside, and things that are not files at all (a named
// pipe, which must not hang the request, and a directory). The page and
// the API go on answering.
func TestTranscriptServesOnlyTheDebatesOwnFile(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, sd, secret string) string // returns the transcript's name in the log
	}{
		{"a symbolic link at the transcript", func(t *testing.T, sd, secret string) string {
			must(t, os.MkdirAll(filepath.Join(sd, "turns"), 0o755))
			must(t, os.Symlink(secret, filepath.Join(sd, "turns", "0002-bob.txt")))
			return "turns/0002-bob.txt"
		}},
		{"a symbolic link at turns/", func(t *testing.T, sd, secret string) string {
			must(t, os.Symlink(filepath.Dir(secret), filepath.Join(sd, "turns")))
			return "turns/" + filepath.Base(secret)
		}},
		{"a symbolic link inside the debate", func(t *testing.T, sd, secret string) string {
			// Within the state directory, yet not a transcript walkie wrote.
			must(t, os.MkdirAll(filepath.Join(sd, "turns"), 0o755))
			must(t, os.Symlink("../turns.jsonl", filepath.Join(sd, "turns", "0002-bob.txt")))
			return "turns/0002-bob.txt"
		}},
		{"a hard link to a file outside", func(t *testing.T, sd, secret string) string {
			must(t, os.MkdirAll(filepath.Join(sd, "turns"), 0o755))
			must(t, os.Link(secret, filepath.Join(sd, "turns", "0002-bob.txt")))
			return "turns/0002-bob.txt"
		}},
		{"a named pipe", func(t *testing.T, sd, secret string) string {
			p := filepath.Join(sd, "turns", "0002-bob.txt")
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, syscall.Mkfifo(p, 0o644))
			t.Cleanup(func() { unblockFIFO(p) })
			return "turns/0002-bob.txt"
		}},
		{"a directory", func(t *testing.T, sd, secret string) string {
			must(t, os.MkdirAll(filepath.Join(sd, "turns", "0002-bob.txt"), 0o755))
			return "turns/0002-bob.txt"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, file := httpDaemon(t, Options{})
			secret := outsideFile(t, secretText)
			n := logTranscript(t, file, c.plant(t, walkie.StateDir(file, "api"), secret))
			path := "/d/" + walkie.Key(file) + "/transcript/" + strconv.Itoa(n)
			code, body := getPath(t, d, path)
			if code != http.StatusForbidden || strings.Contains(body, secretText) || strings.Contains(body, `"turn"`) {
				t.Errorf("GET %s: %d, want 403 and nothing of the file:\n%s", path, code, body)
			}
			if code, _ := getPath(t, d, "/api/debates"); code != 200 {
				t.Errorf("after the attack, /api/debates: %d", code)
			}
		})
	}
}

// The state directory itself swapped for a link to a directory the agent
// built elsewhere: the transcript is refused too, though the turn log it
// names is read through the link (it is only parsed, never served).
func TestTranscriptRefusedThroughALinkedStateDir(t *testing.T) {
	d, file := httpDaemon(t, Options{})
	secret := outsideFile(t, secretText)
	sd := walkie.StateDir(file, "api")
	elsewhere := filepath.Join(t.TempDir(), "api")
	must(t, os.MkdirAll(filepath.Join(elsewhere, "turns"), 0o755))
	must(t, os.Link(secret, filepath.Join(elsewhere, "turns", "0002-bob.txt")))
	must(t, os.Remove(filepath.Join(filepath.Dir(secret), "id_ed25519"))) // one name again: only the link is wrong
	must(t, os.Rename(sd, sd+".old"))
	must(t, os.Symlink(elsewhere, sd))
	n := logTranscript(t, file, "turns/0002-bob.txt")
	path := "/d/" + walkie.Key(file) + "/transcript/" + strconv.Itoa(n)
	if code, body := getPath(t, d, path); code != http.StatusForbidden || strings.Contains(body, secretText) {
		t.Errorf("GET %s through a linked state directory: %d:\n%s", path, code, body)
	}
}

// The log the page folds made into a named pipe, or a link to a file the
// agent chose: the debate's page answers at once, says what is wrong, and
// shows nothing of the other file; the fleet and the API go on answering.
func TestPageRefusesSideFilesThatAreNotFiles(t *testing.T) {
	for _, c := range []struct {
		name, file string
		plant      func(t *testing.T, p string)
		says       string
	}{
		{"log.jsonl a named pipe", walkie.LogFile, func(t *testing.T, p string) {
			must(t, syscall.Mkfifo(p, 0o644))
			t.Cleanup(func() { unblockFIFO(p) })
		}, "named pipe"},
		{"log.jsonl a link", walkie.LogFile, func(t *testing.T, p string) {
			must(t, os.Symlink(outsideFile(t, `{"n":1,"op":"halt","layout":2,"set":{"status":"halted","reason":"`+secretText+`"}}`+"\n"), p))
		}, "symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, file := httpDaemon(t, Options{})
			p := filepath.Join(walkie.StateDir(file, "api"), c.file)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			c.plant(t, p)
			code, body := getPath(t, d, "/d/"+walkie.Key(file))
			if code != 200 || !strings.Contains(body, c.says) || strings.Contains(body, secretText) {
				t.Errorf("the debate's page: %d, want it to say %q and nothing of the other file:\n%s", code, c.says, body)
			}
			for _, path := range []string{"/", "/api/debates"} {
				if code, body := getPath(t, d, path); code != 200 || strings.Contains(body, secretText) {
					t.Errorf("GET %s: %d:\n%s", path, code, body)
				}
			}
		})
	}
}
