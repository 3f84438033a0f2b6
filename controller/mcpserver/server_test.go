package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/walkie-sh/walkie/walkie"
)

// connect is a client session with a server of o, in memory.
func connect(t *testing.T, o Options) *mcp.ClientSession {
	t.Helper()
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Each tool refuses bad input with the reason and the fix, and changes
// nothing.
func TestToolsRefuseBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "d.walkie.md")
	if err := walkie.Init(file, walkie.InitOptions{Participants: []string{"ann", "bob"}, People: []string{"ann", "bob"}, Briefing: []byte("Cursors?\n")}); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(file)
	outside := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, Options{Dir: dir})
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_standing", map[string]any{"file": "nosuch.walkie.md"}, "no such file or directory; create a debate with start_debate"},
		{"get_standing", map[string]any{"file": ""}, "no file given"},
		{"post", map[string]any{"file": "d.walkie.md", "body": "x"}, "give exactly one of from NAME or supervisor"},
		{"post", map[string]any{"file": "d.walkie.md", "from": "bob", "body": "Too early.\n"}, "post refused: bob cannot post turn 1: out of turn (it is ann's turn)"},
		{"post", map[string]any{"file": "d.walkie.md", "from": "ann", "supervisor": true, "body": "x"}, "give exactly one of from NAME or supervisor"},
		{"extend", map[string]any{"file": "d.walkie.md", "rounds": 0}, "--rounds 0: must be at least 1"},
		{"wait_for_turn", map[string]any{"file": "d.walkie.md", "timeout_seconds": -1}, "must not be negative"},
		{"run_debate", map[string]any{"file": "d.walkie.md"}, "the briefing is not approved"},
		{"approve_briefing", map[string]any{"file": "d.walkie.md", "sha256": "abc"}, "the briefing changed while it was shown"},
		{"start_debate", map[string]any{"question": "Q?", "participants": []string{"ann", "bob"}, "briefing": "x", "from": "chat.txt"}, "not both"},
		{"start_debate", map[string]any{"question": " ", "participants": []string{"ann", "bob"}}, "no question given"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Errorf("%s %v: %v", c.tool, c.args, err)
			continue
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: error %v %q, want %q", c.tool, c.args, res.IsError, text, c.want)
		}
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Errorf("the record changed:\n%s", after)
	}
	// A resource is a walkie record, and nothing else by its URI.
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file://" + outside}); err == nil {
		t.Error("a file that is no walkie record was read as a resource")
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file://" + file})
	if err != nil || res.Contents[0].Text != string(before) {
		t.Errorf("the record as a resource: %v %v", err, res)
	}
}
