package blackbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/walkie-sh/walkie/session/sessiontest"
)

var (
	sourcesOnce sync.Once
	sourcesErr  error
)

// ReadSources reads every Go source file of the module, once per test
// binary, from within a test. go test caches a package's result by its
// test binary and the files its tests opened (not TestMain's, before
// m.Run); the binaries a suite builds in TestMain are neither, so without
// this a change to the controller would be answered from the cache.
func ReadSources(t testing.TB) {
	t.Helper()
	root := sessiontest.Root(t)
	sourcesOnce.Do(func() { sourcesErr = readTree(root) })
	if sourcesErr != nil {
		t.Fatal(sourcesErr)
	}
}

func readTree(root string) error {
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if e.IsDir() && path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if !e.IsDir() && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") && !strings.HasSuffix(name, "_test.go") {
			_, err = os.ReadFile(path)
		}
		return err
	})
}
