package scripts

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// The README's install lines, each exercised by the test named beside it.
// TestReadmeInstallLines holds the README to exactly these, so a line
// cannot be added, or drift, without a test that runs it.
var readmeInstallLines = []struct {
	line *regexp.Regexp
	test string
}{
	{regexp.MustCompile(`^curl -fsSL https://raw\.githubusercontent\.com/walkie-sh/walkie/main/scripts/install\.sh \| sh\b`), "TestInstallScript"},
	{regexp.MustCompile(`^brew install --cask walkie-sh/tap/walkie\b`), "TestSnapshotReleaseCask"},
	{regexp.MustCompile(`^sudo apt install \./walkie_VERSION_ARCH\.deb\b`), "TestSnapshotReleasePackages"},
	{regexp.MustCompile(`^sudo dnf install \./walkie-VERSION-1\.ARCH\.rpm\b`), "TestSnapshotReleasePackages"},
	{regexp.MustCompile(`^go install github\.com/walkie-sh/walkie/cmd/walkie@latest\b`), "TestGoInstall"},
	{regexp.MustCompile(`^make install\b`), "TestMakeInstall"},
}

// readmeInstall is the README's first code block, under "## Install":
// its lines, comments and blank lines left out.
func readmeInstall(t *testing.T) []string {
	t.Helper()
	readme := readText(t, filepath.Join(repoRoot, "README.md"))
	at := strings.Index(readme, "\n## Install\n")
	if at < 0 {
		t.Fatal("README.md has no ## Install section")
	}
	if first := strings.Index(readme, "\n## "); first != at {
		t.Errorf("## Install is not the README's first section")
	}
	block := readme[at:]
	start := strings.Index(block, "```sh\n")
	if start < 0 {
		t.Fatal("## Install has no ```sh block")
	}
	block = block[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

func TestReadmeInstallLines(t *testing.T) {
	lines := readmeInstall(t)
	matched := make([]bool, len(readmeInstallLines))
	for _, l := range lines {
		n := 0
		for i, w := range readmeInstallLines {
			if w.line.MatchString(l) {
				matched[i] = true
				n++
			}
		}
		if n != 1 {
			t.Errorf("README install line %q is exercised by no test (add it to readmeInstallLines with the test that runs it)", l)
		}
	}
	for i, w := range readmeInstallLines {
		if !matched[i] {
			t.Errorf("the README has no install line like %s (%s exercises it)", w.line, w.test)
		}
	}
}

// readmeLine is the README's install line that the pattern of test
// matches.
func readmeLine(t *testing.T, test string) string {
	t.Helper()
	for _, l := range readmeInstall(t) {
		for _, w := range readmeInstallLines {
			if w.test == test && w.line.MatchString(l) {
				return strings.TrimSpace(strings.SplitN(l, "  #", 2)[0])
			}
		}
	}
	t.Fatalf("the README has no install line for %s", test)
	return ""
}

// releaseServer serves the snapshot as GitHub serves a release, at
// /releases/download/TAG/FILE and /releases/latest/download/FILE, and the
// raw install.sh at /raw/walkie-sh/walkie/main/scripts/install.sh. Under
// /tampered/ the archive has one byte changed; under /unlisted/
// checksums.txt does not name it.
func releaseServer(t *testing.T, s *snapshot) *httptest.Server {
	t.Helper()
	archive, err := os.ReadFile(filepath.Join(s.dist, archiveName()))
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(archive)
	tampered[len(tampered)/2] ^= 0xff
	sums := readText(t, filepath.Join(s.dist, "checksums.txt"))
	var unlisted strings.Builder
	for _, l := range strings.SplitAfter(sums, "\n") {
		if !strings.HasSuffix(strings.TrimSpace(l), archiveName()) {
			unlisted.WriteString(l)
		}
	}
	mux := http.NewServeMux()
	files := http.FileServer(http.Dir(s.dist))
	for _, prefix := range []string{"/releases/download/" + s.tag + "/", "/releases/latest/download/"} {
		mux.Handle(prefix, http.StripPrefix(prefix, files))
	}
	mux.HandleFunc("/raw/walkie-sh/walkie/main/scripts/install.sh", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, "install.sh")
	})
	mux.HandleFunc("/tampered/latest/download/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/"+archiveName()) {
			w.Write(tampered)
			return
		}
		http.StripPrefix("/tampered/latest/download/", files).ServeHTTP(w, r)
	})
	mux.HandleFunc("/unlisted/latest/download/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/checksums.txt") {
			w.Write([]byte(unlisted.String()))
			return
		}
		http.StripPrefix("/unlisted/latest/download/", files).ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// scriptEnv is an environment for install.sh with HOME in a folder of the
