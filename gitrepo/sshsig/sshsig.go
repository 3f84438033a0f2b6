// Package sshsig signs and verifies SSH signatures as git uses them
// (ssh-keygen -Y sign and -Y verify, OpenSSH 8.2 or later), in the one
// namespace walkie's merge gate uses: the controller signs the verdicts
// it stamps with its host's key, a person signs the acks they post, and
// the gate verifies both against an allowed-signers file
// (docs/review-threads.md, "Who may say approved").
package sshsig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Namespace is the signature namespace of walkie's gate: a signature
// made for anything else (a git commit, a file) never counts here.
const Namespace = "walkie-gate"

// KeyVar names the variable that gives the stamping host's key: the
// private key itself (a CI secret) or the path of its file.
const KeyVar = "WALKIE_SIGNING_KEY"

// ErrNoKeygen is returned when ssh-keygen cannot be run.
var ErrNoKeygen = errors.New("ssh-keygen is not installed (walkie signs and verifies with OpenSSH's, 8.2 or later)")

// Signer signs with one key: a private key file, or a public key whose
// private half an ssh-agent holds.
type Signer struct {
	path string // the key's file; "" when the key is held in key
	key  []byte // the private key itself, written out only to sign
}

// NewSigner is a signer for spec: a private key (its text, as a CI
// secret gives it) or the path of a key file.
func NewSigner(spec string) (*Signer, error) {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "-----BEGIN ") {
		return &Signer{key: []byte(spec + "\n")}, nil
	}
	if spec == "" {
		return nil, errors.New("no signing key given")
	}
	if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return &Signer{path: spec}, nil
}

// FromEnv is the signer WALKIE_SIGNING_KEY names, nil when it is unset.
func FromEnv() (*Signer, error) {
	spec := os.Getenv(KeyVar)
	if spec == "" {
		return nil, nil
	}
	s, err := NewSigner(spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", KeyVar, err)
	}
	return s, nil
}

// Sign signs message in the gate's namespace and returns the armored
// signature (-----BEGIN SSH SIGNATURE----- …).
func (s *Signer) Sign(ctx context.Context, message []byte) (string, error) {
	dir, err := os.MkdirTemp("", "walkie-sign-*")
	if err != nil {
		return "", err
	}
	// A key given as text is on disk only while ssh-keygen reads it.
	defer os.RemoveAll(dir)
	key := s.path
	if key == "" {
		key = filepath.Join(dir, "key")
		if err := os.WriteFile(key, s.key, 0o600); err != nil {
			return "", err
		}
	}
	out, err := keygen(ctx, message, "-Y", "sign", "-q", "-n", Namespace, "-f", key)
	if err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	if !strings.Contains(string(out), "-----BEGIN SSH SIGNATURE-----") {
		return "", fmt.Errorf("sign: ssh-keygen printed no signature")
	}
	return string(out), nil
}

// Verify checks signature of message against allowed (the text of an
// allowed-signers file, as ssh-keygen reads it) and returns the
// principals it verifies as, none when it is no good signature of theirs.
// The error is for a verification that could not be made.
func Verify(ctx context.Context, allowed []byte, signature string, message []byte) ([]string, error) {
	dir, err := os.MkdirTemp("", "walkie-verify-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	signers, sig := filepath.Join(dir, "allowed_signers"), filepath.Join(dir, "sig")
	if err := os.WriteFile(signers, allowed, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(sig, []byte(signature), 0o600); err != nil {
		return nil, err
	}
	out, err := keygen(ctx, nil, "-Y", "find-principals", "-s", sig, "-f", signers)
	if err != nil {
		if errors.Is(err, ErrNoKeygen) || ctx.Err() != nil {
			return nil, err
		}
		return nil, nil // no allowed signer's key made it
	}
	var good []string
	for _, p := range strings.Fields(string(out)) {
		// The key is theirs; the namespace, the validity dates and the
		// message are what -Y verify checks.
		if _, err := keygen(ctx, message, "-Y", "verify", "-q", "-f", signers, "-I", p, "-n", Namespace, "-s", sig); err == nil {
			good = append(good, p)
		} else if errors.Is(err, ErrNoKeygen) || ctx.Err() != nil {
			return nil, err
		}
	}
	return good, nil
}

// keygen runs ssh-keygen with input on its standard input, in a session
// of its own (no terminal to ask a passphrase on) with only what it needs
// of walkie's environment.
func keygen(ctx context.Context, input []byte, args ...string) ([]byte, error) {
	path, err := exec.LookPath("ssh-keygen")
	if err != nil {
		return nil, ErrNoKeygen
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "SSH_ASKPASS_REQUIRE=never"}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		cmd.Env = append(cmd.Env, "SSH_AUTH_SOCK="+sock) // a key an agent holds
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		return stdout.Bytes(), fmt.Errorf("ssh-keygen %s: %w: %s", args[1], err, msg)
	}
	return stdout.Bytes(), nil
}
