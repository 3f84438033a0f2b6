package skills

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// ServerName is the name walkie mcp is registered under in each host.
const ServerName = "walkie"

// Hosts are the MCP hosts walkie mcp is registered with, by flag name.
var Hosts = []string{"claude", "codex", "gemini"}

// HostTitle is each host's name for a person.
var HostTitle = map[string]string{"claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}

// Registration is where a host looks for its MCP servers (measured with
// claude 2.1.197, codex 0.171.0 and gemini's settings reference): a JSON
// file with mcpServers (Claude Code's ~/.claude.json and project
// .mcp.json, Gemini CLI's settings.json), or Codex's config.toml with
// [mcp_servers.NAME].
type Registration struct {
	Host string
	Path string
	// Project: the file belongs to a project (it may be anyone's, from a
	// clone), and walkie writes it only as a real file, never through a
	// link. A user's own file may be a link (dotfiles), and is followed.
	Project bool
}

// Registered is where host looks for MCP servers, for the project in the
// current directory or for the user.
func Registered(host string, user bool) (Registration, error) {
	r := Registration{Host: host, Project: !user}
	if !user {
		r.Path = map[string]string{"claude": ".mcp.json", "codex": filepath.Join(".codex", "config.toml"), "gemini": filepath.Join(".gemini", "settings.json")}[host]
		return r, nil
	}
	if host == "codex" && os.Getenv("CODEX_HOME") != "" {
		r.Path = filepath.Join(os.Getenv("CODEX_HOME"), "config.toml")
		return r, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return r, fmt.Errorf("find your home directory: %w", err)
	}
	r.Path = filepath.Join(home, map[string]string{"claude": ".claude.json", "codex": filepath.Join(".codex", "config.toml"), "gemini": filepath.Join(".gemini", "settings.json")}[host])
	return r, nil
}

// The server as walkie registers it: the walkie on the host's PATH, so
// that a project's file names no path of this machine.
var (
	serverCommand = "walkie"
	serverArgs    = []string{"mcp"}
)

// ours reports whether a server entry is the one walkie registers.
func ours(command string, args []string) bool {
	return filepath.Base(command) == serverCommand && slices.Equal(args, serverArgs)
}

// ErrNotOurs is the refusal of a server named walkie that walkie did not
// register.
var ErrNotOurs = errors.New("walkie did not register it")

// Register adds walkie mcp to r's file, keeping everything else in it as
// it was: the entry is added, never replacing one a person wrote
// (wrapped ErrNotOurs), and a file that is not what the host reads is
// refused, not overwritten.
func Register(r Registration) (Result, error) {
	return r.edit(true)
}

// Unregister removes walkie mcp from r's file, and only walkie's entry.
func Unregister(r Registration) (Result, error) {
	return r.edit(false)
}

func (r Registration) edit(add bool) (Result, error) {
	path, err := r.target()
	if err != nil {
		return Done, err
	}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !add:
		return Absent, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Done, err
	}
	editFn := editJSON
	if r.Host == "codex" {
		editFn = editTOML
	}
	text, res, err := editFn(old, add)
	if err != nil {
		return Done, fmt.Errorf("%s: %w", r.Path, err)
	}
	if res != Done {
		return res, nil
	}
	return Done, writeFile(path, text)
}

// target is the file to write: r.Path, a project's only as a real file,
// a user's through the link it may be.
func (r Registration) target() (string, error) {
	fi, err := os.Lstat(r.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return r.Path, nil
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSymlink != 0 && r.Project:
		target, _ := os.Readlink(r.Path)
		return "", &LinkError{Path: r.Path, Target: target}
	case fi.Mode()&fs.ModeSymlink != 0:
		return filepath.EvalSymlinks(r.Path)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("%s is not a regular file", r.Path)
	}
	return r.Path, nil
}

