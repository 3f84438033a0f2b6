package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/controller"
	"github.com/walkie-sh/walkie/walkie"
)

func TestCastFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"alice", "bob", "carol"}, MaxRounds: 2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		list []string
		want map[string]string
		err  string
	}{
		{"none", nil, nil, ""},
		{"positional", []string{"claude", "codex"}, map[string]string{"alice": "claude", "bob": "codex"}, ""},
		{"named", []string{"bob=codex", " carol = gemini "}, map[string]string{"bob": "codex", "carol": "gemini"}, ""},
		{"mixed", []string{"claude", "carol=gemini"}, map[string]string{"alice": "claude", "carol": "gemini"}, ""},
		{"too many", []string{"a", "b", "c", "d"}, nil, "names 4 agents but"},
		{"not a participant", []string{"dave=claude"}, nil, `"dave" is not a participant`},
		{"empty agent", []string{"claude", ""}, nil, "agent 2 is empty"},
		{"empty side of =", []string{"bob="}, nil, "PARTICIPANT=AGENT"},
		{"cast twice", []string{"bob=codex", "bob=claude"}, nil, "cast twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := castFlag(file, nil, c.list)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want …%s…", err, c.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, c.want) {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestRunExitCode(t *testing.T) {
	for _, c := range []struct {
		sum  controller.Summary
		once bool
		want int
	}{
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusConverged}}, false, exitOK},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusOpen}}, true, exitOK},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusOpen}}, false, exitOpen},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusMaxRounds}}, false, exitMaxRounds},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusFailed}}, true, exitFailed},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusHalted}}, false, exitHalted},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusOverBudget}}, false, exitOverBudget},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusDeadlocked}}, false, exitDeadlocked},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusOpen}, Interrupted: true}, false, exitSignal},
		{controller.Summary{Standing: controller.Standing{Status: walkie.StatusConverged}, Interrupted: true}, false, exitSignal},
		{controller.Summary{Standing: controller.Standing{Status: "what"}}, false, exitError},
	} {
		if got := runExitCode(c.sum, c.once); got != c.want {
			t.Errorf("%+v once=%v: exit %d, want %d", c.sum, c.once, got, c.want)
		}
		if err := runResult(c.sum, c.once); exitCode(err) != c.want || (err != nil) != (c.want != exitOK) {
			t.Errorf("%+v once=%v: the error %v exits %d, want %d", c.sum, c.once, err, exitCode(err), c.want)
		}
	}
}

func TestRunErrorCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("%w: %w", controller.ErrBadInput, &walkie.ChainError{Msg: "edited"}), exitUnverified},
		{fmt.Errorf("%w: %w", controller.ErrBadInput, &walkie.TornTailError{}), exitUnverified},
		{fmt.Errorf("%w: %w", controller.ErrBadInput, &walkie.InputError{Msg: "briefing changed"}), exitBadInput},
		{fmt.Errorf("%w: no agent", controller.ErrBadInput), exitBadInput},
		{fmt.Errorf("run: %w", walkie.ErrLocked), exitRefused},
		{&config.Error{}, exitBadInput},
		{errors.New("disk full"), exitError},
	} {
		if got := runErrorCode(c.err); got != c.want {
			t.Errorf("%v: exit %d, want %d", c.err, got, c.want)
		}
	}
}

// Off a terminal, or under CI, a wait for a person has a limit unless the
// flag says otherwise; at a terminal, a person is there to answer.
func TestWaitLimit(t *testing.T) {
	zero, ten := time.Duration(0), 10*time.Second
	for _, c := range []struct {
		name  string
		tty   bool
		ci    string
		given *time.Duration
		want  time.Duration
	}{
		{"terminal", true, "", nil, 0},
		{"terminal under CI", true, "true", nil, defaultWaitForPeople},
		{"pipe", false, "", nil, defaultWaitForPeople},
		{"given", false, "1", &ten, ten},
		{"given none", false, "1", &zero, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			streams := systemIO(strings.NewReader(""), io.Discard, io.Discard)
			streams.SetStdinTTY(c.tty)
			if got := waitLimit(streams, c.given); got != c.want {
				t.Errorf("waitLimit = %s, want %s", got, c.want)
			}
		})
	}
}
