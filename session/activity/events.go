package activity

import (
	"strings"
)

// format reads one CLI's events.
type format interface {
	// fields are the paths activity reads.
	fields() map[string]bool
	// activity is what an event says the agent is doing; false for an
	// event that says nothing new (or is not one of this CLI's).
	activity(f map[string]string) (Activity, bool)
	// line reads a line of output that is not an event: most are noise
	// (warnings, banners, stack traces) and give false.
	line(text string) (Activity, bool)
}

// toolInputs are the argument names the three CLIs give their tools,
// read under each format's prefix.
var toolInputs = []string{"file_path", "absolute_path", "notebook_path", "path", "dir_path", "paths", "url",
	"command", "cmd", "pattern", "query", "description", "old_string", "new_string", "content", "edits"}

func withInputs(prefix string, paths ...string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		m[p] = true
	}
	for _, in := range toolInputs {
		m[prefix+in] = true
	}
	return m
}

// inputs takes the tool arguments out from under prefix.
func inputs(f map[string]string, prefix string) map[string]string {
	in := map[string]string{}
	for _, k := range toolInputs {
		if v, ok := f[prefix+k]; ok {
			in[k] = v
		}
	}
	return in
}

// claude reads `claude -p --output-format stream-json --verbose`: a
// system init, then an assistant event per content block the model
// finishes (text, thinking or a tool_use), a user event per tool result,
// and a result event last. With --include-partial-messages, stream_event
// lines tell each block as it begins.
type claude struct{}

const claudeInput = "message.content.input."

var claudeFields = withInputs(claudeInput, "type", "subtype", "is_error", "result",
	"attempt", "max_retries", "error_status", "error",
	"message.content.type", "message.content.name",
	"event.type", "event.content_block.type", "event.content_block.name")

func (claude) fields() map[string]bool { return claudeFields }

func (claude) activity(f map[string]string) (Activity, bool) {
	switch f["type"] {
	case "system":
		switch f["subtype"] {
		case "init":
			return Activity{Kind: Waiting}, true
		case "api_retry":
			return Activity{Kind: Retrying, Target: claudeRetry(f)}, true
		}
	case "assistant":
		in := inputs(f, claudeInput)
		switch f["message.content.type"] {
		case "tool_use":
			return tool(f["message.content.name"], in), true
		case "":
			// A block cut short before its type (the fake model server
			// writes "input" first): its arguments tell a tool call.
			if f["message.content.name"] != "" || len(in) > 0 {
				return tool(f["message.content.name"], in), true
			}
		case "thinking", "redacted_thinking":
			return Activity{Kind: Thinking}, true
		case "text":
			return Activity{Kind: Answering}, true
		}
	case "user":
		// A tool's result goes back to the model.
		return Activity{Kind: Waiting}, true
	case "stream_event":
		switch f["event.type"] {
		case "message_start":
			return Activity{Kind: Waiting}, true
		case "content_block_start":
			switch f["event.content_block.type"] {
			case "thinking", "redacted_thinking":
				return Activity{Kind: Thinking}, true
			case "text":
				return Activity{Kind: Answering}, true
			case "tool_use":
				return tool(f["event.content_block.name"], nil), true
			}
		}
	case "result":
		if f["is_error"] == "true" {
			return Activity{Kind: Failed, Target: clip(f["result"])}, true
		}
		return Activity{Kind: Done}, true
	}
	return Activity{}, false
}

func (claude) line(string) (Activity, bool) { return Activity{}, false }

// claudeRetry says which model call failed and how often claude tries.
func claudeRetry(f map[string]string) string {
	what := "the model call failed"
	if st := f["error_status"]; st != "" && st != "null" {
		what = "the model answered " + st
	}
	if e := f["error"]; e != "" && e != "null" {
		what += " (" + e + ")"
	}
	if f["attempt"] != "" && f["max_retries"] != "" {
		what += ", retry " + f["attempt"] + " of " + f["max_retries"]
	}
	return clip(what)
}

// codex reads `codex exec --json`: thread.started, turn.started, then
// item.started / item.completed per item (a command, a file change, a
// message, reasoning), and turn.completed or turn.failed. An "error"
// event is a reconnect codex goes on from.
type codex struct{}

