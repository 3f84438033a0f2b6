package session

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Variables a session gets even when the caller did not list them. Every
// CLI needs PATH (node-based ones find node through "#!/usr/bin/env node"),
// and TERM tells a program in a pty what the terminal understands.
const (
	defaultTerm = "xterm-256color"
)

// homeVar reports variables that point into the user's real home; with a
// private HOME an inherited value would undo the isolation, so they are only
// kept if the session sets them itself.
func homeVar(k string) bool {
	switch k {
	case "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME":
		return true
	}
	return false
}

// buildEnv makes the session's environment: the allowed parent variables,
// then the session's own (which win), then HOME and TMPDIR when private,
// PATH and TERM defaults. parent is os.Environ() in production; tests pass
// their own.
func buildEnv(parent []string, spec Spec, made madeDirs) []string {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !Allowed(k, spec.EnvAllow) || slices.Contains(spec.EnvDeny, k) {
			continue
		}
		if made.home != "" && homeVar(k) {
			continue
		}
		set(k, v)
	}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		if k != "" {
			set(k, v)
		}
	}
	if spec.ID != "" {
		// Last, over the caller's and the session's own: what recovery
		// looks for must be this session's.
		set(SessionVar, spec.ID)
	}
	if made.home != "" {
		set("HOME", made.home)
	}
	if made.tmp != "" {
		set("TMPDIR", made.tmp)
	}
	if _, ok := vals["PATH"]; !ok {
		for _, kv := range parent {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				set("PATH", v)
			}
		}
	}
	if _, ok := vals["TERM"]; !ok {
		set("TERM", defaultTerm)
	}
	env := make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// Environ is the environment a session of spec would get from parent, with
// placeholder paths for a private HOME and TMPDIR: for checks such as
// `walkie doctor` that must see what an agent sees without starting it.
func Environ(spec Spec, parent []string) []string {
	var made madeDirs
	if spec.PrivateHome {
		made.home = filepath.Join(os.TempDir(), "walkie-home-XXXX")
	}
	if spec.PrivateTmp {
		made.tmp = filepath.Join(cmp.Or(made.home, os.TempDir()), ".tmp")
	}
	return buildEnv(parent, spec, made)
}

// LookPath resolves spec's command as the session would: in the session's
// own PATH, relative to its working directory.
func LookPath(spec Spec) (string, error) {
	if len(spec.Argv) == 0 {
		return "", errors.New("empty argv")
	}
	return lookPath(spec.Argv[0], EnvValue(Environ(spec, os.Environ()), "PATH"), spec.Dir)
}

// madeDirs are the directories a session made for itself.
type madeDirs struct {
	home, tmp string
	roots     []string // what remove takes away
}

// remove takes the made directories away; it may be called again.
func (m *madeDirs) remove() error {
	var errs []error
	for _, d := range m.roots {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove private dir: %w", err))
		}
	}
	m.roots = nil
	return errors.Join(errs...)
}

// privateDirs makes the private HOME (with its files) and TMPDIR that spec
// asks for. On an error nothing is left behind.
func privateDirs(spec Spec) (made madeDirs, err error) {
	defer func() {
		if err != nil {
			_ = made.remove()
		}
	}()
	if spec.PrivateHome {
		home, err := makeOwnDir(homeDir(spec.ID))
		if err != nil {
			return made, fmt.Errorf("private HOME: %w", err)
		}
		made.roots, made.home = append(made.roots, home), home
		if err := writeHomeFiles(home, spec.HomeFiles); err != nil {
			return made, err
		}
	}
	if !spec.PrivateTmp {
		return made, nil
	}
	if made.home != "" {
		made.tmp = filepath.Join(made.home, ".tmp")
		if err := os.Mkdir(made.tmp, 0o700); err != nil {
			return made, fmt.Errorf("private TMPDIR: %w", err)
		}
		return made, nil
	}
	tmp, err := makeOwnDir(tmpDir(spec.ID))
	if err != nil {
		return made, fmt.Errorf("private TMPDIR: %w", err)
	}
	made.roots, made.tmp = append(made.roots, tmp), tmp
	return made, nil
}

// ErrHomeEscape refuses a home file whose path leaves the private HOME.
var ErrHomeEscape = errors.New("leaves the private HOME")

func writeHomeFiles(home string, files map[string]string) error {
	for name, content := range files {
		p := filepath.Join(home, filepath.FromSlash(name))
		if !strings.HasPrefix(p, home+string(filepath.Separator)) {
			return fmt.Errorf("home file %q: %w", name, ErrHomeEscape)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return fmt.Errorf("home file %q: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return fmt.Errorf("home file %q: %w", name, err)
		}
	}
	return nil
}

// checkDir refuses a working directory that is not one, before the fork:
// exec would otherwise report it as the command missing.
func checkDir(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %s: %w", dir, syscall.ENOTDIR)
	}
	return nil
}

// Allowed reports whether the parent variable name is on the allow-list.
// An entry ending in "*" allows every name with that prefix
// ("CLAUDE_CODE_*").
func Allowed(name string, allow []string) bool {
	for _, a := range allow {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if a == name {
			return true
		}
	}
	return false
}

// EnvValue returns the last value of key in env (K=V entries), as a
// process given env would see it.
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, key+"="); ok {
			v = s
		}
	}
	return v
}

// lookPath resolves the command the way the child's own shell would: with
// the session's PATH, not the controller's. A name with a slash is taken as
// it is (relative to dir).
func lookPath(name, path, dir string) (string, error) {
	if name == "" {
		return "", errors.New("empty command")
	}
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("command %q: %w", name, err)
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) && dir != "" {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", &notFoundError{name, path}
}

// notFoundError is exec.ErrNotFound, saying where the command was looked
// for.
type notFoundError struct{ name, path string }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("command %q not found in PATH %q", e.name, e.path)
}

func (e *notFoundError) Unwrap() error { return exec.ErrNotFound }

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return &fs.PathError{Op: "exec", Path: p, Err: fs.ErrPermission}
	}
	return nil
}

// homeDir and tmpDir are where a session's private HOME and TMPDIR are:
// named after its id, so recovery finds them from the id alone.
func homeDir(id string) string { return filepath.Join(os.TempDir(), "walkie-home-"+id) }
func tmpDir(id string) string  { return filepath.Join(os.TempDir(), "walkie-tmp-"+id) }

// makeOwnDir makes dir, only its owner may enter it; an id names one
// session, so a directory already there is an error, never shared.
func makeOwnDir(dir string) (string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", err
	}
	return dir, nil
}
