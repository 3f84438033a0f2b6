package activity

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session/usage"
)

// read returns a recorded transcript: session/usage/testdata holds real
// sessions' plain text, cmd/fakemodel/testdata the real CLIs' output
// against the fake model server.
func read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	sessions = "../usage/testdata/"
	runs     = "../../cmd/fakemodel/testdata/"
)

// inPty is output as a session reads it from the pty: "\r\n" line ends,
// and escapes around it (claude resets the terminal at exit).
func inPty(b []byte) []byte {
	s := strings.ReplaceAll(string(b), "\n", "\r\n")
	return []byte("\x1b[?25l\x1b[2K" + s + "\x1b[?25h\x1b]0;\x07")
}

// steps feeds b in chunks of n bytes and lists each activity reported as
// changed.
func steps(kind string, b []byte, n int) []string {
	tr := New(kind)
	var got []string
	for len(b) > 0 {
		k := min(n, len(b))
		if a, changed := tr.Feed(b[:k]); changed {
			got = append(got, a.String())
		}
		b = b[k:]
	}
	return got
}

func TestRealTranscripts(t *testing.T) {
	tests := []struct {
		name, kind, file string
		want             []string
	}{
		{"claude turn", usage.ClaudeJSON, sessions + "claude-turn.txt",
			[]string{"waiting on the model", "writing its turn", "waiting on the model", "answering", "done"}},
		{"claude 500", usage.ClaudeJSON, sessions + "claude-500.txt",
			[]string{"waiting on the model", "retrying: the model answered 500 (server_error), retry 1 of 2",
				"retrying: the model answered 500 (server_error), retry 2 of 2", "answering",
				"failed: API Error: 500 the fake model is down. This is a server-side issue, usually temporary — try again in a moment. If it persists, check your inference gateway (127.0.0.1:39749)."}},
		{"claude stream-json", usage.ClaudeJSON, runs + "claude-stream.jsonl",
			[]string{"waiting on the model", "running echo claude-streamed >> turn.md", "waiting on the model", "answering", "done"}},
		{"claude 429", usage.ClaudeJSON, runs + "runs/claude-http-429.stdout",
			[]string{"failed: API Error: Request rejected (429) · rate limited"}},
		{"codex turn", usage.CodexJSONL, sessions + "codex-turn.txt",
			[]string{"waiting on the model", "writing its turn", "waiting on the model", "answering", "done"}},
		{"codex events", usage.CodexJSONL, runs + "codex-events.jsonl",
			[]string{"waiting on the model", "running echo codex-was-here >> turn.md", "waiting on the model", "answering", "done"}},
		{"codex 500", usage.CodexJSONL, sessions + "codex-500.txt",
			[]string{"waiting on the model", "retrying: Reconnecting... 1/1 (We’re currently experiencing high demand, which may cause temporary errors.)",
				"retrying: We’re currently experiencing high demand, which may cause temporary errors.",
				"failed: We’re currently experiencing high demand, which may cause temporary errors."}},
		{"codex no network", usage.CodexJSONL, runs + "runs/codex-connection-refused.stdout",
			[]string{"waiting on the model", "retrying: Reconnecting... waiting for network (Connection failed: error sending request)"}},
		{"gemini turn", usage.GeminiJSON, sessions + "gemini-turn.txt",
			[]string{"waiting on the model", "writing its turn", "waiting on the model", "answering", "done"}},
		{"gemini stream", usage.GeminiJSON, runs + "gemini-stream.jsonl",
			[]string{"waiting on the model", "running echo gemini-yolo >> turn.md", "waiting on the model", "answering", "done"}},
		{"gemini 500", usage.GeminiJSON, sessions + "gemini-500.txt",
			[]string{"waiting on the model", "retrying: Attempt 1 failed with status 500. Retrying with backoff...",
				"retrying: Attempt 2 failed", "failed: [API Error: the fake model is down]"}},
		// Only noise on stderr: nothing to report, rather than a warning.
		{"gemini noise", usage.GeminiJSON, runs + "runs/gemini-stream.stderr", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := inPty(read(t, tt.file))
			// Fed in small pieces, every change is seen; in large ones,
			// a Feed reports where its chunk leaves the agent.
			for _, n := range []int{1, 7, 4096, len(text)} {
				got := steps(tt.kind, text, n)
				if n < 100 && !slices.Equal(got, tt.want) {
					t.Fatalf("fed in chunks of %d bytes:\n got %q\nwant %q", n, got, tt.want)
				}
				if len(tt.want) > 0 && (len(got) == 0 || got[len(got)-1] != tt.want[len(tt.want)-1]) {
					t.Fatalf("fed in chunks of %d bytes, it ends %q, want %q", n, got, tt.want[len(tt.want)-1])
				}
				if len(tt.want) == 0 && len(got) > 0 {
					t.Fatalf("fed in chunks of %d bytes: %q, want nothing", n, got)
				}
			}
		})
	}
}

