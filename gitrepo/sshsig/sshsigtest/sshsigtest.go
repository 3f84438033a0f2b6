// Package sshsigtest makes SSH keys for tests of what walkie signs and
// the merge gate verifies.
package sshsigtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

// Key is an ed25519 key made for a test, without a passphrase.
type Key struct {
	Path string // the private key's file; its public key is Path + ".pub"
	Line string // its allowed-signers line, naming the principals, ending in a newline
}

// NewKey makes a key whose allowed-signers line names principals
// (comma separated). A missing ssh-keygen skips the test, and fails it
// in CI.
func NewKey(t testing.TB, principals string) Key {
	t.Helper()
	sessiontest.Tool(t, "ssh-keygen")
	path := filepath.Join(t.TempDir(), "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principals, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(path + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	return Key{Path: path, Line: principals + " " + f[0] + " " + f[1] + "\n"}
}
