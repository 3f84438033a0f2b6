package briefing

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DistilledRoot is where a debate's distillations keep their files: the
// chat as the distilling agent read it, what it wrote, and the session
// transcripts, which quote the chat. The peers must never see the chat, so
// it is a private folder in the user's cache, outside the debate's folder
// where every turn's session works, and it is removed when the briefing is
// approved (RemoveDistilled), before any turn runs. stateDir is the
// debate's .walkie/ID; the folder is named after it and a hash of its
// absolute path, so two debates never share one.
func DistilledRoot(stateDir string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no user cache directory to keep the chat out of the debate's folder (set XDG_CACHE_HOME or HOME): %w", err)
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(cache, "walkie", "distill", filepath.Base(abs)+"-"+hex.EncodeToString(sum[:8])), nil
}

// RemoveDistilled removes the debate's distillation files (DistilledRoot):
// once the briefing is approved, turns run, and nothing of the chat may be
// left for them to find. No folder is not an error.
func RemoveDistilled(stateDir string) error {
	root, err := DistilledRoot(stateDir)
	if err != nil {
		// Nothing can have been kept there either.
		return nil
	}
	if err := os.RemoveAll(root); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the distilled chat %s: %w", root, err)
	}
	return nil
}
