package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/walkie-sh/walkie/walkie"
)

const mcpBriefing = `## Question
Should GET /v1/orders paginate with cursors or with offsets?

## What a sign-off means
You would ship the proposal as it stands.
`

// mcpClient is the official SDK's client of a walkie mcp started as a
// host starts it, over stdio, in dir with env; progress collects the
// progress notifications it gets.
type mcpClient struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string
}

func startMCP(t *testing.T, dir string, env []string) *mcpClient {
	t.Helper()
	c := &mcpClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "walkie-e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, req.Params.Message)
		},
	})
	cmd := exec.Command(filepath.Join(bin, "walkie"), "mcp")
	cmd.Dir, cmd.Env, cmd.Stderr = dir, env, os.Stderr
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c.ClientSession = s
	return c
}

// call calls a tool and decodes its structured answer into out; it
// returns the error text of a tool that refused.
func (c *mcpClient) call(t *testing.T, tool string, args map[string]any, out any) string {
	t.Helper()
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if tool == "wait_for_turn" {
		params.Meta = mcp.Meta{"progressToken": "wait"}
	}
	res, err := c.CallTool(context.Background(), params)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var text []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				text = append(text, tc.Text)
			}
		}
		return strings.Join(text, "\n")
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s answered %s: %v", tool, b, err)
		}
	}
	return ""
}

// The SDK's client drives a debate from its question to convergence,
// over stdio, through the tools a person has: start it with a briefing,
// approve exactly what was shown (a stale hash is refused), run it, wait
// with progress notifications, and read the standing, the entries and
// the record as a resource. A refusal reads as the CLI's does.
func TestMCPDrivesADebateToConvergence(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"ann", "bob"}, scripts: map[string]string{"ann": "sign_from: 1", "bob": "sign_from: 1"}})
	d.Env = append(d.Env, "XDG_STATE_HOME="+t.TempDir())
	c := startMCP(t, d.Dir, d.Env)

	var shown struct {
		File, Briefing, SHA256 string
		Words                  int
	}
	if msg := c.call(t, "start_debate", map[string]any{"question": "Cursors or offsets?", "participants": []string{"ann", "bob"},
		"max_rounds": 2, "briefing": mcpBriefing, "file": "orders.walkie.md"}, &shown); msg != "" {
		t.Fatal(msg)
	}
	file := d.path("orders.walkie.md")
	if shown.File != file || shown.Briefing != strings.TrimSpace(mcpBriefing)+"\n" && shown.Briefing != mcpBriefing || shown.SHA256 == "" {
		t.Fatalf("start_debate showed %+v", shown)
	}
	// A misspelt participant is refused as walkie init refuses it.
	if msg := c.call(t, "start_debate", map[string]any{"question": "Q?", "participants": []string{"ann", "bbo"}, "briefing": mcpBriefing, "file": "typo.walkie.md"}, nil); !strings.Contains(msg, `participant "bbo" of `+d.path("typo.walkie.md")+` is neither an agent in the config nor a declared person (did you mean "bob"?)`) {
		t.Errorf("a misspelt participant: %q", msg)
	}
	// Nothing runs an unapproved debate, and only the text shown is pinned.
	if msg := c.call(t, "run_debate", map[string]any{"file": file}, nil); !strings.Contains(msg, "the briefing is not approved") {
		t.Errorf("run of an unapproved debate: %q", msg)
	}
	if msg := c.call(t, "approve_briefing", map[string]any{"file": file, "sha256": strings.Repeat("0", 64)}, nil); !strings.Contains(msg, "the briefing changed while it was shown") {
		t.Errorf("approval of another text: %q", msg)
	}
	if msg := c.call(t, "approve_briefing", map[string]any{"file": "orders.walkie.md", "sha256": shown.SHA256}, nil); msg != "" {
		t.Fatal(msg)
	}
	// A post out of turn reads as walkie post's refusal.
	cli := d.Run("post", file, "--from", "bob", "--body-file", d.write2("bob.md", "Offsets.\n"))
	refusal := strings.TrimPrefix(strings.TrimSpace(cli.Stderr), "walkie: ")
	if msg := c.call(t, "post", map[string]any{"file": file, "from": "bob", "body": "Offsets.\n"}, nil); cli.Code != 3 || msg != refusal {
		t.Errorf("post out of turn: %q, the CLI's (exit %d): %q", msg, cli.Code, refusal)
	}

	var started struct{ PID int }
	if msg := c.call(t, "run_debate", map[string]any{"file": file}, &started); msg != "" || started.PID == 0 {
		t.Fatalf("run_debate: %q %+v", msg, started)
	}
	var waited struct {
		Why      string
		Standing struct {
			Status string
			Seq    int
		}
		Entries []struct{ Seq int }
	}
	seq := 0
	deadline := time.Now().Add(2 * time.Minute)
	for waited.Standing.Status != walkie.StatusConverged {
		if time.Now().After(deadline) {
			t.Fatalf("not converged: %+v", waited)
		}
		if msg := c.call(t, "wait_for_turn", map[string]any{"file": file, "after_seq": seq, "timeout_seconds": 60}, &waited); msg != "" {
			t.Fatal(msg)
		}
		if waited.Why == "person" {
			t.Fatalf("waits for a person: %+v", waited)
		}
		seq = waited.Standing.Seq
	}
	var standing map[string]any
	if msg := c.call(t, "get_standing", map[string]any{"file": file}, &standing); msg != "" {
		t.Fatal(msg)
	}
	if standing["status"] != walkie.StatusConverged || standing["turns"] != float64(2) || len(standing["signed"].([]any)) != 2 {
		t.Errorf("standing %v", standing)
	}
	var entries struct {
		Entries []struct {
			Seq    int
			Agent  string
			Signed bool
		}
	}
	c.call(t, "read_entries", map[string]any{"file": file, "since": 0}, &entries)
	if len(entries.Entries) != 2 || entries.Entries[0].Agent != "ann" || !entries.Entries[1].Signed {
		t.Errorf("entries %+v", entries)
	}
	c.mu.Lock()
	progress := len(c.progress)
	c.mu.Unlock()
	if progress == 0 {
		t.Error("wait_for_turn sent no progress notification")
	}
	// The record is a resource, read as it is on disk.
	res, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file://" + file})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Contents[0].Text; got != string(d.read("orders.walkie.md")) {
		t.Errorf("the resource is not the record:\n%s", got)
	}
	var listed struct {
		Debates []struct{ File, Status string }
	}
	c.call(t, "list_debates", nil, &listed)
	found := false
	for _, l := range listed.Debates {
		found = found || l.File == file && l.Status == walkie.StatusConverged
	}
	if !found {
		t.Errorf("list_debates: %+v", listed)
	}
	d.MustRun(0, "verify", file)
}

