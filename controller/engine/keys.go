package engine

import (
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/credproxy"
	"github.com/walkie-sh/walkie/session"
)

// guardKeys puts the session's API keys behind the credential proxy when
// its agent's key_proxy says so (auto: under CI, and in walkie review):
// the spec gets the stand-ins and the proxy's base URL, and release closes
// the session's route. proxied says whether it did.
func (e *Engine) guardKeys(j Job, spec *session.Spec) (proxied bool, release func(), err error) {
	release = func() {}
	a := j.Agent
	if a.Preset == "" || j.Argv != nil || !a.KeyProxied(e.cfg.ProxyKeys || os.Getenv("CI") != "") {
		return false, release, nil
	}
	p, err := e.proxy()
	if err != nil {
		return false, release, err
	}
	ch, err := credproxy.Guard(p, a.Preset, spec.Argv, session.Environ(*spec, os.Environ()), homeReader(*spec))
	if err != nil {
		return false, release, err
	}
	if ch.Note != "" {
		e.sayOnce(a.Name+"\x00keys", "key proxy: "+a.Name+": "+ch.Note, zap.String("agent", a.Name))
		return false, ch.Remove, nil
	}
	spec.Env = append(spec.Env, ch.Env...)
	if ch.Argv != nil {
		spec.Argv = ch.Argv
	}
	return true, ch.Remove, nil
}

// proxy is the engine's credential proxy, started on first use.
func (e *Engine) proxy() (*credproxy.Proxy, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys == nil {
		p, err := credproxy.Start()
		if err != nil {
			return nil, err
		}
		e.keys = p
	}
	return e.keys, nil
}

// homeReader reads a file of the HOME the session's CLI will have: the
// home files walkie writes into a private one, else the user's own.
func homeReader(spec session.Spec) func(string) ([]byte, bool) {
	return func(rel string) ([]byte, bool) {
		if spec.PrivateHome {
			s, ok := spec.HomeFiles[rel]
			return []byte(s), ok
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, false
		}
		b, err := os.ReadFile(filepath.Join(home, filepath.FromSlash(rel)))
		return b, err == nil
	}
}
