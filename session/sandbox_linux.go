package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// On Linux the boundary is a Landlock ruleset (docs/sessions.md,
// "Sandbox"). Go's os/exec runs no code of ours between fork and exec, so
// the session's command is started through this very program: the child
// is /proc/self/exe with trampolineVar set, the ruleset as file
// descriptor 3, and the agent's argv; the package's init (below) sees the
// variable before anything else of the program runs, restricts itself,
// drops what root could use to reach past the boundary, and executes the
// agent. The pid, session, process group, controlling terminal and
// parent-death signal carry over the exec, and every descendant inherits
// the domain; nothing can lift it. Any program that imports this package
// (walkie, the test binaries) can start sandboxed sessions this way.

const (
	// trampolineVar names the program the trampoline runs; it never
	// reaches the agent.
	trampolineVar = "WALKIE_SANDBOX_EXEC"
	// rulesetFD is where the child finds the ruleset: the first of
	// exec.Cmd's ExtraFiles.
	rulesetFD = 3
	// abiVar lowers the Landlock ABI walkie uses to at most its value,
	// 0 meaning none: for tests of older kernels and of none at all.
	abiVar = "WALKIE_LANDLOCK_ABI"
	// fullABI is the first ABI with every part of walkie's boundary:
	// truncation (3), device ioctls (5), and the scopes (6) that keep
	// signals and abstract sockets from reaching past the domain.
	fullABI = 6
	// highestABI is the highest ABI walkie knows the rights of.
	highestABI = 7
)

func init() {
	if prog, ok := os.LookupEnv(trampolineVar); ok {
		trampoline(prog)
	}
}

// trampoline restricts this process to the ruleset at rulesetFD and
// executes prog with the rest of the environment. It never returns: a
// failure ends the process with 126 (127 for a missing program), saying
// why on the terminal, so the session records what went wrong.
func trampoline(prog string) {
	// Landlock, no_new_privs and capabilities are per thread; exec must
	// come from the thread that got them.
	runtime.LockOSThread()
	fail := func(code int, err error) {
		fmt.Fprintf(os.Stderr, "walkie sandbox: %v\n", err)
		os.Exit(code)
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, trampolineVar+"=") {
			env = append(env, kv)
		}
	}
	if err := dropCapabilities(); err != nil {
		fail(126, err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(126, fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err))
	}
	if err := ll.LandlockRestrictSelf(rulesetFD, 0); err != nil {
		fail(126, fmt.Errorf("landlock_restrict_self: %w", err))
	}
	unix.Close(rulesetFD)
	err := syscall.Exec(prog, os.Args, env)
	code := 126
	if os.IsNotExist(err) {
		code = 127
	}
	fail(code, fmt.Errorf("exec %s: %w", prog, err))
}

// keptCapabilities are what an agent run as root keeps: those a container
// gets by default (Docker's set, less CAP_MKNOD, CAP_SETPCAP and
// CAP_SETFCAP). The rest reach past a filesystem boundary: above all
// CAP_SYS_PTRACE, with which root reads any process's environment and
// memory (walkie's own, with its API keys), and CAP_SYS_MODULE,
// CAP_SYS_ADMIN, CAP_SYS_RAWIO, CAP_DAC_READ_SEARCH (open_by_handle_at).
var keptCapabilities = []int{unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_KILL,
	unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_NET_BIND_SERVICE, unix.CAP_NET_RAW, unix.CAP_SYS_CHROOT, unix.CAP_AUDIT_WRITE}

