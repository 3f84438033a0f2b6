package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/session"
	"github.com/walkie-sh/walkie/walkie"
)

// What each role's session may reach in its sandbox (docs/sessions.md,
// "Sandbox"). A record and its .walkie directory sit side by side, and
// Landlock grants by path beneath: a grant of the folder would cover the
// state, so the folder is granted with the state and every other debate's
// record hidden (session.Reach.Hide lays the grant out around them), and
// the record is granted as the one file it is.

// reach is the whole of what j's session may reach besides what every
// sandboxed session gets: the caller's Reach, and for a debater or an
// implementer its working directory and the record.
func reach(j Job, role, dir string) session.Reach {
	r := session.Reach{Read: slices.Clone(j.Reach.Read), Write: slices.Clone(j.Reach.Write), Hide: slices.Clone(j.Reach.Hide)}
	if j.Agent.Mode == config.ModeReadOnly {
		// The CLI's own read-only mode, which its sandbox may not keep
		// inside walkie's (UnderSandbox): walkie's keeps it.
		r.Write = nil
	}
	if role != config.RoleDebater && role != config.RoleImplementer {
		return r
	}
	r.Read = append(r.Read, dir)
	file := j.Vars.File
	if file == "" {
		return r
	}
	if j.Agent.Mode != config.ModeReadOnly {
		r.Write = append(r.Write, file)
	} else {
		r.Read = append(r.Read, file)
	}
	r.Hide = append(r.Hide, DebateHides(filepath.Dir(file), file)...)
	if d := filepath.Clean(dir); d != filepath.Dir(file) {
		r.Hide = append(r.Hide, DebateHides(d, file)...)
	}
	return r
}

// DebateHides are what no agent reaches in dir, beside the record keep:
// the state directory of the debates there (.walkie) and every other
// debate's record.
func DebateHides(dir, keep string) []string {
	out := []string{filepath.Dir(walkie.StateDir(filepath.Join(dir, "x"+walkie.FileSuffix), "x"))}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), walkie.FileSuffix) && p != filepath.Clean(keep) {
			out = append(out, p)
		}
	}
	return out
}

// RepoReach is what a review thread's participant reaches of the
// repository its record is bound to: all of it to read, but the records of
// every debate in it (walkie.Find's, wherever they sit) and their state.
func RepoReach(repo, record string) session.Reach {
	r := session.Reach{Read: []string{repo}}
	files, _ := walkie.Find(repo)
	seen := map[string]bool{}
	for _, f := range append(files, record) {
		if d := filepath.Dir(f); !seen[d] {
			seen[d] = true
			r.Hide = append(r.Hide, DebateHides(d, record)...)
		}
	}
	return r
}

// FolderReach is the reach of a session that works in a folder of its own
// (a reviewer's or a phase's copy, a distillation's folder, a probe's):
// it reads and writes that folder and nothing else.
func FolderReach(dir string) session.Reach { return session.Reach{Write: []string{dir}} }

// WorktreeReach is what a debater's session in a git worktree reaches
// besides its working directory and the record: the worktree, to change
// and commit in, and the repository's git directory, where commits go
// (the refs it may move there are walkie's to check, not the sandbox's).
func WorktreeReach(worktree, repoRoot string) session.Reach {
	r := session.Reach{Write: []string{worktree}}
	if fi, err := os.Stat(filepath.Join(repoRoot, ".git")); err == nil && fi.IsDir() {
		r.Write = append(r.Write, filepath.Join(repoRoot, ".git"))
	}
	return r
}

// homeVars are the variables that name where a CLI keeps its settings
// and its state.
var homeVars = []string{"HOME", "CODEX_HOME", "CLAUDE_CONFIG_DIR", "GEMINI_CLI_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"}

// ownHomes are the folders the agent's own env: entries name as its
// homes (CODEX_HOME: /srv/agents/codex): they are the CLI's, so its
// sessions use them. One that is the user's HOME is not granted: that
// takes home: inherit, which grants only the CLI's own files there.
func ownHomes(env []string) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(homeVars, k) && filepath.IsAbs(v) && filepath.Clean(v) != filepath.Clean(home) {
			out = append(out, v)
		}
	}
	return out
}

// homeGrants are the files a preset's CLI keeps in a HOME it shares with
// the user (home: inherit): its login and settings, and nothing else of
// that HOME.
func homeGrants(a config.Agent) []string {
	home, err := os.UserHomeDir()
	if err != nil || a.Home != config.HomeInherit {
		return nil
	}
	var out []string
	for _, p := range map[string][]string{
		"claude": {".claude", ".claude.json", ".claude.json.backup", ".config/claude"},
		"codex":  {".codex"},
		"gemini": {".gemini"},
	}[a.Preset] {
		// Only those there: a CLI that never ran leaves no file to grant
		// (Landlock grants what exists), and that is no news.
		if _, err := os.Stat(filepath.Join(home, p)); err == nil {
			out = append(out, filepath.Join(home, p))
		}
	}
	return out
}
