//go:build !linux

package walkie

import "os"

// rewriteInPlace always declines here: without Linux's write leases a
// spare cannot be written while no reader holds it, so every rewrite
// makes a new file (WriteFileAtomic, ReplaceUnsynced).
func rewriteInPlace(string, []byte, os.FileMode, bool) (bool, error) { return false, nil }

// retire removes path.
func retire(path string) error { return os.Remove(path) }
