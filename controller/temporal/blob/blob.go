// Package blob is a content-addressed store of the files a Temporal home
// and its workers hand each other by reference rather than inside an
// activity's payload, which Temporal caps at 2 MiB: a large record, the
// agent's version of it, transcripts, a round table's workspace and
// sandboxes. A blob is named by the sha256 of its bytes, so what a
// reference names cannot change, and every read checks it.
//
// Two stores: Dir, a directory (the home's own, or one every machine
// mounts), and Remote, the home's Dir served over HTTP (Handler) to
// workers that share no filesystem with it.
package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"regexp"
	"strings"
)

// Max bounds one blob: no record, transcript or workspace walkie ships
// between machines is larger (docs/scale-out.md, "What travels").
const Max = 1 << 30

// Ref names a stored blob.
type Ref struct {
	SHA256 string
	Size   int64
}

// Store keeps blobs.
type Store interface {
	// ID names the store: every process that reaches it reads the same,
	// so a home and a worker can tell whether they share one.
	ID(ctx context.Context) (string, error)
	// Put stores what r reads, at most Max bytes.
	Put(ctx context.Context, r io.Reader) (Ref, error)
	// Open reads a blob; the reader fails at its end when the bytes are
	// not the ones ref names.
	Open(ctx context.Context, ref Ref) (io.ReadCloser, error)
	// Where says where the store is, for messages.
	Where() string
}

// ErrNotFound: the store has no such blob.
var ErrNotFound = errors.New("no such blob")

// ErrRefused: the store refused this side's token.
var ErrRefused = errors.New("refused: the token is not the store's")

// ErrTooLarge: a blob over Max.
var ErrTooLarge = fmt.Errorf("over the limit of %d bytes for one blob", Max)

var shaRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Valid reports whether ref can name a blob: a sha256 in hex and a size
// within Max.
func (ref Ref) Valid() bool { return shaRE.MatchString(ref.SHA256) && ref.Size >= 0 && ref.Size <= Max }

func (ref Ref) String() string { return fmt.Sprintf("sha256:%s (%d bytes)", ref.SHA256, ref.Size) }

// Sum is the ref of b.
func Sum(b []byte) Ref {
	s := sha256.Sum256(b)
	return Ref{SHA256: hex.EncodeToString(s[:]), Size: int64(len(b))}
}

// verified reads a blob and fails at its end, or past its size, when its
// bytes are not the ones ref names: a store (or a wire) that corrupts a
// blob is caught, never passed on.
type verified struct {
	r    io.Reader
	c    io.Closer
	ref  Ref
	h    hash.Hash
	n    int64
	done bool
}

func verify(rc io.ReadCloser, ref Ref) io.ReadCloser {
	return &verified{r: rc, c: rc, ref: ref, h: sha256.New()}
}

func (v *verified) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.ref.Size {
		return n, fmt.Errorf("blob %s: more bytes than its size", v.ref)
	}
	if errors.Is(err, io.EOF) && !v.done {
		v.done = true
		if got := hex.EncodeToString(v.h.Sum(nil)); v.n != v.ref.Size || got != v.ref.SHA256 {
			return n, fmt.Errorf("blob %s is corrupt: its %d bytes hash to %s", v.ref, v.n, got)
		}
	}
	return n, err
}

func (v *verified) Close() error { return v.c.Close() }

// PutBytes stores b.
func PutBytes(ctx context.Context, s Store, b []byte) (Ref, error) {
	return s.Put(ctx, bytes.NewReader(b))
}

// PutFile stores the file at path.
func PutFile(ctx context.Context, s Store, path string) (Ref, error) {
	f, err := os.Open(path)
	if err != nil {
		return Ref{}, err
	}
	defer f.Close()
	return s.Put(ctx, f)
}

// GetBytes reads a blob whole, refusing one over limit bytes before
// reading it.
func GetBytes(ctx context.Context, s Store, ref Ref, limit int64) ([]byte, error) {
	if ref.Size > limit {
		return nil, fmt.Errorf("blob %s is over the limit of %d bytes for what it carries", ref, limit)
	}
	rc, err := s.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// GetFile writes a blob to a new file at path; nothing is left there on
// an error.
func GetFile(ctx context.Context, s Store, ref Ref, path string) (err error) {
	rc, err := s.Open(ctx, ref)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	_, err = io.Copy(f, rc)
	return err
}

// Open opens the store a --blobs value names: an http:// or https:// URL
// is a home's store served over HTTP (token authenticates to it), else a
// directory.
func Open(spec, token string) (Store, error) {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		return NewRemote(spec, token)
	}
	if spec == "" || strings.Contains(spec, "://") {
		return nil, fmt.Errorf("--blobs %q: name a directory, or the http(s):// URL of a home's --blob-listen", spec)
	}
	return OpenDir(spec)
}