// dropCapabilities removes every capability but keptCapabilities from
// this thread's bounding, ambient, inheritable, permitted and effective
// sets, so that what it executes cannot have them either. A process
// without CAP_SETPCAP (anyone but root) has none to drop.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[unix.CAP_SETPCAP/32].Effective&(1<<(unix.CAP_SETPCAP%32)) == 0 {
		return nil
	}
	var keep [2]uint32
	for _, c := range keptCapabilities {
		keep[c/32] |= 1 << (c % 32)
	}
	for c := 0; c <= lastCapability(); c++ {
		if keep[c/32]&(1<<(c%32)) != 0 {
			continue
		}
		// EINVAL: a capability this kernel does not know.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && err != unix.EINVAL {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	for i := range data {
		data[i].Effective &= keep[i]
		data[i].Permitted &= keep[i]
		data[i].Inheritable &= keep[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// lastCapability is the highest capability this kernel knows: a kernel
// newer than x/sys may know more, which must go too.
func lastCapability() int {
	var buf [16]byte
	if n, err := readSmall("/proc/sys/kernel/cap_last_cap", buf[:]); err == nil {
		if c, err := strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err == nil {
			return c
		}
	}
	return unix.CAP_LAST_CAP
}

// systemGrants are what every sandboxed session reads on Linux: the
// programs and libraries, /etc (less systemSecrets), /proc and /sys
// (another process's environment and memory stay guarded by the kernel's
// ptrace rules, which Landlock tightens and dropCapabilities keeps root
// from bypassing), the name server file /etc/resolv.conf may link into
// /run, and a few devices.
func systemGrants() []grant {
	run := accRead | accExec
	out := []grant{
		{"/usr", run}, {"/bin", run}, {"/sbin", run}, {"/lib", run}, {"/lib32", run}, {"/lib64", run}, {"/libx32", run},
		{"/opt", run}, {"/nix/store", run}, {"/etc", accRead}, {"/proc", accRead}, {"/sys", accRead},
		{"/dev/null", accRead | accWrite}, {"/dev/zero", accRead | accWrite}, {"/dev/full", accRead | accWrite},
		{"/dev/random", accRead}, {"/dev/urandom", accRead}, {"/dev/tty", accRead | accWrite | accDev},
	}
	for _, f := range []string{"/etc/resolv.conf", "/etc/localtime"} {
		if r, ok := resolve(f, ""); ok && !within(r, "/etc") {
			out = append(out, grant{r, accRead})
		}
	}
	return out
}

// systemSecrets are the files of /etc no agent reads: password hashes,
// sudo rules, the host's private keys and stored network secrets.
func systemSecrets() []string {
	out := []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
		"/etc/ssl/private", "/etc/security/opasswd", "/etc/NetworkManager/system-connections", "/etc/wireguard",
		"/etc/ppp/chap-secrets", "/etc/ppp/pap-secrets", "/etc/krb5.keytab"}
	if entries, err := os.ReadDir("/etc/ssh"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "ssh_host_") && strings.HasSuffix(e.Name(), "_key") {
				out = append(out, "/etc/ssh/"+e.Name())
			}
		}
	}
	return out
}

// landlockABI is the Landlock ABI walkie uses here: the kernel's, at
// most highestABI, lowered by WALKIE_LANDLOCK_ABI; 0 when Landlock is
// unavailable.
func landlockABI() int {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil {
		abi = 0
	}
	abi = min(abi, highestABI)
	if v, err := strconv.Atoi(os.Getenv(abiVar)); err == nil && v >= 0 {
		abi = min(abi, v)
	}
	return abi
}

// abiRights are the filesystem rights each ABI handles: 13 in ABI 1,
// refer in 2, truncate in 3, device ioctls in 5.
func abiRights(abi int) uint64 {
	bits := map[int]uint{1: 13, 2: 14, 3: 15, 4: 15}[abi]
	if abi >= 5 {
		bits = 16
	}
	return uint64(1)<<bits - 1
}

// missingAt says what of walkie's boundary ABI abi lacks.
func missingAt(abi int) []string {
	if abi == 0 {
		return []string{"Landlock is not available (this kernel has none, or it is not enabled: lsm=landlock): agents run without a filesystem boundary"}
	}
	var out []string
	if abi < 2 {
		out = append(out, "Landlock ABI 1: files cannot be moved or linked between folders, even where writing is allowed")
	}
	if abi < 3 {
		out = append(out, fmt.Sprintf("Landlock ABI %d: truncate(2) is not restricted: an agent can empty any file it can name, walkie's state included", abi))
	}
	if abi < 5 {
		out = append(out, fmt.Sprintf("Landlock ABI %d: ioctl on device files is not restricted", abi))
	}
	if abi < 6 {
		out = append(out, fmt.Sprintf("Landlock ABI %d: signals and abstract Unix sockets reach processes outside the sandbox (walkie itself)", abi))
	}
	return out
}