func TestClaudeTools(t *testing.T) {
	msg := func(block string) string {
		return `{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look."},` + block + `]}}` + "\n"
	}
	tests := []struct{ event, want string }{
		{msg(`{"type":"tool_use","id":"t","name":"Read","input":{"file_path":"/home/me/api/controller/attempt.go"}}`), "reading controller/attempt.go"},
		{msg(`{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"main.go","old_string":"a","new_string":"b"}}`), "editing main.go"},
		{msg(`{"type":"tool_use","id":"t","name":"MultiEdit","input":{"file_path":"/a/b/c.go","edits":[]}}`), "editing b/c.go"},
		{msg(`{"type":"tool_use","id":"t","name":"Write","input":{"file_path":"/a/b/NOTES.md","content":"x"}}`), "writing b/NOTES.md"},
		{msg(`{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/d/api.walkie.md","old_string":"a","new_string":"b"}}`), "writing its turn"},
		{msg(`{"type":"tool_use","id":"t","name":"Bash","input":{"command":"go test ./...\necho done","description":"Run the tests"}}`), "running go test ./... …"},
		{msg(`{"type":"tool_use","id":"t","name":"Bash","input":{"command":"cat >> api.walkie.md <<'EOF'\n## Turn 3 · claude\nEOF"}}`), "writing its turn"},
		{msg(`{"type":"tool_use","id":"t","name":"Grep","input":{"pattern":"func New","path":"."}}`), `searching "func New"`},
		{msg(`{"type":"tool_use","id":"t","name":"Glob","input":{"pattern":"**/*.go"}}`), `searching "**/*.go"`},
		{msg(`{"type":"tool_use","id":"t","name":"WebFetch","input":{"url":"https://www.rfc-editor.org/rfc/rfc9457","prompt":"x"}}`), "reading https://www.rfc-editor.org/rfc/rfc9457"},
		{msg(`{"type":"tool_use","id":"t","name":"TodoWrite","input":{"todos":[]}}`), "using TodoWrite"},
		{msg(`{"type":"tool_use","id":"t","name":"mcp__files__open","input":{"path":"/srv/x/y.txt"}}`), "reading x/y.txt"},
		{msg(`{"type":"thinking","thinking":"hmm"}`), "thinking"},
		// Nesting deeper than the fields read is followed, not named.
		{msg(`{"type":"tool_use","id":"t","input":{"todos":[[[[[[[[[[{"a":{"b":{"c":1}}}]]]]]]]]]]},"name":"TodoWrite"}`), "using TodoWrite"},
		// The fake model server's blocks list "input" before "name" and
		// "type"; a real one may too.
		{msg(`{"id":"t","input":{"file_path":"/x/y/z.go"},"name":"Read","type":"tool_use"}`), "reading y/z.go"},
		{`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}}` + "\n", "thinking"},
		{`{"type":"stream_event","event":{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Grep","input":{}}}}` + "\n", "searching"},
		{`{"type":"stream_event","event":{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pat"}}}` + "\n", ""},
	}
	for _, tt := range tests {
		got := New(usage.ClaudeJSON)
		a, _ := got.Feed([]byte(tt.event))
		if a.String() != tt.want {
			t.Errorf("%s\n got %q, want %q", tt.event, a.String(), tt.want)
		}
	}
}