// test's own, so its default ~/.local/bin is too.
func scriptEnv(home string, extra ...string) []string {
	env := withoutEnv(os.Environ(), "HOME", "WALKIE_VERSION", "WALKIE_INSTALL_DIR", "WALKIE_RELEASES_URL")
	return append(append(env, "HOME="+home), extra...)
}

// The README's curl | sh line, as a user pastes it, but with the server
// standing in for GitHub: it installs both binaries of the latest release
// into ~/.local/bin, and they run. A named version installs that release,
// and a download that does not match checksums.txt installs nothing.
func TestInstallScript(t *testing.T) {
	s := sharedSnapshot(t)
	srv := releaseServer(t, s)
	need(t, "curl", "the README's line pipes curl into sh")
	wantVersion := versionText(s)

	t.Run("the README's line", func(t *testing.T) {
		home := t.TempDir()
		line := strings.Replace(readmeLine(t, "TestInstallScript"), "https://raw.githubusercontent.com/", srv.URL+"/raw/", 1)
		cmd := exec.Command("sh", "-c", line)
		cmd.Env = scriptEnv(home, "WALKIE_RELEASES_URL="+srv.URL+"/releases")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		for _, bin := range []string{"walkie", "walkie-temporal"} {
			if got := runVersion(t, filepath.Join(home, ".local/bin", bin)); got != wantVersion {
				t.Errorf("installed %s --version:\n%s\nwant\n%s", bin, got, wantVersion)
			}
		}
	})

	cases := []struct {
		name    string
		args    []string
		url     string
		wantErr string
	}{
		{name: "a named release", args: []string{"--version", s.tag}, url: "/releases"},
		{name: "a download that does not match its checksum", url: "/tampered", wantErr: "does not match checksums.txt"},
		{name: "an archive checksums.txt does not name", url: "/unlisted", wantErr: "lists no " + archiveName()},
		{name: "a release that does not exist", args: []string{"--version", "v9.9.9"}, url: "/releases", wantErr: "cannot download"},
		{name: "not a version", args: []string{"--version", "main"}, url: "/releases", wantErr: "give a release tag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bin")
			// What was installed before stays as it was when nothing is
			// installed.
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "walkie"), []byte("the walkie installed before"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", append([]string{"install.sh", "--dir", dir, "--url", srv.URL + c.url}, c.args...)...)
			cmd.Env = scriptEnv(t.TempDir())
			out, err := cmd.CombinedOutput()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("install.sh: %v\n%s", err, out)
				}
				if got := runVersion(t, filepath.Join(dir, "walkie")); got != wantVersion {
					t.Errorf("installed walkie --version:\n%s\nwant\n%s", got, wantVersion)
				}
				return
			}
			if err == nil || !strings.Contains(string(out), c.wantErr) {
				t.Fatalf("install.sh: %v, want an error saying %q\n%s", err, c.wantErr, out)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || readText(t, filepath.Join(dir, "walkie")) != "the walkie installed before" {
				t.Errorf("a failed install changed %s: %v", dir, entries)
			}
		})
	}
}

