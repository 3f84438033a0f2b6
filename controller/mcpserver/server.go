// Package mcpserver is walkie's Model Context Protocol server (walkie
// mcp): the operations a person has on a debate, as tools any MCP host
// (Claude Code, Codex, Gemini CLI, an editor) can call, and each debate's
// record as a resource. It is built on the official Go SDK and speaks
// over stdio, which is how CLI hosts start a server.
//
// Nothing here is a second way of doing things: a debate is started by
// the same distil, show, approve flow as walkie new (the approval an
// explicit tool call, with the hash of the briefing that was shown), run
// by walkie auto, posted to through the enforced writer, and its standing
// is controller.Standing, the one every other surface renders. Tool
// inputs are checked by the same code as the CLI's, so a refusal reads
// the same.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/config"
)

// Options configure the server.
type Options struct {
	// Dir is where relative paths resolve and new debates are made: the
	// host's working directory.
	Dir string
	// Config is the configuration every tool uses (agents, people,
	// limits); ConfigPath is its file ("" for the search walkie does),
	// which the walkie auto a tool starts is given too.
	Config     *config.Config
	ConfigPath string
	// Registry is the machine's registry of debates (walkie.DefaultRegistry)
	// that list_debates reads besides Dir; "" reads Dir alone.
	Registry string
	// Exe is the walkie binary that run_debate starts.
	Exe string
	// InSession is set when the server runs inside a session walkie
	// started (an agent's): the tools that act as a person are refused,
	// since an agent speaks only through its own turn.
	InSession bool
	// SessionWhy is how it is known (session.Inside), for the refusal.
	SessionWhy string
	Version    string
	Log        *zap.Logger
}

// server is one walkie mcp's state.
type server struct {
	o   Options
	srv *mcp.Server
}

// New is the MCP server of o, its tools and resources in place.
func New(o Options) (*mcp.Server, error) {
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Config == nil {
		o.Config = config.Default()
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	o.Dir = dir
	s := &server{o: o}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "walkie", Title: "walkie", Version: o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Capabilities: &mcp.ServerCapabilities{},
	})
	s.addTools()
	if err := s.addResources(); err != nil {
		return nil, err
	}
	return s.srv, nil
}

// Serve runs the server on in and out, the process's standard input and
// output as a host starts it (newline-delimited JSON-RPC), until the host
// closes in or ctx ends.
func Serve(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	srv, err := New(o)
	if err != nil {
		return err
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// instructions tell the host's model what the server is for and the one
// rule it must keep.
const instructions = `walkie runs structured debates between AI coding agents (claude, codex, gemini, any command) in one markdown record per debate. To start one: start_debate with the question (it drafts the briefing, or takes yours), show the briefing to the person word for word, and only when they approve call approve_briefing with its sha256, then run_debate. Follow it with wait_for_turn and get_standing; read_entries gives the turns. Never approve a briefing the person has not read.`

// asPerson refuses, inside an agent's session, what only a person may do.
func (s *server) asPerson() error {
	if s.o.InSession {
		return fmt.Errorf("refused: walkie mcp runs inside a session walkie started (%s), and this tool acts as a person; an agent speaks only through its own turn", s.o.SessionWhy)
	}
	return nil
}
