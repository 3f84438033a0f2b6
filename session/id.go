package session

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
)

// SessionVar is the environment variable that carries a session's id into
// every process it starts.
const SessionVar = "WALKIE_SESSION"

// NewID returns a fresh session id: 16 random hex digits.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// validID: an id becomes part of a file name and is matched in other
// processes' environments, so it must be plain.
func validID(id string) bool { return idRE.MatchString(id) }
