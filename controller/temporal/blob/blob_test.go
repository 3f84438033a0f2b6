package blob

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ctx = context.Background()

// Both stores keep what is put, name it by its hash, and give it back;
// two opens of one directory are one store.
func TestStoresRoundTrip(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(d, "s3cret"))
	defer srv.Close()
	remote, err := NewRemote(srv.URL, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	again, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("a record line\n"), 400_000) // 5.6 MB
	for name, s := range map[string]Store{"dir": d, "remote": remote} {
		t.Run(name, func(t *testing.T) {
			ref, err := PutBytes(ctx, s, data)
			if err != nil {
				t.Fatal(err)
			}
			if ref != Sum(data) {
				t.Fatalf("put named it %s, want %s", ref, Sum(data))
			}
			got, err := GetBytes(ctx, s, ref, int64(len(data)))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes back (%v), want %d", len(got), err, len(data))
			}
			if _, err := GetBytes(ctx, s, ref, int64(len(data))-1); err == nil {
				t.Fatal("a blob over the caller's limit was read")
			}
			path := filepath.Join(t.TempDir(), "out")
			if err := GetFile(ctx, s, ref, path); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, data) {
				t.Fatal("GetFile wrote other bytes")
			}
			missing := Sum([]byte("never put"))
			if _, err := s.Open(ctx, missing); !errors.Is(err, ErrNotFound) {
				t.Fatalf("a missing blob: %v, want ErrNotFound", err)
			}
		})
	}
	ids := map[string]bool{}
	for _, s := range []Store{d, remote, again} {
		id, err := s.ID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	if len(ids) != 1 {
		t.Fatalf("one store, ids %v", ids)
	}
	other, _ := OpenDir(t.TempDir())
	if id, _ := other.ID(ctx); ids[id] {
		t.Fatal("another store has the same id")
	}
}

// A blob whose bytes changed in the store is refused as it is read, over
// either store; so is a name that is not a sha256 (no path is built from
// it).
func TestCorruptBlobIsRefused(t *testing.T) {
	d, _ := OpenDir(t.TempDir())
	ref, err := PutBytes(ctx, d, []byte("the agent's version"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.path(ref.SHA256), []byte("the agent's versioN"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(d, ""))
	defer srv.Close()
	remote, _ := NewRemote(srv.URL, "")
	for _, s := range []Store{d, remote} {
		if _, err := GetBytes(ctx, s, ref, 100); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("%s: a corrupt blob read as %v", s.Where(), err)
		}
	}
	for _, bad := range []string{"../../id", strings.Repeat("A", 64), "abc"} {
		if _, err := d.Open(ctx, Ref{SHA256: bad}); err == nil {
			t.Fatalf("%q opened", bad)
		}
	}
}

// The HTTP store needs its token when it has one, and says how to give it.
func TestRemoteNeedsItsToken(t *testing.T) {
	d, _ := OpenDir(t.TempDir())
	srv := httptest.NewServer(Handler(d, "s3cret"))
	defer srv.Close()
	for _, token := range []string{"", "wrong"} {
		s, _ := NewRemote(srv.URL, token)
		if _, err := s.ID(ctx); err == nil || !strings.Contains(err.Error(), "--blob-token") {
			t.Fatalf("token %q: %v, want refused naming --blob-token", token, err)
		}
		if _, err := PutBytes(ctx, s, []byte("x")); err == nil {
			t.Fatalf("token %q: a put was taken", token)
		}
	}
	for _, spec := range []string{"http://", "ftp://host/x"} {
		if _, err := Open(spec, ""); err == nil {
			t.Fatalf("--blobs %q opened", spec)
		}
	}
}

// Prune removes what was not used for longer than it keeps, and leaves
// the id and what is in use.
func TestPruneKeepsWhatIsInUse(t *testing.T) {
	d, _ := OpenDir(t.TempDir())
	old, _ := PutBytes(ctx, d, []byte("old"))
	used, _ := PutBytes(ctx, d, []byte("used"))
	long := time.Now().Add(-48 * time.Hour)
	for _, r := range []Ref{old, used} {
		if err := os.Chtimes(d.path(r.SHA256), long, long); err != nil {
			t.Fatal(err)
		}
	}
	rc, err := d.Open(ctx, used) // a read is a use
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	n, err := d.Prune(24 * time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("pruned %d (%v), want the one unused blob", n, err)
	}
	if _, err := d.Open(ctx, old); !errors.Is(err, ErrNotFound) {
		t.Fatal("the unused blob stays")
	}
	if _, err := GetBytes(ctx, d, used, 10); err != nil {
		t.Fatalf("the used blob went: %v", err)
	}
	if _, err := d.ID(ctx); err != nil {
		t.Fatalf("prune took the id: %v", err)
	}
}
