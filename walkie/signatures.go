package walkie

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Signatures say who stands behind an entry: the controller that stamped
// a verdict, the person who posted an ack (docs/review-threads.md, "Who
// may say approved"). They are no part of the record, whose chain anyone
// can extend, but attestations about its entries, kept beside it in
// FILE.sig (committed with it under git: commit), one JSON object a line,
// each an SSH signature of SignedMessage. Only the merge gate reads them,
// and only against an allowed-signers file it does not take from the
// record's side.

// SignaturesSuffix ends the name of a record's signatures file.
const SignaturesSuffix = ".sig"

// maxSignaturesBytes bounds a signatures file, maxSignatureBytes one
// signature: an armored SSH signature is well under a kilobyte.
const (
	maxSignaturesBytes = 4 << 20
	maxSignatureBytes  = 16 << 10
)

// SignaturesPath is where the signatures of the record in file are kept.
func SignaturesPath(file string) string { return file + SignaturesSuffix }

// Signature is one signature of one entry.
type Signature struct {
	Seq  int    `json:"seq"`
	Hash string `json:"hash"` // the entry's chain hash, as its marker has it
	// Signature is the armored SSH signature of SignedMessage.
	Signature string `json:"signature"`
}

// SignedMessage is what a signature of entry e of the record id signs:
// the entry's chain hash covers its text, its tags, its author and the
// whole record before it, so a signature never moves to another entry or
// record.
func SignedMessage(id string, e *Entry) []byte {
	return fmt.Appendf(nil, "walkie-gate v1\nrecord: %s\nseq: %d\nhash: %s\n", id, e.Marker.Seq, e.Marker.Hash)
}

// Of are the signatures of entry e.
func Of(sigs []Signature, e *Entry) []Signature {
	var out []Signature
	for _, s := range sigs {
		if s.Seq == e.Marker.Seq && s.Hash == e.Marker.Hash {
			out = append(out, s)
		}
	}
	return out
}

// ParseSignatures reads a signatures file; a line that is not a
// signature is an error naming it.
func ParseSignatures(name string, data []byte) ([]Signature, error) {
	if len(data) > maxSignaturesBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than a signatures file holds (%d)", name, len(data), maxSignaturesBytes)
	}
	var sigs []Signature
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var s Signature
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%s:%d: not a signature: %v", name, i+1, err)
		}
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, i+1, err)
		}
		sigs = append(sigs, s)
	}
	return sigs, nil
}

func (s Signature) check() error {
	switch {
	case s.Seq < 1:
		return fmt.Errorf("seq %d is no entry's", s.Seq)
	case !strings.HasPrefix(s.Hash, hashPrefix) || !isHex(strings.TrimPrefix(s.Hash, hashPrefix)) || len(s.Hash) != len(hashPrefix)+64:
		return fmt.Errorf("hash %q is not a chain hash (sha256:64 hex digits)", s.Hash)
	case len(s.Signature) > maxSignatureBytes || !strings.HasPrefix(s.Signature, "-----BEGIN SSH SIGNATURE-----"):
		return errors.New("the signature is not an armored SSH signature")
	}
	return nil
}

// ReadSignatures reads the signatures of the record in file; none when
// it has no signatures file.
func ReadSignatures(file string) ([]Signature, error) {
	path := SignaturesPath(file)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseSignatures(path, data)
}

// AppendSignature adds s to the record's signatures file, in one synced
// write.
func AppendSignature(file string, s Signature) error {
	if err := s.check(); err != nil {
		return err
	}
	line, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(SignaturesPath(file), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return s != ""
}

// SignEntry signs the recorded entry seq of the record in file with sign
// (which signs a message: package sshsig) and adds the signature to the
// record's signatures file. The record must verify: a signature vouches
// for the record up to the entry.
func SignEntry(file string, seq int, sign func(message []byte) (string, error)) error {
	d, err := Load(file)
	if err != nil {
		return err
	}
	var torn *TornTailError
	if err := d.Verify(); err != nil && !errors.As(err, &torn) {
		return fmt.Errorf("sign entry %d: %w", seq, err)
	}
	for i := range d.Entries {
		e := &d.Entries[i]
		if e.Marker.Seq != seq {
			continue
		}
		sig, err := sign(SignedMessage(d.Meta.ID, e))
		if err != nil {
			return fmt.Errorf("sign entry %d: %w", seq, err)
		}
		return AppendSignature(file, Signature{Seq: seq, Hash: e.Marker.Hash, Signature: sig})
	}
	return fmt.Errorf("sign entry %d: %s records no such entry", seq, file)
}
