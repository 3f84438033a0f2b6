package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// One file attempt, step by step: the file the agent leaves is judged
// (usable, unusable, too big, missing, not a file at all), kept, logged
// in turns.jsonl and charged to the debate — an attempt of unknown cost
// too — and the sandbox is gone after it.
func TestRunFile(t *testing.T) {
	const ok = "usable\n"
	for _, c := range []struct {
		name, script string
		outcome      walkie.Outcome
		detail       string // in the detail
		kept         bool
		text         string
	}{
		{"usable", `printf 'usable\n' > "$1"`, walkie.OutcomeAccepted, "file written", true, ok},
		{"unusable", `printf 'nope\n' > "$1"`, walkie.OutcomeMalformed, "the file says nope", true, ""},
		{"too big", `head -c 100 /dev/zero > "$1"`, walkie.OutcomeMalformed, "out.txt is 100 bytes or more, over the limit of 16", true, ""},
		{"missing", `true`, walkie.OutcomeNoTurn, "no file was written", false, ""},
		{"a named pipe", `mkfifo "$1"`, walkie.OutcomeMalformed, "out.txt is a named pipe, not a regular file", false, ""},
		{"a link to a device", `ln -s /dev/zero "$1"`, walkie.OutcomeMalformed, "out.txt is a symbolic link, not a regular file", false, ""},
		{"a crash", `exit 3`, walkie.OutcomeCrashed, "without a valid file", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "d"+walkie.FileSuffix)
			if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"a", "b"}, MaxRounds: 2, Briefing: []byte("Pick one.\n")}); err != nil {
				t.Fatal(err)
			}
			state := walkie.StateDir(file, "d")
			keep := filepath.Join(state, "kept.txt")
			e := New(config.Default(), nil)
			defer e.Close()
			var sandbox string
			var noted, forgot bool
			r, err := e.RunFile(context.Background(), FileAttempt{
				Record:  TurnRecord{Agent: "a", Role: "test", Attempt: 1},
				Sandbox: "walkie-test-",
				Prepare: func(dir string, _ time.Time) (Job, error) {
					sandbox = dir
					out := filepath.Join(dir, "out.txt")
					a := config.Agent{Name: "a", Command: []string{"sh", "-c", c.script, "sh", out}, Usage: config.UsageNone,
						EnvAllow: config.DefaultEnvAllow, Home: config.HomeInherit,
						Timing: config.Timing{Timeout: 20 * time.Second, Grace: 100 * time.Millisecond, KillGrace: 500 * time.Millisecond}}
					return Job{ID: session.NewID(), Agent: a, Dir: dir, Vars: config.Vars{Prompt: "p"}, Transcript: filepath.Join(state, "t"), Result: out,
						Reach: FolderReach(filepath.Dir(out))}, nil
				},
				Note: func(id, dir string) (func(), error) {
					noted = dir == sandbox && id != ""
					return func() { forgot = true }, nil
				},
				Limit: 16, Name: "out.txt",
				Check: func(b []byte) error {
					if string(b) != ok {
						return errors.New("the file says " + strings.TrimSpace(string(b)))
					}
					return nil
				},
				Keep:     keep,
				Words:    FileWords{Stopped: "file", Written: "file written", Writer: "agent", File: "file", Missing: "no file was written"},
				StateDir: state, Debate: file,
			})
			if err != nil {
				t.Fatal(err)
			}
			rec := r.Record
			if rec.Outcome != c.outcome || !strings.Contains(rec.Detail, c.detail) || string(r.Text) != c.text || rec.Started.IsZero() {
				t.Errorf("%s (%s), text %q; want %s (…%s…)", rec.Outcome, rec.Detail, r.Text, c.outcome, c.detail)
			}
			if _, err := os.Stat(keep); (err == nil) != c.kept || c.kept != (rec.Kept == "kept.txt") {
				t.Errorf("kept %q (%v), want kept %v", rec.Kept, err, c.kept)
			}
			if !noted || !forgot {
				t.Errorf("noted %v, forgot %v", noted, forgot)
			}
			if _, err := os.Stat(sandbox); err == nil {
				t.Error("the sandbox is still there")
			}
			logged, err := ReadTurnLog(state)
			if err != nil || len(logged) != 1 || logged[0].Outcome != c.outcome || !logged[0].Started.Equal(rec.Started) {
				t.Errorf("turn log %+v (%v)", logged, err)
			}
			if st, err := walkie.LoadState(state); err != nil || st.UnknownCosts != 1 {
				t.Errorf("state %+v (%v): the attempt's unknown cost is not counted", st, err)
			}
		})
	}
}
