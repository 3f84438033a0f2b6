package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/config"
)

// pins reads versions.env as the scripts do, with bash's source: what
// these tests compare is what the scripts see.
func pins(t *testing.T) map[string]string {
	t.Helper()
	cmd := exec.Command("env", "-i", "bash", "-c", "set -a; source ./versions.env; env")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("source versions.env: %v\n%s", err, out)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, value, _ := strings.Cut(line, "=")
		switch name {
		case "PWD", "SHLVL", "_", "OLDPWD":
			continue
		}
		m[name] = value
	}
	return m
}

// Every pin is in versions.env, once; the Go code that must agree with it
// does, and no script or workflow spells a pinned version itself.
func TestVersionsInOnePlace(t *testing.T) {
	p := pins(t)
	for _, name := range []string{"WALKIE_VERSION", "CLAUDE_VERSION", "CODEX_VERSION", "GEMINI_VERSION", "TEMPORAL_CLI_VERSION", "GORELEASER_VERSION"} {
		if p[name] == "" {
			t.Errorf("versions.env sets no %s", name)
		}
	}
	if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).MatchString(p["WALKIE_VERSION"]) {
		t.Errorf("WALKIE_VERSION=%q: a release tag, vMAJOR.MINOR.PATCH", p["WALKIE_VERSION"])
	}
	for preset, name := range map[string]string{"claude": "CLAUDE_VERSION", "codex": "CODEX_VERSION", "gemini": "GEMINI_VERSION"} {
		if got := config.TestedVersion(preset); got != p[name] {
			t.Errorf("config.TestedVersion(%q) = %q, versions.env pins %s=%s", preset, got, name, p[name])
		}
	}
	// The files that use the pins read them; a literal copy would drift.
	files := []string{"install-clis.sh", "install-temporal.sh", "install-goreleaser.sh", "go-tool.sh", "github/action.yml",
		"github/prepare.sh", "release/goreleaser.yaml", "../.github/workflows/ci.yml", "../.github/workflows/release.yml"}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range p {
			if name != "WALKIE_VERSION" && bytes.Contains(b, []byte(v)) {
				t.Errorf("%s spells %s's %s itself: read it from versions.env", f, name, v)
			}
		}
	}
}

// The README and the docs name the action at the release versions.env
// names, so what a user copies is what was released.
func TestDocsNameTheRelease(t *testing.T) {
	want := pins(t)["WALKIE_VERSION"]
	re := regexp.MustCompile(`walkie-sh/walkie/scripts/github@(v[\w.-]+)`)
	for _, f := range []string{"../README.md", "../docs/ci.md", "../docs/releasing.md", "github/action.yml", "github/examples/design-review.yml", "github/examples/review-on-comment.yml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms := re.FindAllSubmatch(b, -1)
		if len(ms) == 0 && f == "../README.md" {
			t.Errorf("%s does not name the action at a release", f)
		}
		for _, m := range ms {
			if string(m[1]) != want {
				t.Errorf("%s names the action at %s; versions.env's WALKIE_VERSION is %s", f, m[1], want)
			}
		}
	}
	gitlab, err := os.ReadFile("gitlab/walkie-review.gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`WALKIE_VERSION: (\S+)`).FindSubmatch(gitlab); m == nil || string(m[1]) != want {
		t.Errorf("the GitLab example runs walkie %q; versions.env's WALKIE_VERSION is %s", m, want)
	}
}
