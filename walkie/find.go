package walkie

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FileSuffix ends every walkie file's name.
const FileSuffix = ".walkie.md"

// Find returns the walkie files at path: path itself if it is a file, else
// every *.walkie.md under it, skipping .git, node_modules and walkie's own
// .walkie state directories. The result is sorted and absolute. A
// directory named by a link is followed (the files are then named under
// the directory it leads to); links under it are not: only regular files
// are walkie files, and walkie serve applies the same rule to the files
// that appear later.
func Find(path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{abs}, nil
	}
	// WalkDir does not follow even its root: a linked directory would
	// look empty.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, err
	}
	var out []string
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == abs {
				return err
			}
			return nil // a directory vanished or is unreadable: not ours to judge
		}
		if d.IsDir() {
			if p != abs && SkipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), FileSuffix) && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// SkipDir reports whether a directory of this name is never searched for
// walkie files.
func SkipDir(name string) bool {
	return name == ".walkie" || name == ".git" || name == "node_modules"
}