func TestCodexAndGeminiTools(t *testing.T) {
	tests := []struct{ kind, event, want string }{
		{usage.CodexJSONL, `{"type":"item.started","item":{"id":"i","type":"command_execution","command":"/bin/bash -lc 'rg -n \"func New\" .'","status":"in_progress"}}`, `running rg -n "func New" .`},
		{usage.CodexJSONL, `{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"/w/a.go","kind":"update"},{"path":"/w/pkg/b.go","kind":"add"}],"status":"completed"}}`, "writing pkg/b.go"},
		{usage.CodexJSONL, `{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"/w/api.walkie.md","kind":"update"}],"status":"completed"}}`, "writing its turn"},
		{usage.CodexJSONL, `{"type":"item.completed","item":{"id":"i","type":"reasoning","text":"**Planning**"}}`, "thinking"},
		{usage.CodexJSONL, `{"type":"item.started","item":{"id":"i","type":"mcp_tool_call","server":"docs","tool":"search","status":"in_progress"}}`, "using docs/search"},
		{usage.CodexJSONL, `{"type":"item.started","item":{"id":"i","type":"web_search","query":"rfc 9457"}}`, `searching "rfc 9457"`},
		{usage.CodexJSONL, `{"type":"item.updated","item":{"id":"i","type":"todo_list","items":[]}}`, "using its plan"},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"read_file","tool_id":"x","parameters":{"absolute_path":"/w/docs/format.md"}}`, "reading docs/format.md"},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"read_many_files","tool_id":"x","parameters":{"paths":["a.go","b.go"]}}`, "reading b.go"},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"write_file","tool_id":"x","parameters":{"file_path":"/w/x/new.go","content":"package x"}}`, "writing x/new.go"},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"search_file_content","tool_id":"x","parameters":{"pattern":"TODO"}}`, `searching "TODO"`},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"list_directory","tool_id":"x","parameters":{"dir_path":"/w/src"}}`, "reading w/src"},
		{usage.GeminiJSON, `{"type":"tool_use","tool_name":"save_memory","tool_id":"x","parameters":{"fact":"x"}}`, "using save_memory"},
	}
	for _, tt := range tests {
		a, _ := New(tt.kind).Feed([]byte(tt.event + "\r\n"))
		if a.String() != tt.want {
			t.Errorf("%s\n got %q, want %q", tt.event, a.String(), tt.want)
		}
	}
}

// An event that quotes a whole file is longer than a tracker keeps: what
// comes before the cut still names the tool and its file.
func TestLongEvent(t *testing.T) {
	huge := strings.Repeat("x", 3*maxLine)
	for _, event := range []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/w/big.go","old_string":"` + huge + `","new_string":"y"}}]}}`,
		`{"type":"assistant","message":{"content":[{"id":"t","input":{"file_path":"/w/big.go","old_string":"` + huge + `","new_string":"y"},"name":"Edit","type":"tool_use"}]}}`,
	} {
		tr := New(usage.ClaudeJSON)
		a, _ := tr.Feed([]byte(event + "\n"))
		if a.String() != "editing w/big.go" {
			t.Errorf("got %q, want editing w/big.go", a.String())
		}
		if cap(tr.cur) > 2*maxLine || cap(tr.buf) > 2*feedStep {
			t.Errorf("kept %d and %d bytes of a %d-byte line", cap(tr.cur), cap(tr.buf), len(event))
		}
	}
}

func TestPlainOutput(t *testing.T) {
	tr := New("none")
	steps := []struct {
		chunk, want string
		changed     bool
	}{
		{"\x1b[32mReading the file", "Reading the file", true},
		{"…\r\n", "Reading the file…", true},
		{"\x1b[2K", "Reading the file…", false}, // an escape alone: nothing new
		{"\r⠋ thinking", "⠋ thinking", true},    // a spinner redraws the line
		{"\r⠙ thinking", "⠙ thinking", true},
		{"\r           \r", "⠙ thinking", false}, // cleared: the last line with text stays
		{"\r⠹", "⠙ thinking", false},             // a bare spinner says nothing
		{"\rdone\n\n\n", "done", true},
		{`{"type":"result","total_cost_usd":0.01}` + "\r\n", "done", false}, // never a raw JSON line
		{`{"type":"assis`, "done", false},
		{"tant\"}\n-----\n", "done", false},
		{strings.Repeat("word ", 100), strings.TrimSpace(strings.Repeat("word ", 40))[:maxTarget-1] + "…", true},
	}
	for i, s := range steps {
		a, changed := tr.Feed([]byte(s.chunk))
		if a.String() != s.want || changed != s.changed {
			t.Errorf("step %d (%q): got %q changed=%v, want %q changed=%v", i, s.chunk, a.String(), changed, s.want, s.changed)
		}
		if a.Kind != Output {
			t.Errorf("step %d: kind %q, want output", i, a.Kind)
		}
	}
}

// The JSON formats show no plain lines: their stderr is noise.
func TestEventsIgnoreNoise(t *testing.T) {
	for _, kind := range []string{usage.ClaudeJSON, usage.CodexJSONL, usage.GeminiJSON} {
		a, changed := New(kind).Feed([]byte("Warning: True color (24-bit) support not detected.\r\nReading prompt from stdin...\r\n"))
		if changed || a != (Activity{}) {
			t.Errorf("%s: noise reported as %q", kind, a)
		}
	}
}

func TestReadFields(t *testing.T) {
	want := map[string]bool{"type": true, "a.b": true, "list.name": true, "list.n": true}
	tests := []struct {
		line string
		want map[string]string
	}{
		{`{"type":"x","a":{"b":"c","z":1},"list":[{"name":"one","n":1},{"name":"two"}]}`, map[string]string{"type": "x", "a.b": "c", "list.name": "two"}},
		{`{"type":"x","a":{"b":"c`, map[string]string{"type": "x", "a.b": ""}}, // a.b is there, its value cut off
		{`{"a":{"b":true},"type":null}`, map[string]string{"a.b": "true", "type": "null"}},
		{`{"type":"x"} {"type":"y"}`, map[string]string{"type": "x"}},
		{`{"list":[["name"],{"name":"n"}],"type":"t"}`, map[string]string{"list.name": "n", "type": "t"}},
		{`not json`, map[string]string{}},
		{`{"type":`, map[string]string{"type": ""}},
	}
	for _, tt := range tests {
		got := readFields([]byte(tt.line), want)
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %v, want %v", tt.line, got, tt.want)
			continue
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: got %v, want %v", tt.line, got, tt.want)
			}
		}
	}
}
