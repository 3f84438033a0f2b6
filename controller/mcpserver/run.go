package mcpserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/walkie"
)

// runLog is walkie auto's log, in the debate's state directory, for the
// runs run_debate starts.
const runLog = "mcp-auto.log"

// run starts walkie auto on the debate, as a process of its own: in a
// session of its own, so that neither the host ending this server nor its
// terminal's signals end the debate, and with the server's config.
func (s *server) run(_ context.Context, _ *mcp.CallToolRequest, in FileIn) (*mcp.CallToolResult, Started, error) {
	if err := s.asPerson(); err != nil {
		return nil, Started{}, err
	}
	file, err := s.record(in.File)
	if err != nil {
		return nil, Started{}, err
	}
	d, err := walkie.Load(file)
	if err != nil {
		return nil, Started{}, err
	}
	if d.Meta.BriefingSHA256 == "" {
		return nil, Started{}, &walkie.InputError{File: file, Line: d.BriefingLine, Msg: "the briefing is not approved",
			Fix: "show it to the person, then approve_briefing with its sha256"}
	}
	dir := walkie.StateDir(file, d.Meta.ID)
	if walkie.ControllerRunning(dir) {
		return nil, Started{}, &walkie.RefusedError{Op: "run", Reason: fmt.Sprintf("%s is already being run (pid %d): follow it with wait_for_turn", file, walkie.Holder(filepath.Join(dir, "run.lock")))}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Started{}, err
	}
	logPath := filepath.Join(dir, runLog)
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, Started{}, err
	}
	defer out.Close()
	args := []string{"auto", file, "--log-format", "json"}
	if s.o.ConfigPath != "" {
		args = append(args, "--config", s.o.ConfigPath)
	}
	cmd := exec.Command(s.o.Exe, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = s.o.Dir, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, Started{}, fmt.Errorf("start walkie auto %s: %w", file, err)
	}
	pid := cmd.Process.Pid
	// Reaped here while this server lives; after, init adopts it.
	go func() {
		err := cmd.Wait()
		s.o.Log.Info("walkie auto ended", zap.String("file", file), zap.Int("pid", pid), zap.Error(err))
	}()
	return nil, Started{File: file, PID: pid, Log: logPath}, nil
}
