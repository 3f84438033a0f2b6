package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
// then the session's own (which win), then HOME when private, PATH and TERM
// defaults. parent is os.Environ() in production; tests pass their own.
func buildEnv(parent []string, spec Spec, home string) []string {
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
		if !ok || !allowed(k, spec.EnvAllow) {
			continue
		}
		if home != "" && homeVar(k) {
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
	if home != "" {
		set("HOME", home)
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

// allowed reports whether the parent variable name is on the allow-list.
// An entry ending in "*" allows every name with that prefix ("LC_*").
func allowed(name string, allow []string) bool {
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

// envValue returns the last value of key in env.
func envValue(env []string, key string) string {
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
	return "", fmt.Errorf("command %q not found in PATH %q: %w", name, path, exec.ErrNotFound)
}

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
