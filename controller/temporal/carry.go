package temporal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/walkie-sh/walkie/controller/temporal/blob"
)

// carrier puts what travels into Blobs and takes it out again: inline
// when small, else through the blob store both sides reach.
type carrier struct {
	store blob.Store // nil: only what fits inline travels

	mu    sync.Mutex
	hello Hello // this side's; the store's id in it once known
}

// newCarrier is a carrier over store, which names itself in its Hello. A
// store it cannot reach yet (a worker started before its home) is asked
// again when an activity needs its id; one that refuses this side's
// token is an error now.
func newCarrier(ctx context.Context, store blob.Store, build string) (*carrier, error) {
	c := &carrier{store: store, hello: Hello{Protocol: Protocol, Build: build}}
	if _, err := c.own(ctx); errors.Is(err, blob.ErrRefused) {
		return nil, err
	}
	return c, nil
}

// own is this side's Hello, with its store's id; an error when the store
// cannot be reached now.
func (c *carrier) own(ctx context.Context) (Hello, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil || c.hello.Store != "" {
		return c.hello, nil
	}
	id, err := c.store.ID(ctx)
	if err != nil {
		return c.hello, fmt.Errorf("blob store %s: %w", c.store.Where(), err)
	}
	c.hello.Store = id
	return c.hello, nil
}

// says is this side's Hello as it stands, for a result.
func (c *carrier) says() Hello {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hello
}

// noStore is the error for what is too big to travel inline without a
// store.
func noStore(n int64) error {
	return fmt.Errorf("%d bytes travel only by reference, and no blob store is set (--blobs)", n)
}

// putBytes carries b.
func (c *carrier) putBytes(ctx context.Context, b []byte) (Blob, error) {
	if len(b) <= InlineMax {
		return Blob{Data: b}, nil
	}
	if c.store == nil {
		return Blob{}, noStore(int64(len(b)))
	}
	ref, err := blob.PutBytes(ctx, c.store, b)
	if err != nil {
		return Blob{}, fmt.Errorf("blob store %s: %w", c.store.Where(), err)
	}
	return Blob{Ref: &ref}, nil
}

// putFile carries the file at path; a missing file is an empty one.
func (c *carrier) putFile(ctx context.Context, path string) (Blob, error) {
	if path == "" {
		return Blob{}, nil
	}
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return Blob{}, nil
	}
	if err != nil {
		return Blob{}, err
	}
	if fi.Size() <= InlineMax {
		b, err := os.ReadFile(path)
		if err != nil {
			return Blob{}, err
		}
		return c.putBytes(ctx, b)
	}
	if c.store == nil {
		return Blob{}, noStore(fi.Size())
	}
	ref, err := blob.PutFile(ctx, c.store, path)
	if err != nil {
		return Blob{}, fmt.Errorf("blob store %s: %w", c.store.Where(), err)
	}
	return Blob{Ref: &ref}, nil
}

// putWith carries what write writes, through a temporary file: a packed
// directory, say.
func (c *carrier) putWith(ctx context.Context, write func(io.Writer) error) (Blob, error) {
	f, err := os.CreateTemp("", "walkie-blob-")
	if err != nil {
		return Blob{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := write(f); err != nil {
		return Blob{}, err
	}
	if err := f.Close(); err != nil {
		return Blob{}, err
	}
	return c.putFile(ctx, f.Name())
}

// bytes takes b out whole, refusing more than limit bytes.
func (c *carrier) bytes(ctx context.Context, b Blob, limit int64) ([]byte, error) {
	if b.Ref == nil {
		if int64(len(b.Data)) > limit {
			return nil, fmt.Errorf("%d bytes, over the limit of %d for what it carries", len(b.Data), limit)
		}
		return b.Data, nil
	}
	if c.store == nil {
		return nil, fmt.Errorf("blob %s: %w", b.Ref, noStore(b.Ref.Size))
	}
	return blob.GetBytes(ctx, c.store, *b.Ref, limit)
}

// open reads b.
func (c *carrier) open(ctx context.Context, b Blob) (io.ReadCloser, error) {
	if b.Ref == nil {
		return io.NopCloser(bytes.NewReader(b.Data)), nil
	}
	if c.store == nil {
		return nil, fmt.Errorf("blob %s: %w", b.Ref, noStore(b.Ref.Size))
	}
	return c.store.Open(ctx, *b.Ref)
}

// writeFile takes b out into a new file at path.
func (c *carrier) writeFile(ctx context.Context, b Blob, path string, mode os.FileMode) error {
	rc, err := c.open(ctx, b)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