var codexFields = map[string]bool{"type": true, "message": true, "error.message": true,
	"item.type": true, "item.command": true, "item.changes.path": true, "item.changes.kind": true,
	"item.query": true, "item.server": true, "item.tool": true, "item.message": true}

func (codex) fields() map[string]bool { return codexFields }

func (codex) activity(f map[string]string) (Activity, bool) {
	switch f["type"] {
	case "thread.started", "turn.started":
		return Activity{Kind: Waiting}, true
	case "turn.completed":
		return Activity{Kind: Done}, true
	case "turn.failed":
		return Activity{Kind: Failed, Target: clip(f["error.message"])}, true
	case "error":
		return Activity{Kind: Retrying, Target: clip(f["message"])}, true
	case "item.started", "item.updated", "item.completed":
		return codexItem(f["type"] == "item.completed", f)
	}
	return Activity{}, false
}

func (codex) line(string) (Activity, bool) { return Activity{}, false }

func codexItem(completed bool, f map[string]string) (Activity, bool) {
	switch f["item.type"] {
	case "command_execution":
		if completed {
			return Activity{Kind: Waiting}, true
		}
		return tool("shell", map[string]string{"command": f["item.command"]}), true
	case "file_change":
		kind := Editing
		if f["item.changes.kind"] == "add" {
			kind = Writing
		}
		return onRecord(Activity{Kind: kind, Target: f["item.changes.path"]}), true
	case "mcp_tool_call":
		if completed {
			return Activity{Kind: Waiting}, true
		}
		return Activity{Kind: Tool, Target: clip(strings.Trim(f["item.server"]+"/"+f["item.tool"], "/"))}, true
	case "web_search":
		return Activity{Kind: Searching, Target: clip(f["item.query"])}, true
	case "reasoning":
		return Activity{Kind: Thinking}, true
	case "agent_message":
		return Activity{Kind: Answering}, true
	case "todo_list":
		return Activity{Kind: Tool, Target: "its plan"}, true
	case "error":
		return Activity{Kind: Retrying, Target: clip(f["item.message"])}, true
	}
	return Activity{}, false
}

// gemini reads `gemini -p -o stream-json`: init, the user message, then
// assistant messages (deltas), tool_use and tool_result per tool call, and
// a result event last.
type gemini struct{}

const geminiInput = "parameters."

var geminiFields = withInputs(geminiInput, "type", "role", "tool_name", "status", "message", "error.message")

func (gemini) fields() map[string]bool { return geminiFields }

func (gemini) activity(f map[string]string) (Activity, bool) {
	switch f["type"] {
	case "init", "tool_result":
		return Activity{Kind: Waiting}, true
	case "message":
		if f["role"] == "assistant" {
			return Activity{Kind: Answering}, true
		}
		return Activity{Kind: Waiting}, true
	case "tool_use":
		return tool(f["tool_name"], inputs(f, geminiInput)), true
	case "error":
		return Activity{Kind: Retrying, Target: clip(f["message"])}, true
	case "result":
		if f["status"] == "error" {
			return Activity{Kind: Failed, Target: message(f["error.message"])}, true
		}
		return Activity{Kind: Done}, true
	}
	return Activity{}, false
}

// line reads gemini's own report of a failed model call, which it
// prints as text between its events: "Attempt 1 failed with status 500.
// Retrying with backoff... _ApiError: {…}".
func (gemini) line(text string) (Activity, bool) {
	if !strings.HasPrefix(text, "Attempt ") || !strings.Contains(text, " failed") {
		return Activity{}, false
	}
	if i := strings.Index(text, "... "); i >= 0 {
		text = text[:i+3] // what follows is the raw error and its stack
	}
	if i := strings.Index(text, ": {"); i >= 0 {
		text = text[:i]
	}
	return Activity{Kind: Retrying, Target: clip(text)}, true
}

// message is an error message as a person reads it: gemini wraps the
// API's JSON error in its own text ("[API Error: {"error":{…,"message":
// "the model is down",…}}]"), and the API's message is what tells.
func message(s string) string {
	if i := strings.Index(s, `{"error":`); i >= 0 {
		if inner := readFields([]byte(s[i:]), map[string]bool{"error.message": true})["error.message"]; inner != "" {
			return clip(strings.TrimSpace(s[:i]) + " " + inner + "]")
		}
	}
	return clip(s)
}

