package blob

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The HTTP face of a home's Dir, for workers that share no filesystem with
// the home (walkie serve --blob-listen; the worker's --blobs URL):
//
//	GET /blobs/id        the store's id
//	GET /blobs/SHA256    a blob
//	PUT /blobs           store the body; answers its Ref as JSON
//
// With a token, every request must carry "Authorization: Bearer TOKEN".

// Handler serves d.
func Handler(d *Dir, token string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /blobs/id", func(w http.ResponseWriter, r *http.Request) {
		id, err := d.ID(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, id)
	})
	mux.HandleFunc("GET /blobs/{sha}", func(w http.ResponseWriter, r *http.Request) {
		ref := Ref{SHA256: r.PathValue("sha"), Size: Max}
		rc, err := d.Open(r.Context(), ref)
		switch {
		case errors.Is(err, ErrNotFound):
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer rc.Close()
		// The reader checks what it serves against the name only at its
		// end, which the client checks again: serve the file as it is.
		_, _ = io.Copy(w, rc.(*verified).r)
	})
	mux.HandleFunc("PUT /blobs", func(w http.ResponseWriter, r *http.Request) {
		ref, err := d.Put(r.Context(), http.MaxBytesReader(w, r.Body, Max))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(ref)
	})
	if token == "" {
		return mux
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "walkie blobs: a bearer token is needed (--blob-token, or WALKIE_BLOB_TOKEN)", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Remote is a home's store over HTTP.
type Remote struct {
	base   string
	token  string
	client *http.Client
}

// NewRemote is the store served at base (http://HOST:PORT).
func NewRemote(base, token string) (*Remote, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--blobs %q: write http://HOST:PORT of a home's --blob-listen, or a directory", base)
	}
	return &Remote{base: strings.TrimSuffix(base, "/"), token: token, client: &http.Client{}}, nil
}

// Where is the store's URL.
func (s *Remote) Where() string { return s.base }

func (s *Remote) do(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, body)
	if err != nil {
		return nil, err
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("blob store %s: %w", s.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		err := fmt.Errorf("blob store %s: %s %s: %s: %s", s.base, method, path, resp.Status, strings.TrimSpace(string(msg)))
		switch resp.StatusCode {
		case http.StatusNotFound:
			err = fmt.Errorf("%w: %w", err, ErrNotFound)
		case http.StatusUnauthorized:
			err = fmt.Errorf("%w: %w", err, ErrRefused)
		}
		return nil, err
	}
	return resp, nil
}

// ID asks the home for its store's id.
func (s *Remote) ID(ctx context.Context) (string, error) {
	resp, err := s.do(ctx, http.MethodGet, "/blobs/id", nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256))
	return string(b), err
}

// Put sends the blob to the home.
func (s *Remote) Put(ctx context.Context, r io.Reader) (Ref, error) {
	resp, err := s.do(ctx, http.MethodPut, "/blobs", r)
	if err != nil {
		return Ref{}, err
	}
	defer resp.Body.Close()
	var ref Ref
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&ref); err != nil || !ref.Valid() {
		return Ref{}, fmt.Errorf("blob store %s: the answer to a put is not a blob's name: %v", s.base, err)
	}
	return ref, nil
}

// Open fetches a blob from the home.
func (s *Remote) Open(ctx context.Context, ref Ref) (io.ReadCloser, error) {
	if !ref.Valid() {
		return nil, fmt.Errorf("blob %s: not a blob's name", ref)
	}
	resp, err := s.do(ctx, http.MethodGet, "/blobs/"+ref.SHA256, nil)
	if err != nil {
		return nil, err
	}
	return verify(resp.Body, ref), nil
}
