package session

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SandboxLevel says how far a session insists on its boundary.
type SandboxLevel string

// The levels. The zero value is SandboxOff: a Spec that says nothing runs
// as before.
const (
	SandboxOff = SandboxLevel("off")
	// SandboxAuto applies what this system supports and says in the
	// result what it could not.
	SandboxAuto = SandboxLevel("auto")
	// SandboxRequired refuses to start unless the whole boundary can be
	// applied (ErrNoSandbox).
	SandboxRequired = SandboxLevel("required")
)

// On reports whether the level asks for a boundary at all.
func (l SandboxLevel) On() bool { return l == SandboxAuto || l == SandboxRequired }

// ErrNoSandbox is Start's error for SandboxRequired on a system that
// cannot enforce the whole boundary.
var ErrNoSandbox = errors.New("the sandbox is required and this system cannot enforce it")

// Sandbox is the filesystem boundary of a session: what every process of
// it may reach. Besides Reach, a sandboxed session always gets read and
// run on the system's programs, libraries and configuration (not its
// secrets: /etc/shadow, host keys), on its own command's install and its
// PATH; read and write on its private HOME and TMPDIR (a sandboxed
// session always has a private TMPDIR) and a few devices (/dev/null,
// /dev/tty). The user's real HOME and everything else stay out of reach,
// as does a grant that would cover them: Hide lists what a grant is laid
// out around. The network stays open.
type Sandbox struct {
	Level SandboxLevel
	Reach
}

// Reach is what a session's role may reach beyond what every sandboxed
// session gets. Relative paths are taken from the session's Dir; a path
// that does not exist is left out and said so in the report.
type Reach struct {
	// Read: files and directories it may read (and run), everything
	// beneath a directory included.
	Read []string
	// Write: files and directories it may also change: beneath a
	// directory, create, change, rename and remove; a file, change and
	// truncate (not remove: its directory is not granted).
	Write []string
	// Hide: paths that stay out of reach although a Read or Write grant
	// contains them; the grant is laid out around them, so the rest of
	// it is reached. A grant beneath a hidden path is kept: it was asked
	// for by name.
	Hide []string
}

// SandboxReport says how a session's boundary was applied.
type SandboxReport struct {
	// Kind is the mechanism: "landlock", "seatbelt", or "" when none
	// applied.
	Kind string `json:"kind,omitempty"`
	// ABI is the Landlock ABI used (Linux).
	ABI int `json:"abi,omitempty"`
	// Missing says what this system could not enforce, one line each.
	Missing []string `json:"missing,omitempty"`
	// Left says what was asked but left out (a path that does not exist,
	// a grant that would have covered the user's HOME).
	Left []string `json:"left_out,omitempty"`
	// Refused lists what the session's own output reported refused
	// (a path, or the line when it named none), in order, at most
	// maxRefusals. It is what the agent printed, not what the kernel
	// saw: an agent that hides its errors leaves nothing here.
	Refused []string `json:"refused,omitempty"`
}

// access is what a grant allows beneath its path.
type access uint8

const (
	accRead  access = 1 << iota // read files, list directories
	accExec                     // run files
	accWrite                    // change files; create, rename and remove entries beneath
	accDev                      // ioctl on device files (a terminal's size, its modes)
	accList                     // list the directory's entries, nothing more: a split grant's parent
)

// grant is one path a policy opens.
type grant struct {
	path string // absolute, symlinks resolved
	acc  access
}

// policy is a session's boundary as paths, before a mechanism (Landlock,
// Seatbelt) applies it.
type policy struct {
	grants []grant
	hide   []string // absolute, resolved
	home   string   // the user's real HOME, resolved; "" when unknown
	left   []string // what was asked and left out, for the report
}

// newPolicy lays out the boundary of a session of spec whose command
// resolved to exe, with the private directories made and the environment
// env it gets. home is the user's real HOME ("" when unknown).
func newPolicy(spec Spec, made madeDirs, exe string, env []string, home string) policy {
	var p policy
	if r, ok := resolve(home, ""); ok && home != "" {
		home = r
	}
	p.home = home
	hide := slices.Clone(spec.Sandbox.Hide)
	hide = append(hide, systemSecrets()...)
	if home != "" {
		hide = append(hide, home)
	}
	// A hidden path that is not there is left out: nothing of it can be
	// reached, and laying a grant out around it would keep its owner from
	// making new entries where it would be (a worktree's top).
	for _, h := range hide {
		if r, ok := resolve(h, spec.Dir); ok {
			p.hide = append(p.hide, r)
		}
	}
	for _, g := range systemGrants() {
		p.add(g.path, g.acc, spec.Dir, false)
	}
	for _, d := range []string{made.home, made.tmp} {
		if d != "" {
			p.add(d, accRead|accExec|accWrite, "", true)
		}
	}
	for _, g := range installGrants(exe, env, spec.Dir, home) {
		p.add(g.path, g.acc, spec.Dir, false)
	}
	for _, r := range spec.Sandbox.Read {
		p.add(r, accRead|accExec, spec.Dir, true)
	}
	for _, w := range spec.Sandbox.Write {
		p.add(w, accRead|accExec|accWrite, spec.Dir, true)
	}
	return p
}

