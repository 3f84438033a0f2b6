package scripts

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The release as a user gets it. GoReleaser makes a snapshot of this tree
// for this machine's platform (the release workflow builds all four, and
// TestReleaseConfigChecks checks the whole config); the tests below check
// its archive, checksums, packages and cask, and each of the README's
// install lines (install_test.go) installs from it.
//
// Only this platform is built: the four platforms cost 4× the build of
// this one, walkie-temporal most (docs/benchmarks.md, "Releases"), and
// what the other three would add is what `goreleaser check` and the
// cross-build of `make cross` already cover.

// repoRoot is the top of the working tree; the tests run in scripts/.
const repoRoot = ".."

// shared holds what several tests use and is built once per run: a copy
// of the tree committed to a repository of its own, and the snapshot
// built in it. TestMain removes it.
var shared struct {
	tmp      string
	treeOnce sync.Once
	tree     *tree
	treeErr  error
	snapOnce sync.Once
	snap     *snapshot
	snapErr  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.tmp != "" {
		// The Go module cache makes its files read-only.
		_ = filepath.WalkDir(shared.tmp, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				_ = os.Chmod(p, 0o755)
			}
			return nil
		})
		_ = os.RemoveAll(shared.tmp)
	}
	os.Exit(code)
}

func sharedDir(t *testing.T, name string) string {
	t.Helper()
	if shared.tmp == "" {
		d, err := os.MkdirTemp("", "walkie-release-")
		if err != nil {
			t.Fatal(err)
		}
		shared.tmp = d
	}
	return filepath.Join(shared.tmp, name)
}

// tree is the working tree's files (the tracked ones and the new ones git
// does not ignore, as they are now) committed to a git repository of its
// own whose origin is the project's: GoReleaser reads the commit and the
// remote from git, and what it builds there never lands in this tree.
type tree struct {
	dir    string
	commit string
}

func sharedTree(t *testing.T) *tree {
	t.Helper()
	shared.treeOnce.Do(func() { shared.tree, shared.treeErr = copyTree(sharedDir(t, "tree")) })
	if shared.treeErr != nil {
		t.Fatal(shared.treeErr)
	}
	return shared.tree
}

func copyTree(dst string) (*tree, error) {
	out, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if err := copyFile(filepath.Join(repoRoot, name), filepath.Join(dst, name)); err != nil {
			return nil, err
		}
	}
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"-C", dst, "-c", "user.name=walkie test", "-c", "user.email=test@walkie.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		b, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, b)
		}
		return strings.TrimSpace(string(b)), nil
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "the tree under test"},
		{"remote", "add", "origin", "https://github.com/walkie-sh/walkie.git"}} {
		if _, err := git(args...); err != nil {
			return nil, err
		}
	}
	commit, err := git("rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	return &tree{dir: dst, commit: commit}, nil
}

// copyFile copies one file of the tree; a tracked file deleted in the
// working tree is left out, as a commit of the working tree would.
func copyFile(src, dst string) error {
	fi, err := os.Lstat(src)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, fi.Mode().Perm())
}

// goreleaser is the pinned GoReleaser, built by scripts/install-goreleaser.sh
// (make test runs it). Without it the tests skip, and fail under CI.
func goreleaser(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("./install-goreleaser.sh", "--check").Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("CI is set and GoReleaser is not built: run scripts/install-goreleaser.sh (make test does)")
		}
		t.Skip("GoReleaser is not built: scripts/install-goreleaser.sh builds it (about four minutes cold)")
	}
	return strings.TrimSpace(string(out))
}

// snapshot is what `goreleaser release --snapshot` made.
type snapshot struct {
	tree      *tree
	dist      string
	version   string // as the binaries say it: v0.0.1-snapshot.abc1234
	tag       string // the release it would be: v0.0.0 for a snapshot of a tree without tags
	checksums map[string]string
	artifacts []artifact
}

type artifact struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
	Type   string `json:"type"`
}

