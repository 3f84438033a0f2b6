package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// Without a FILE and with none of the CLIs installed, doctor says how to
// install each, and exits 1: nothing here can take a turn.
func TestDoctorWithNothingInstalled(t *testing.T) {
	cmd := exec.Command(walkieBin, "doctor")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + t.TempDir(), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1:\n%s", err, out)
	}
	for _, want := range []string{
		"claude          —       —        n/a        not installed: npm install -g @anthropic-ai/claude-code",
		"not installed: npm install -g @openai/codex", "not installed: npm install -g @google/gemini-cli",
		"walkie: no agent can run: install one of the CLIs above",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "cannot run") {
		t.Errorf("a CLI that is not installed reads as broken:\n%s", out)
	}
}
