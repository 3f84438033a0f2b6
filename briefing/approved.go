package briefing

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ApprovedFile is the name, in the debate's state directory (.walkie/ID),
// of the copy of the last approved briefing. It is what a later approval
// is compared with; the record itself only keeps the hash.
const ApprovedFile = "briefing.approved.md"

// ReadApproved returns the last approved briefing kept in the state
// directory dir, or nil when there is none.
func ReadApproved(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, ApprovedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read approved briefing: %w", err)
	}
	return b, nil
}

// WriteApproved keeps text as the last approved briefing. It is written to
// a temporary file and renamed, so a reader never sees half of it. An
// approval lets turns run, so the chat a distillation read is removed
// first (RemoveDistilled): the peers must never see it.
func WriteApproved(dir string, text []byte) error {
	if err := RemoveDistilled(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ApprovedFile+".*")
	if err != nil {
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(text); err != nil {
		tmp.Close()
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, ApprovedFile)); err != nil {
		return fmt.Errorf("keep approved briefing: %w", err)
	}
	return nil
}
