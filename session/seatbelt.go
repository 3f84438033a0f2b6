package session

import (
	"fmt"
	"strings"
)

// seatbeltProfile renders the policy as a macOS sandbox profile (SBPL, the
// language of sandbox-exec -p), with the same rules as Landlock's: deny by
// default; read and run the grants; write the write grants; nothing
// beneath a hidden path that a grant holds. Seatbelt can deny, so the
// grants are not laid out around the hidden paths as for Landlock: each
// carries those beneath it as exceptions. The network, the system's own
// services (name lookups, TLS trust) and stat of any path stay open;
// signals and process information reach only the session's own
// processes. It has not been run here (walkie is developed on Linux):
// docs/sessions.md says so.
//
// A path with a control character or a quote cannot be written into the
// profile safely; it is left out and named in left.
func seatbeltProfile(p policy) (profile string, left []string) {
	var read, exec, write, dev []string
	for _, g := range p.grants {
		if !sbplSafe(g.path) {
			left = append(left, fmt.Sprintf("%q: not expressible in a Seatbelt profile", g.path))
			continue
		}
		f := sbplFilter(g.path, p.hide)
		if g.acc&(accRead|accList) != 0 {
			read = append(read, f)
		}
		if g.acc&accExec != 0 {
			exec = append(exec, f)
		}
		if g.acc&accWrite != 0 {
			write = append(write, f)
		}
		if g.acc&accDev != 0 {
			dev = append(dev, f)
		}
	}
	var b strings.Builder
	b.WriteString(`(version 1)
(deny default)
; The session's own processes: start, signal and inspect each other.
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
; What a CLI needs of the system: its services (name lookups, TLS trust,
; time zones), kernel settings, shared memory, terminals, the network.
(allow mach-lookup)
(allow sysctl-read)
(allow ipc-posix-sem)
(allow ipc-posix-shm)
(allow pseudo-tty)
(allow network*)
; stat of any path: names and sizes, never contents.
(allow file-read-metadata)
`)
	for _, r := range []struct {
		op      string
		filters []string
	}{{"file-read*", read}, {"process-exec", exec}, {"file-write*", write}, {"file-ioctl", dev}} {
		if len(r.filters) == 0 {
			continue
		}
		fmt.Fprintf(&b, "(allow %s", r.op)
		for _, f := range r.filters {
			fmt.Fprintf(&b, "\n  %s", f)
		}
		b.WriteString(")\n")
	}
	return b.String(), left
}

// sbplFilter matches path and what is beneath it, except the hidden
// paths beneath it. One above it does not apply: a grant beneath a
// hidden path was asked for by name.
func sbplFilter(path string, hide []string) string {
	f := fmt.Sprintf(`(subpath "%s")`, path)
	var except []string
	for _, h := range hide {
		if h != path && within(h, path) && sbplSafe(h) {
			except = append(except, fmt.Sprintf(`(require-not (subpath "%s"))`, h))
		}
	}
	if len(except) == 0 {
		return f
	}
	return "(require-all " + f + " " + strings.Join(except, " ") + ")"
}

// sbplSafe reports whether a path can go into an SBPL string literal
// as it is.
func sbplSafe(p string) bool {
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '"' || r == '\\' {
			return false
		}
	}
	return p != ""
}
