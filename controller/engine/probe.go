package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/walkie-sh/walkie/config"
	"github.com/walkie-sh/walkie/walkie"
)

// probeTimeout bounds a probe: a CLI asked for its version or its login
// answers in seconds, or something is wrong.
const probeTimeout = 20 * time.Second

// Probe runs argv (the agent's own binary with other arguments, such as
// --version) as a session of agent a — its environment, isolation and
// working directory — and returns its plain-text output, at most limit
// bytes of it. For checks that must see what a turn would see without
// being one.
func (e *Engine) Probe(ctx context.Context, a config.Agent, argv []string, limit int64) (string, error) {
	dir, err := os.MkdirTemp("", "walkie-probe-")
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	defer os.RemoveAll(dir)
	a.Timeout, a.Stall, a.Rules, a.Usage = probeTimeout, 0, nil, config.UsageNone
	a.KillGrace = min(a.KillGrace, time.Second)
	base := filepath.Join(dir, "probe")
	// The working directory is the probe's own: the agent's dir: may name
	// a debate's placeholders that mean nothing here.
	r, err := e.Run(ctx, Job{Agent: a, Argv: argv, Dir: dir, Transcript: base, Role: config.RoleProbe, Reach: FolderReach(dir)})
	if err != nil {
		return "", err
	}
	f, err := walkie.OpenRegular(r.TextPath, os.O_RDONLY)
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	defer f.Close()
	out, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return "", fmt.Errorf("probe: %w", err)
	}
	return string(out), nil
}
