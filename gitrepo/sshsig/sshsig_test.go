package sshsig

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/walkie-sh/walkie/gitrepo/sshsig/sshsigtest"
)

// A signature verifies as the principals its key is listed under, and
// never for another message, another namespace's listing, or a key not
// in the file.
func TestSignVerify(t *testing.T) {
	ctx := context.Background()
	k, o := sshsigtest.NewKey(t, "ci-host,github:walkie-bot"), sshsigtest.NewKey(t, "mallory")
	key, line, other, otherLine := k.Path, k.Line, o.Path, o.Line
	s, err := NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("walkie-gate v1\nrecord: r\nseq: 4\nhash: sha256:00\n")
	sig, err := s.Sign(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(ctx, []byte("# who may sign\n"+line+otherLine), sig, msg)
	if err != nil || !slices.Equal(got, []string{"ci-host", "github:walkie-bot"}) {
		t.Fatalf("Verify = %v, %v", got, err)
	}
	for name, c := range map[string]struct {
		allowed string
		msg     []byte
	}{
		"another message":          {line, []byte("walkie-gate v1\nrecord: r\nseq: 5\n")},
		"the key not listed":       {otherLine, msg},
		"listed for another use":   {"ci-host namespaces=\"git\" " + strings.SplitN(line, " ", 2)[1], msg},
		"an empty allowed signers": {"", msg},
	} {
		if got, err := Verify(ctx, []byte(c.allowed), sig, c.msg); err != nil || len(got) != 0 {
			t.Errorf("%s: Verify = %v, %v; want no principal", name, got, err)
		}
	}
	// A key given as its text (a CI secret) signs the same.
	text, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := NewSigner(string(text))
	if err != nil {
		t.Fatal(err)
	}
	sig2, err := ts.Sign(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Verify(ctx, []byte(otherLine), sig2, msg); err != nil || !slices.Equal(got, []string{"mallory"}) {
		t.Fatalf("Verify of the text key's signature = %v, %v", got, err)
	}
	if _, err := NewSigner(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a signer of a key that is not there")
	}
}