// The README's go install line, run as is against a module proxy of the
// test's own (GOPROXY=file://…) holding this tree as the module's release
// versions.env names, the dependencies coming from the local module cache
// (or, for one it lacks, the machine's own proxy):
// the module builds as a go install of a tagged release does, with no
// VCS information and no linker flags, and says its version. A go.mod
// with a replace directive, which go install refuses, fails it.
func TestGoInstall(t *testing.T) {
	tr := sharedTree(t)
	version := pins(t)["WALKIE_VERSION"]
	line := readmeLine(t, "TestGoInstall")
	gomodcache := strings.TrimSpace(run(t, "go", "env", "GOMODCACHE"))
	// After the module cache, the proxies this machine uses, for a
	// dependency the cache lacks; go.sum checks what they serve.
	goproxy := strings.TrimSpace(run(t, "go", "env", "GOPROXY"))

	install := func(t *testing.T, gomod []byte) (string, error) {
		proxy := t.TempDir()
		writeModule(t, proxy, tr, version, gomod)
		tmp := t.TempDir()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = tmp
		// -trimpath and CGO_ENABLED=0 as the release builds: the packages
		// GoReleaser compiled are found in the build cache, whatever
		// folder this module cache is in. GOFLAGS=-modcacherw lets the
		// test remove it.
		cmd.Env = append(withoutEnv(os.Environ(), "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOFLAGS", "GOMODCACHE", "GOBIN", "GOTOOLCHAIN", "CGO_ENABLED"),
			"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(gomodcache, "cache/download"))+","+goproxy,
			"GOSUMDB=off", "GOFLAGS=-modcacherw -trimpath", "CGO_ENABLED=0", "GOTOOLCHAIN=local",
			"GOMODCACHE="+filepath.Join(tmp, "mod"), "GOBIN="+filepath.Join(tmp, "bin"))
		out, err := cmd.CombinedOutput()
		return filepath.Join(tmp, "bin", "walkie"), wrapOut(err, out)
	}

	gomod, err := os.ReadFile(filepath.Join(tr.dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := install(t, gomod)
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	out := run(t, bin, "--version")
	if !strings.HasPrefix(out, "walkie "+version+"\ncommit unknown") {
		t.Errorf("the go-installed walkie --version:\n%s", out)
	}

	replaced := append(bytes.Clone(gomod), "\nreplace gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.0\n"...)
	if _, err := install(t, replaced); err == nil || !strings.Contains(err.Error(), "replace") {
		t.Errorf("a go.mod with a replace directive installed: %v", err)
	}
}

type outError struct {
	err error
	out []byte
}

func (e *outError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func wrapOut(err error, out []byte) error {
	if err == nil {
		return nil
	}
	return &outError{err, out}
}

// writeModule writes the tree's committed files as VERSION of its module
// into a GOPROXY folder, with gomod as its go.mod.
func writeModule(t *testing.T, proxy string, tr *tree, version string, gomod []byte) {
	t.Helper()
	dir := filepath.Join(proxy, "github.com/walkie-sh/walkie/@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := module.Version{Path: "github.com/walkie-sh/walkie", Version: version}
	var whole bytes.Buffer
	if err := modzip.CreateFromVCS(&whole, m, tr.dir, "HEAD", ""); err != nil {
		t.Fatalf("module zip of the tree: %v", err)
	}
	// The same zip, but for go.mod.
	zr, err := zip.NewReader(bytes.NewReader(whole.Bytes()), int64(whole.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := zip.NewWriter(&z)
	for _, f := range zr.File {
		w, err := zw.Create(f.Name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name == m.Path+"@"+version+"/go.mod" {
			_, err = w.Write(gomod)
		} else {
			err = copyZipFile(w, f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": []byte(`{"Version":"` + version + `","Time":"2026-01-02T03:04:05Z"}`),
		version + ".mod":  gomod,
		version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func copyZipFile(w io.Writer, f *zip.File) error {
	r, err := f.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

// The README's make install line, run as is in this working tree with
// GOBIN in a folder of the test's own: both binaries land there, run, and
// say the same version (walkie hands commands to walkie-temporal only at
// its own version).
func TestMakeInstall(t *testing.T) {
	need(t, "make", "the README's line runs make")
	line := readmeLine(t, "TestMakeInstall")
	gobin := t.TempDir()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = repoRoot
	cmd.Env = append(withoutEnv(os.Environ(), "GOBIN", "MAKEFLAGS"), "GOBIN="+gobin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	a := run(t, filepath.Join(gobin, "walkie"), "--version")
	b := run(t, filepath.Join(gobin, "walkie-temporal"), "--version")
	if first(a) != first(b) || !strings.HasPrefix(a, "walkie ") {
		t.Errorf("walkie --version %q, walkie-temporal --version %q", a, b)
	}
}

func first(s string) string { return strings.SplitN(s, "\n", 2)[0] }
