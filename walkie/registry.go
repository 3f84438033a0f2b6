package walkie

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The registry is where every controller on this machine notes the debates
// it runs (walkie auto, turn, watch --once), so that walkie serve's fleet
// page shows them although they are not under its directory. It is one
// small JSON file per debate, named by the debate's key, in the user's
// state directory; it holds where the debate is, not what it says.

// Registered is one debate in the registry.
type Registered struct {
	File string `json:"file"` // absolute
	ID   string `json:"id"`
	// PID ran the debate last, started at Started; by is the form
	// ("walkie auto", "walkie watch"), for the page to say who runs it.
	PID     int       `json:"pid"`
	By      string    `json:"by,omitempty"`
	Started time.Time `json:"started"`
}

// UserStateDir is where walkie keeps what is neither configuration nor
// cache: $XDG_STATE_HOME/walkie, else ~/.local/state/walkie; on macOS
// ~/Library/Application Support/walkie (the Go library has no
// os.UserStateDir).
func UserStateDir() (string, error) {
	if runtime.GOOS == "darwin" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, "Library", "Application Support", "walkie"), nil
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "walkie"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "walkie"), nil
}

// DefaultRegistry is the registry's directory: debates/ in UserStateDir.
func DefaultRegistry() (string, error) {
	dir, err := UserStateDir()
	if err != nil {
		return "", fmt.Errorf("registry: %w", err)
	}
	return filepath.Join(dir, "debates"), nil
}

// Key names a debate by its file, the same for every process: the first
// 16 hex digits of the SHA-256 of its absolute path. Two debates with the
// same id in different directories get different keys.
func Key(file string) string {
	sum := sha256.Sum256([]byte(file))
	return hex.EncodeToString(sum[:8])
}

// Register notes r in the registry at dir. The directory and its files
// are the user's alone: the names of the debates are nobody else's
// business.
func Register(dir string, r Registered) error {
	if !filepath.IsAbs(r.File) {
		return fmt.Errorf("register %s: the file must be an absolute path", r.File)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("register %s: %w", r.File, err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := WriteFileAtomic(filepath.Join(dir, Key(r.File)+".json"), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("register %s: %w", r.File, err)
	}
	return nil
}

// ReadRegistry lists the debates in the registry at dir, sorted by file.
// An entry whose debate file is gone is removed; one that cannot be read
// is skipped (a writer's temporary file, another program's litter). A
// missing registry is empty.
func ReadRegistry(dir string) ([]Registered, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var out []Registered
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		r, ok := readRegistered(filepath.Join(dir, name))
		if !ok {
			continue
		}
		if _, err := os.Stat(r.File); errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Registered) int { return strings.Compare(a.File, b.File) })
	return out, nil
}

func readRegistered(path string) (Registered, bool) {
	var r Registered
	b, err := ReadSideFile(filepath.Dir(path), filepath.Base(path), MaxSideFile)
	if err != nil || json.Unmarshal(b, &r) != nil || !filepath.IsAbs(r.File) || filepath.Base(path) != Key(r.File)+".json" {
		return r, false
	}
	return r, true
}

// ReadRegistered is the registry's entry at dir for the debate at file
// (an absolute path); false when there is none that can be read.
func ReadRegistered(dir, file string) (Registered, bool) {
	r, ok := readRegistered(filepath.Join(dir, Key(file)+".json"))
	if !ok || r.File != file {
		return Registered{}, false
	}
	return r, true
}