func sharedSnapshot(t *testing.T) *snapshot {
	t.Helper()
	gr := goreleaser(t)
	tr := sharedTree(t)
	shared.snapOnce.Do(func() { shared.snap, shared.snapErr = buildSnapshot(gr, tr) })
	if shared.snapErr != nil {
		t.Fatal(shared.snapErr)
	}
	return shared.snap
}

// hostConfig is the release config with every build narrowed to this
// machine's platform; the rest is the config as it is.
func hostConfig(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	builds, _ := cfg["builds"].([]any)
	if len(builds) == 0 {
		return nil, fmt.Errorf("%s has no builds", path)
	}
	for _, b := range builds {
		build := b.(map[string]any)
		build["goos"] = []string{runtime.GOOS}
		build["goarch"] = []string{runtime.GOARCH}
	}
	return yaml.Marshal(cfg)
}

func buildSnapshot(gr string, tr *tree) (*snapshot, error) {
	cfg, err := hostConfig(filepath.Join(tr.dir, "scripts/release/goreleaser.yaml"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(tr.dir, "bin"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tr.dir, "bin/host-goreleaser.yaml"), cfg, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(gr, "release", "--snapshot", "--clean", "--config", "bin/host-goreleaser.yaml")
	cmd.Dir = tr.dir
	// No version control information in the build, as on a machine with
	// GOFLAGS=-buildvcs=false: what the binaries say of their version and
	// commit comes from the release's linker flags alone. No token: a
	// snapshot publishes nothing, and must not find a way to.
	cmd.Env = append(withoutEnv(os.Environ(), "GITHUB_TOKEN", "GH_TOKEN", "HOMEBREW_TAP_GITHUB_TOKEN", "GORELEASER_CURRENT_TAG", "GOFLAGS"),
		"GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("goreleaser release --snapshot: %w\n%s", err, out)
	}
	s := &snapshot{tree: tr, dist: filepath.Join(tr.dir, "bin/release")}
	var meta struct {
		Version string `json:"version"`
		Tag     string `json:"tag"`
		Commit  string `json:"commit"`
	}
	if err := readJSON(filepath.Join(s.dist, "metadata.json"), &meta); err != nil {
		return nil, err
	}
	if meta.Commit != tr.commit {
		return nil, fmt.Errorf("metadata.json names commit %s, the tree is at %s", meta.Commit, tr.commit)
	}
	s.version, s.tag = "v"+meta.Version, meta.Tag
	if err := readJSON(filepath.Join(s.dist, "artifacts.json"), &s.artifacts); err != nil {
		return nil, err
	}
	s.checksums, err = readChecksums(filepath.Join(s.dist, "checksums.txt"))
	return s, err
}

func withoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readChecksums reads a checksums.txt as sha256sum writes it.
func readChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || len(fields[0]) != 64 {
			return nil, fmt.Errorf("%s:%d: not \"SHA256  NAME\": %q", path, n, sc.Text())
		}
		sums[fields[1]] = fields[0]
	}
	return sums, sc.Err()
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// archiveName is the archive of this machine's platform.
func archiveName() string { return "walkie_" + runtime.GOOS + "_" + runtime.GOARCH + ".tar.gz" }

// The config as a whole is valid for the pinned GoReleaser and uses
// nothing it has deprecated; the check is able to tell.
func TestReleaseConfigChecks(t *testing.T) {
	gr := goreleaser(t)
	check := func(config string) (string, error) {
		cmd := exec.Command(gr, "check", "--config", config)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := check("scripts/release/goreleaser.yaml"); err != nil {
		t.Fatalf("goreleaser check: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile("release/goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old := bytes.Replace(cfg, []byte("formats: [tar.gz]"), []byte("format: tar.gz"), 1)
	if bytes.Equal(old, cfg) {
		t.Fatal("the archive no longer says formats: [tar.gz]; update this test")
	}
	path := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := check(path); err == nil || !strings.Contains(out, "deprecated") {
		t.Errorf("a deprecated key passed the check: %v\n%s", err, out)
	}
}

// The archive of this platform holds the two binaries and the README, the
// checksums match every file they name, and each binary runs here and
// says the snapshot's version and commit, which only the release's
// linker flags could have told it.
func TestSnapshotReleaseArchive(t *testing.T) {
	s := sharedSnapshot(t)
	archive := filepath.Join(s.dist, archiveName())
	files := untar(t, archive, t.TempDir())
	if got, want := mapKeys(files), []string{"README.md", "walkie", "walkie-temporal"}; !slices.Equal(got, want) {
		t.Errorf("%s holds %v, want %v", archiveName(), got, want)
	}
	for _, bin := range []string{"walkie", "walkie-temporal"} {
		if files[bin].Mode().Perm() != 0o755 {
			t.Errorf("%s in the archive has mode %v", bin, files[bin].Mode())
		}
	}

	// Every archive and package is in checksums.txt, with its own sum,
	// and checksums.txt names nothing else.
	var sums []string
	for _, a := range s.artifacts {
		if a.Type != "Archive" && a.Type != "Linux Package" {
			continue
		}
		sums = append(sums, a.Name)
		if got := sha256File(t, filepath.Join(s.tree.dir, a.Path)); s.checksums[a.Name] != got {
			t.Errorf("checksums.txt says %s is %q; it is %s", a.Name, s.checksums[a.Name], got)
		}
	}
	if !slices.Contains(sums, archiveName()) {
		t.Errorf("artifacts.json has no %s: %+v", archiveName(), s.artifacts)
	}
	if got := mapKeys(s.checksums); !slices.Equal(got, slices.Sorted(slices.Values(sums))) {
		t.Errorf("checksums.txt names %v, the release has %v", got, sums)
	}

	dir := filepath.Dir(files["walkie"].path)
	wantVersion := versionText(s)
	for _, bin := range []string{"walkie", "walkie-temporal"} {
		if got := runVersion(t, filepath.Join(dir, bin)); got != wantVersion {
			t.Errorf("%s --version:\n%s\nwant\n%s", bin, got, wantVersion)
		}
	}
	out, err := exec.Command(filepath.Join(dir, "walkie"), "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Version, Commit string
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Version != s.version || v.Commit != s.tree.commit {
		t.Errorf("walkie version --json: %s (%v)", out, err)
	}
}

// versionText is the first two lines walkie --version prints for a binary
// of the snapshot.
func versionText(s *snapshot) string {
	return "walkie " + s.version + "\ncommit " + s.tree.commit + ", 2026-01-02T03:04:05Z"
}

// runVersion runs BIN --version and returns its first two lines.
func runVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	lines := strings.SplitN(string(out), "\n", 3)
	if len(lines) < 2 {
		t.Fatalf("%s --version: %q", bin, out)
	}
	return lines[0] + "\n" + lines[1]
}

type tarFile struct {
	fs.FileInfo
	path string
}

// untar unpacks a .tar.gz into dir and returns its files by name.
func untar(t *testing.T, archive, dir string) map[string]tarFile {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	files := map[string]tarFile{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if !filepath.IsLocal(h.Name) || h.Typeflag != tar.TypeReg {
			t.Fatalf("%s holds %q (type %c): only plain files at the top", archive, h.Name, h.Typeflag)
		}
		p := filepath.Join(dir, h.Name)
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, h.FileInfo().Mode().Perm()); err != nil {
			t.Fatal(err)
		}
		files[h.Name] = tarFile{h.FileInfo(), p}
	}
	return files
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// The .deb holds both binaries in /usr/bin and the systemd user units
// starting /usr/bin/walkie, unchanged but for that; what it installs runs.
// (Packages are made for Linux, so this runs on Linux.)
func TestSnapshotReleasePackages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the .deb and .rpm are Linux packages; a snapshot on " + runtime.GOOS + " makes none")
	}
	s := sharedSnapshot(t)
	deb, rpm := s.linuxPackage(t, ".deb"), s.linuxPackage(t, ".rpm")
	need(t, "dpkg-deb", "the .deb is read with dpkg-deb")
	if got := strings.TrimSpace(run(t, "dpkg-deb", "--field", deb, "Package")); got != "walkie" {
		t.Errorf("Package: %q", got)
	}
	root := t.TempDir()
	run(t, "dpkg-deb", "--extract", deb, root)
	for _, f := range []string{"usr/bin/walkie", "usr/bin/walkie-temporal", "usr/lib/systemd/user/walkie.service",
		"usr/lib/systemd/user/walkie-worker.service", "usr/share/doc/walkie/README.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("the .deb installs no /%s", f)
		}
	}
	for _, unit := range []string{"walkie.service", "walkie-worker.service"} {
		packaged := readText(t, filepath.Join(root, "usr/lib/systemd/user", unit))
		if strings.Contains(packaged, "%h/go/bin") || !strings.Contains(packaged, "\nExecStart=/usr/bin/walkie ") {
			t.Errorf("the packaged %s does not start /usr/bin/walkie:\n%s", unit, packaged)
		}
		// The unit below its header is the one of scripts/, but for the
		// binary's path.
		src := readText(t, unit)
		want := strings.Replace(src[strings.Index(src, "[Unit]\n"):], "ExecStart=%h/go/bin/walkie ", "ExecStart=/usr/bin/walkie ", 1)
		if got := packaged[strings.Index(packaged, "[Unit]\n"):]; got != want {
			t.Errorf("the packaged %s differs from scripts/%s beyond ExecStart:\n%s", unit, unit, got)
		}
	}
	wantVersion := versionText(s)
	for _, bin := range []string{"walkie", "walkie-temporal"} {
		if got := runVersion(t, filepath.Join(root, "usr/bin", bin)); got != wantVersion {
			t.Errorf("/usr/bin/%s --version from the .deb:\n%s\nwant\n%s", bin, got, wantVersion)
		}
	}

	need(t, "rpm", "the .rpm is read with rpm (scripts/install-tools.sh installs it)")
	list := run(t, "rpm", "-qlp", rpm)
	for _, f := range []string{"/usr/bin/walkie", "/usr/bin/walkie-temporal", "/usr/lib/systemd/user/walkie.service", "/usr/lib/systemd/user/walkie-worker.service"} {
		if !slices.Contains(strings.Split(list, "\n"), f) {
			t.Errorf("the .rpm installs no %s:\n%s", f, list)
		}
	}
}

// linuxPackage is the path of this platform's package with the extension.
func (s *snapshot) linuxPackage(t *testing.T, ext string) string {
	t.Helper()
	for _, a := range s.artifacts {
		if a.Type == "Linux Package" && a.Goarch == runtime.GOARCH && strings.HasSuffix(a.Name, ext) {
			return filepath.Join(s.tree.dir, a.Path)
		}
	}
	t.Fatalf("the snapshot made no %s for %s: %+v", ext, runtime.GOARCH, s.artifacts)
	return ""
}

// need skips a test when a tool it reads with is missing, and fails it
// under CI.
func need(t *testing.T, tool, why string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and %s is not installed: %s", tool, why)
		}
		t.Skipf("%s is not installed: %s", tool, why)
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Homebrew cask installs both binaries from this platform's archive of
// the release, at the checksum the release publishes.
func TestSnapshotReleaseCask(t *testing.T) {
	s := sharedSnapshot(t)
	cask := readText(t, filepath.Join(s.dist, "homebrew/Casks/walkie.rb"))
	url := "https://github.com/walkie-sh/walkie/releases/download/" + s.tag + "/" + archiveName()
	for _, want := range []string{`cask "walkie" do`, `version "` + strings.TrimPrefix(s.version, "v") + `"`,
		`binary "walkie"`, `binary "walkie-temporal"`, `url "` + url + `"`, `com.apple.quarantine`} {
		if !strings.Contains(cask, want) {
			t.Errorf("the cask has no %s:\n%s", want, cask)
		}
	}
	// The sha256 of the stanza that downloads this archive.
	at := strings.Index(cask, `url "`+url+`"`)
	if at < 0 {
		return
	}
	stanza := cask[at:]
	if end := strings.Index(stanza, "end"); end > 0 {
		stanza = stanza[:end]
	}
	if want := `sha256 "` + s.checksums[archiveName()] + `"`; !strings.Contains(stanza, want) {
		t.Errorf("the cask's %s stanza has no %s:\n%s", archiveName(), want, stanza)
	}
}