// writeFile replaces path with text whole: written beside it and renamed
// over it, with the old file's mode (a new one gets 0600: a host's config
// may hold tokens).
func writeFile(path string, text []byte) error {
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(text)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// member is one key of a JSON object, in the file's order.
type member struct {
	Key   string
	Value json.RawMessage
}

// object decodes a JSON object keeping its keys' order, so that a host's
// file comes back as the host wrote it but for walkie's entry.
func object(raw []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if find(ms, key) >= 0 {
			// Which of the two a host reads is its parser's choice.
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return ms, nil
}

func encodeObject(ms []member) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func find(ms []member, key string) int {
	return slices.IndexFunc(ms, func(m member) bool { return m.Key == key })
}

// jsonServer is an mcpServers entry, as far as walkie reads it.
type jsonServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// editJSON adds (or removes) walkie's entry under mcpServers of a JSON
// settings file.
func editJSON(old []byte, add bool) ([]byte, Result, error) {
	if len(bytes.TrimSpace(old)) == 0 {
		old = []byte("{}")
	}
	top, err := object(old)
	if err != nil {
		return nil, Done, fmt.Errorf("not a JSON settings file (%v): fix it by hand, or move it away", err)
	}
	var servers []member
	i := find(top, "mcpServers")
	if i >= 0 {
		if servers, err = object(top[i].Value); err != nil {
			return nil, Done, fmt.Errorf("mcpServers is not a JSON object (%v)", err)
		}
	}
	j := find(servers, ServerName)
	if j >= 0 {
		var s jsonServer
		if err := json.Unmarshal(servers[j].Value, &s); err != nil || !ours(s.Command, s.Args) {
			return nil, Done, fmt.Errorf("mcpServers.%s is there and %w: left alone", ServerName, ErrNotOurs)
		}
	}
	switch {
	case add && j >= 0:
		return nil, Already, nil
	case !add && j < 0:
		return nil, Absent, nil
	case add:
		entry, _ := json.Marshal(map[string]any{"type": "stdio", "command": serverCommand, "args": serverArgs})
		servers = append(servers, member{ServerName, entry})
	default:
		servers = slices.Delete(servers, j, j+1)
	}
	value := encodeObject(servers)
	if i >= 0 {
		top[i].Value = value
	} else {
		top = append(top, member{"mcpServers", value})
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, Done, err
	}
	out.WriteByte('\n')
	return out.Bytes(), Done, nil
}

// tomlHeader is walkie's table in a config.toml, however it is spaced or
// quoted.
var tomlHeader = regexp.MustCompile(`(?m)^[ \t]*\[[ \t]*mcp_servers[ \t]*\.[ \t]*"?` + ServerName + `"?[ \t]*\][ \t]*(#.*)?$`)

// tomlComment opens the table walkie writes.
const tomlComment = "# " + ServerName + " mcp, registered by walkie skill install (walkie skill remove takes it out)"

// editTOML adds (or removes) walkie's [mcp_servers.walkie] table of a
// Codex config.toml, as text: the rest of the file, comments and all,
// stays byte for byte. The result is parsed again before it is written.
func editTOML(old []byte, add bool) ([]byte, Result, error) {
	servers, err := tomlServers(old)
	if err != nil {
		return nil, Done, fmt.Errorf("not a TOML file Codex reads (%v): fix it by hand, or move it away", err)
	}
	s, there := servers[ServerName]
	switch {
	case there && !ours(s.Command, s.Args):
		return nil, Done, fmt.Errorf("[mcp_servers.%s] is there and %w: left alone", ServerName, ErrNotOurs)
	case add && there:
		return nil, Already, nil
	case !add && !there:
		return nil, Absent, nil
	}
	var text []byte
	if add {
		text = append(bytes.TrimRight(old, "\n"), []byte(fmt.Sprintf("\n\n%s\n[mcp_servers.%s]\ncommand = %q\nargs = [%q]\n", tomlComment, ServerName, serverCommand, serverArgs[0]))...)
		text = bytes.TrimLeft(text, "\n")
	} else if text, err = cutTable(old); err != nil {
		return nil, Done, err
	}
	// What is written must still be a file Codex reads, saying what
	// walkie meant.
	servers, err = tomlServers(text)
	if err != nil {
		return nil, Done, fmt.Errorf("walkie's edit would not be valid TOML (%v): edit it by hand", err)
	}
	if _, there := servers[ServerName]; there != add {
		return nil, Done, fmt.Errorf("[mcp_servers.%s] is not a table walkie can %s by itself (written inline?): edit it by hand", ServerName, map[bool]string{true: "add", false: "remove"}[add])
	}
	return text, Done, nil
}

// tomlServer is an [mcp_servers.NAME] table, as far as walkie reads it.
type tomlServer struct {
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
}

// tomlServers are the MCP servers a config.toml declares.
func tomlServers(text []byte) (map[string]tomlServer, error) {
	var cfg struct {
		Servers map[string]tomlServer `toml:"mcp_servers"`
	}
	err := toml.Unmarshal(text, &cfg)
	return cfg.Servers, err
}

// cutTable removes walkie's table from a config.toml: its header through
// the line before the next table, with walkie's comment above it.
func cutTable(old []byte) ([]byte, error) {
	loc := tomlHeader.FindIndex(old)
	if loc == nil {
		return nil, fmt.Errorf("[mcp_servers.%s] is not a table walkie can remove by itself (written inline?): edit it by hand", ServerName)
	}
	start, end := loc[0], len(old)
	if next := regexp.MustCompile(`(?m)^[ \t]*\[`).FindIndex(old[loc[1]:]); next != nil {
		end = loc[1] + next[0]
	}
	before := strings.TrimRight(string(old[:start]), "\n")
	before = strings.TrimRight(strings.TrimSuffix(before, tomlComment), "\n")
	after := string(old[end:])
	switch {
	case before == "":
		return []byte(after), nil
	case after == "":
		return []byte(before + "\n"), nil
	}
	return []byte(before + "\n\n" + after), nil
}