// Inside a session walkie started, an agent is an agent: the tools that
// act as a person refuse, the ones that read answer.
func TestMCPInsideASessionActsAsNoPerson(t *testing.T) {
	d := newDebate(t, setup{participants: []string{"alice", "bob"}, people: []string{"alice", "bob"}})
	c := startMCP(t, d.Dir, append(d.Env, "WALKIE_SESSION=s-1"))
	if msg := c.call(t, "post", map[string]any{"file": d.name, "from": "alice", "body": "As alice.\n"}, nil); !strings.Contains(msg, "acts as a person") {
		t.Errorf("post inside a session: %q", msg)
	}
	if msg := c.call(t, "halt", map[string]any{"file": d.name}, nil); !strings.Contains(msg, "acts as a person") {
		t.Errorf("halt inside a session: %q", msg)
	}
	var standing map[string]any
	if msg := c.call(t, "get_standing", map[string]any{"file": d.name}, &standing); msg != "" || standing["status"] != "open" {
		t.Errorf("get_standing inside a session: %q %v", msg, standing)
	}
	if d.state().Status != "" {
		t.Errorf("the state changed: %+v", d.state())
	}
}

// start_debate with from, and no briefing, has the distiller draft the
// briefing from the conversation, as walkie new --from does: the person
// is shown the drafted text and its hash, approves exactly that, and the
// record verifies. The conversation itself is not the briefing.
func TestMCPDraftsTheBriefingFromAConversation(t *testing.T) {
	s := setup{participants: []string{"ann", "bob"}, scripts: map[string]string{"ann": "sign_from: 1", "bob": "sign_from: 1"}}
	d := newDebate(t, s)
	// A distiller beside the participants, which writes the drafted
	// briefing into the file it is given.
	s.participants = append(s.participants, "drafter")
	s.scripts["drafter"] = "behavior: write\nbody: " + strconv.Quote(mcpBriefing+"\n## Constraints\nThe conversation asked for stable pages under inserts.\n")
	d.configure(s)
	d.Env = append(d.Env, "XDG_STATE_HOME="+t.TempDir())
	chat := d.write2("chat.txt", "me: how should GET /v1/orders paginate?\nbot: keyset on (created_at, id) is stable under inserts. SECRET-TOOL-OUTPUT\n")
	c := startMCP(t, d.Dir, d.Env)

	var shown struct {
		File, Briefing, SHA256 string
		Words                  int
		Problems               []string
	}
	if msg := c.call(t, "start_debate", map[string]any{"question": "Cursors or offsets?", "participants": []string{"ann", "bob"},
		"from": chat, "distiller": "drafter", "file": "drafted.walkie.md"}, &shown); msg != "" {
		t.Fatal(msg)
	}
	file := d.path("drafted.walkie.md")
	if shown.File != file || !strings.Contains(shown.Briefing, "The conversation asked for stable pages under inserts.") || shown.Words == 0 || shown.SHA256 == "" {
		t.Fatalf("start_debate showed %+v", shown)
	}
	if strings.Contains(shown.Briefing, "SECRET-TOOL-OUTPUT") {
		t.Errorf("the conversation itself became the briefing: %q", shown.Briefing)
	}
	if msg := c.call(t, "approve_briefing", map[string]any{"file": file, "sha256": shown.SHA256}, nil); msg != "" {
		t.Fatal(msg)
	}
	d.MustRun(0, "verify", file)
	if out := d.MustRun(0, "brief", "show", file).Stdout; !strings.Contains(out, "stable pages under inserts") {
		t.Errorf("the approved briefing on disk:\n%s", out)
	}
}