// add grants path (relative to dir) if it exists; asked says whether a
// missing one is worth a word in the report.
func (p *policy) add(path string, acc access, dir string, asked bool) {
	r, ok := resolve(path, dir)
	if !ok {
		if asked {
			p.left = append(p.left, fmt.Sprintf("%s: not there", path))
		}
		return
	}
	for _, h := range p.hide {
		if r == h {
			why := "hidden from this role"
			if h == p.home {
				why = "your HOME"
			}
			p.left = append(p.left, fmt.Sprintf("%s: kept out of reach (%s)", path, why))
			return
		}
	}
	p.grants = append(p.grants, grant{path: r, acc: acc})
}

// resolve makes path absolute (from dir) and resolves its symbolic links;
// ok is false when it does not exist.
func resolve(path, dir string) (string, bool) {
	r, err := filepath.EvalSymlinks(absFrom(path, dir))
	if err != nil {
		return "", false
	}
	return r, true
}

func absFrom(path, dir string) string {
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return filepath.Clean(path)
}

// within reports whether p is dir or beneath it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// laidOut returns the grants with each one that contains a hidden path
// split around it: the grant's directory may only be listed, and each of
// its entries is granted on its own, recursively, except the hidden ones
// and symbolic links (a link is reached through the grant of its target,
// if any: following it here would let whoever planted it widen the
// boundary). A mechanism that cannot deny (Landlock) applies these.
func (p policy) laidOut() []grant {
	var out []grant
	for _, g := range p.grants {
		out = append(out, split(g, p.hide)...)
	}
	return out
}

func split(g grant, hide []string) []grant {
	var inside []string
	for _, h := range hide {
		if h == g.path {
			return nil
		}
		if within(h, g.path) {
			inside = append(inside, h)
		}
	}
	if len(inside) == 0 {
		return []grant{g}
	}
	entries, err := os.ReadDir(g.path)
	if err != nil {
		return nil // not a directory after all, or gone: nothing to grant safely
	}
	var out []grant
	if g.acc&accRead != 0 {
		out = append(out, grant{path: g.path, acc: accList})
	}
	for _, e := range entries {
		if t := e.Type(); !t.IsDir() && !t.IsRegular() {
			continue // links, devices, sockets and pipes are not laid out
		}
		out = append(out, split(grant{path: filepath.Join(g.path, e.Name()), acc: g.acc}, inside)...)
	}
	return out
}

// installGrants are what the command needs to run: its own install (the
// node_modules tree of an npm package, else the directory of the
// resolved binary), the interpreter its #! line names, and the session's
// PATH. A directory that is the user's HOME or holds it is narrowed to
// the file itself.
func installGrants(exe string, env []string, dir, home string) []grant {
	var out []grant
	run := accRead | accExec
	if exe != "" {
		out = append(out, binaryGrants(exe, home)...)
		if interp := interpreter(exe, EnvValue(env, "PATH"), dir); interp != "" {
			out = append(out, binaryGrants(interp, home)...)
		}
	}
	for _, d := range filepath.SplitList(EnvValue(env, "PATH")) {
		if !filepath.IsAbs(d) {
			continue // "." and relative entries name the working directory, which the role decides
		}
		// Not one in or above the user's HOME (~/.local/bin, ~/go/bin):
		// the agent's own command is granted above; the rest of such a
		// folder is the user's, not the system's.
		if r, ok := resolve(d, ""); ok && (home == "" || !within(home, r) && !within(r, home)) {
			out = append(out, grant{path: r, acc: run})
		}
	}
	return out
}

// binaryGrants opens a program's install: the outermost node_modules
// directory above it (an npm package needs its dependencies), else its
// directory, else (that directory would hold the user's HOME) the file.
func binaryGrants(bin, home string) []grant {
	real, ok := resolve(bin, "")
	if !ok {
		return nil
	}
	run := accRead | accExec
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		return []grant{{path: real[:i+len("/node_modules")], acc: run}}
	}
	d := filepath.Dir(real)
	if d == "/" || (home != "" && within(home, d)) {
		return []grant{{path: real, acc: run}}
	}
	return []grant{{path: d, acc: run}}
}

// interpreter returns the program a script's #! line runs, looked up in
// path when it is `#!/usr/bin/env NAME`; "" for a binary or no such line.
func interpreter(exe, path, dir string) string {
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 256).ReadSlice('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
		return ""
	}
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return ""
	}
	words := strings.Fields(string(rest))
	if len(words) == 0 {
		return ""
	}
	if filepath.Base(words[0]) != "env" || len(words) < 2 {
		return words[0]
	}
	name := words[1]
	if name == "-S" && len(words) > 2 {
		name = words[2]
	}
	p, err := lookPath(name, path, dir)
	if err != nil {
		return ""
	}
	return p
}