// Rights of each kind of grant, in Landlock's terms.
const (
	llRead  = ll.AccessFSReadFile | ll.AccessFSReadDir
	llExec  = ll.AccessFSExecute
	llWrite = ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile |
		ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer
	llDev = ll.AccessFSIoctlDev
	// llFile are the rights Landlock takes on a file rule.
	llFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// No device files are made in a sandbox (MAKE_CHAR and MAKE_BLOCK are
// handled and never granted): root could otherwise make one for a disk
// and read it whole.

func (a access) landlock() uint64 {
	var r uint64
	if a&accRead != 0 {
		r |= llRead
	}
	if a&accExec != 0 {
		r |= llExec
	}
	if a&accWrite != 0 {
		r |= llWrite
	}
	if a&accDev != 0 {
		r |= llDev
	}
	if a&accList != 0 {
		r |= ll.AccessFSReadDir
	}
	return r
}

// enclose applies the policy to cmd: the ruleset goes to the child as
// rulesetFD and the child runs through the trampoline. release closes
// this process's copy of the ruleset once the child has started. With
// nothing to apply (auto on a system without Landlock) cmd is left as
// it is.
func enclose(level SandboxLevel, p policy, cmd *exec.Cmd) (rep SandboxReport, release func(), err error) {
	release = func() {}
	hideSelf()
	abi := landlockABI()
	rep.Missing, rep.Left = missingAt(abi), p.left
	if level == SandboxRequired && abi < fullABI {
		return rep, release, fmt.Errorf("%w: %s", ErrNoSandbox, strings.Join(rep.Missing, "; "))
	}
	if abi == 0 {
		return rep, release, nil
	}
	rs, err := ruleset(p, abi)
	if err != nil {
		return rep, release, err
	}
	rep.Kind, rep.ABI = "landlock", abi
	cmd.Env = append(cmd.Env, trampolineVar+"="+cmd.Path)
	cmd.Path = "/proc/self/exe"
	cmd.ExtraFiles = []*os.File{rs}
	return rep, func() { rs.Close() }, nil
}

// ruleset builds the Landlock ruleset of the policy for ABI abi. Each
// path is opened with O_PATH|O_NOFOLLOW, checked, added and closed in
// turn: the rule is on what was checked (a path swapped for a link in
// between cannot redirect it), and a process short of descriptors (a
// daemon at its limit) needs two at a time, not one per rule.
func ruleset(p policy, abi int) (*os.File, error) {
	handled := abiRights(abi)
	attr := ll.RulesetAttr{HandledAccessFS: handled}
	if abi >= 6 {
		attr.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	rs, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return nil, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	f := os.NewFile(uintptr(rs), "landlock-ruleset")
	for _, g := range p.laidOut() {
		if err := addRule(rs, g, handled); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// addRule adds g to the ruleset rs; a path gone since it was planned, or
// become a link, is left out: nothing of it is granted.
func addRule(rs int, g grant, handled uint64) error {
	fd, err := unix.Open(g.path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock rule for %s: %w", g.path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule for %s: %w", g.path, err)
	}
	rights := g.acc.landlock() & handled
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
	default:
		rights &= llFile
	}
	if rights == 0 {
		return nil
	}
	if err := ll.LandlockAddPathBeneathRule(rs, &ll.PathBeneathAttr{AllowedAccess: rights, ParentFd: fd}, 0); err != nil {
		return fmt.Errorf("landlock_add_rule for %s: %w", g.path, err)
	}
	return nil
}

var hideOnce sync.Once

// hideSelf makes this process undumpable once, before its first
// sandboxed session: its /proc entries (environ, memory, maps) then
// belong to root, and the kernel's ptrace rules keep an agent that is not
// root from reading the API keys in walkie's environment even where
// Landlock is missing. Under Landlock a sandboxed process reaches no
// other process's entries outside its domain anyway, unless it has
// CAP_SYS_PTRACE, which dropCapabilities takes from root. A failure
// leaves things as they were: it is not a reason to run no agent.
func hideSelf() {
	hideOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

// SandboxSupport says what boundary this system gives a session: the
// mechanism, its ABI and what of walkie's boundary it lacks.
func SandboxSupport() SandboxReport {
	abi := landlockABI()
	rep := SandboxReport{Missing: missingAt(abi)}
	if abi > 0 {
		rep.Kind, rep.ABI = "landlock", abi
	}
	return rep
}
