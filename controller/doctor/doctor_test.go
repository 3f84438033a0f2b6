package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

func TestDoctor(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\necho '2.1.197 (Claude Code)'\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	t.Setenv("GEMINI_API_KEY", "")
	cfg := config.Default()

	t.Run("no key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "")
		ck := Check(context.Background(), cfg, []string{"claude"}, map[string]bool{"claude": true})[0]
		if ck.Binary != filepath.Join(bin, "claude") || ck.Version != "2.1.197" {
			t.Errorf("binary %q version %q", ck.Binary, ck.Version)
		}
		if ck.LoggedIn != "no" || ck.CanRun() || !strings.Contains(strings.Join(ck.Problems, ";"), "ANTHROPIC_API_KEY") {
			t.Errorf("logged in %q, problems %q: want a clear not-logged-in problem", ck.LoggedIn, ck.Problems)
		}
	})
	t.Run("key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-test")
		ck := Check(context.Background(), cfg, []string{"claude"}, nil)[0]
		if ck.LoggedIn != "yes" || !ck.CanRun() {
			t.Errorf("logged in %q, problems %q", ck.LoggedIn, ck.Problems)
		}
	})
	t.Run("missing binary", func(t *testing.T) {
		ck := Check(context.Background(), cfg, []string{"gemini"}, nil)[0]
		if ck.CanRun() || !strings.Contains(ck.Problems[0], `"gemini" not found in PATH "`+bin) {
			t.Errorf("problems %q: want the command and the PATH searched", ck.Problems)
		}
	})
	t.Run("unknown agent", func(t *testing.T) {
		ck := Check(context.Background(), cfg, []string{"nobody"}, nil)[0]
		if ck.CanRun() {
			t.Errorf("an unconfigured agent can run?")
		}
	})
}
