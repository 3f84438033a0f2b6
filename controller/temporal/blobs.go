package temporal

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/walkie-sh/walkie/controller/temporal/blob"
)

// The home's blob store: where what travels by reference is kept (a
// directory), how workers on other machines reach it (HTTP, when the home
// serves it), and how long it is kept.

// BlobKeep is how long the home keeps a blob no one has put or read:
// what a workflow's history names is read again when the home replays
// it, which it does only for a workflow still running, and a debate's
// workflow continues as new every few turns.
const BlobKeep = 7 * 24 * time.Hour

// DefaultBlobDir is the blob store when --blobs is not given: walkie/blobs
// under the user's state directory, which a home and the workers on its
// own machine share.
func DefaultBlobDir() string { return stateDir("blobs") }

// CheckBlobListen refuses to serve the blob store beyond loopback without
// a token: it holds every debate's records and workspaces.
func CheckBlobListen(addr, token string) error {
	if addr == "" || token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--blob-listen %q: write HOST:PORT: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--blob-listen %s is beyond loopback: set --blob-token (or WALKIE_BLOB_TOKEN), the same on the home and its workers; the store holds every debate's records and workspaces", addr)
}

// serveBlobs serves the store at BlobListen, and prunes it now and daily.
func (h *Home) serveBlobs() error {
	d := h.o.Blobs
	if d == nil {
		return nil
	}
	h.pruning = make(chan struct{})
	go h.prune(d)
	if h.o.BlobListen == "" {
		return nil
	}
	if err := CheckBlobListen(h.o.BlobListen, h.o.BlobToken); err != nil {
		return err
	}
	l, err := net.Listen("tcp", h.o.BlobListen)
	if err != nil {
		return fmt.Errorf("--blob-listen: %w", err)
	}
	h.blobSrv = &http.Server{Handler: blob.Handler(d, h.o.BlobToken), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := h.blobSrv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("the blob store stopped serving", zap.Error(err))
		}
	}()
	h.log.Info("serving the blob store", zap.String("listen", l.Addr().String()), zap.String("dir", d.Where()))
	return nil
}

func (h *Home) prune(d *blob.Dir) {
	t := time.NewTicker(24 * time.Hour)
	defer t.Stop()
	for {
		if n, err := d.Prune(BlobKeep); err != nil {
			h.log.Warn("pruning the blob store", zap.Error(err))
		} else if n > 0 {
			h.log.Info("pruned the blob store", zap.Int("blobs", n), zap.Duration("unused_for", BlobKeep))
		}
		select {
		case <-h.pruning:
			return
		case <-t.C:
		}
	}
}