// tool names a tool call by what it does. The names are the three CLIs'
// (claude's Read, Edit, Bash…; gemini's read_file, replace,
// run_shell_command…); a tool of another name is judged by its arguments.
func tool(name string, in map[string]string) Activity {
	file := first(in, "file_path", "absolute_path", "notebook_path", "path", "dir_path", "paths")
	var a Activity
	switch normal(name) {
	case "read", "readfile", "readmanyfiles", "notebookread", "ls", "listdirectory", "view":
		a = Activity{Kind: Reading, Target: file}
	case "webfetch":
		a = Activity{Kind: Reading, Target: first(in, "url")}
	case "edit", "multiedit", "replace", "notebookedit", "strreplace", "applypatch":
		a = Activity{Kind: Editing, Target: file}
	case "write", "writefile", "create":
		a = Activity{Kind: Writing, Target: file}
	case "bash", "shell", "runshellcommand", "exec", "execcommand", "localshell":
		a = Activity{Kind: Running, Target: command(first(in, "command", "cmd"))}
	case "grep", "glob", "search", "searchfilecontent", "grepsearch", "websearch", "googlewebsearch", "toolsearch":
		a = Activity{Kind: Searching, Target: clip(first(in, "pattern", "query"))}
	default:
		a = byArguments(name, in, file)
	}
	return onRecord(a)
}

// byArguments judges a tool the names above do not know.
func byArguments(name string, in map[string]string, file string) Activity {
	_, old := in["old_string"]
	_, edits := in["edits"]
	_, content := in["content"]
	switch {
	case file != "" && (old || edits):
		return Activity{Kind: Editing, Target: file}
	case file != "" && content:
		return Activity{Kind: Writing, Target: file}
	case first(in, "command", "cmd") != "":
		return Activity{Kind: Running, Target: command(first(in, "command", "cmd"))}
	case first(in, "pattern", "query") != "":
		return Activity{Kind: Searching, Target: clip(first(in, "pattern", "query"))}
	case file != "":
		return Activity{Kind: Reading, Target: file}
	case name != "":
		return Activity{Kind: Tool, Target: clip(name)}
	}
	return Activity{Kind: Tool, Target: "a tool"}
}

// onRecord tells the agent writing its turn: an edit or a write of a
// walkie file, or a command that appends to one.
func onRecord(a Activity) Activity {
	switch a.Kind {
	case Editing, Writing:
		if isRecord(a.Target) {
			return Activity{Kind: Turn, Target: a.Target}
		}
	case Running:
		if strings.Contains(a.Target, ".walkie.md") && (strings.Contains(a.Target, ">>") || strings.Contains(a.Target, "tee -a") || strings.Contains(a.Target, "walkie post")) {
			return Activity{Kind: Turn, Target: a.Target}
		}
	}
	return a
}

func isRecord(path string) bool { return strings.HasSuffix(strings.TrimSpace(path), ".walkie.md") }

func first(in map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(in[k]); v != "" && v != "null" {
			return v
		}
	}
	return ""
}

// normal lowercases a tool name and drops what is not a letter, so Read,
// read_file and ReadFile compare alike.
func normal(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// command is a command line as a person reads it: codex's
// `/bin/bash -lc "…"` wrapper taken off, only the first line, blanks
// folded.
func command(c string) string {
	c = strings.TrimSpace(c)
	for _, shell := range []string{"/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "bash -c ", "/bin/sh -c ", "sh -c ", "/bin/zsh -lc ", "zsh -lc "} {
		if rest, ok := strings.CutPrefix(c, shell); ok {
			c = unquote(strings.TrimSpace(rest))
			break
		}
	}
	if i := strings.IndexByte(c, '\n'); i >= 0 {
		c = strings.TrimSpace(c[:i]) + " …"
	}
	return clip(c)
}

// unquote takes off one level of shell quoting around a whole word.
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	switch {
	case s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	case s[0] == '"' && s[len(s)-1] == '"':
		r := strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`")
		return r.Replace(s[1 : len(s)-1])
	}
	return s
}
