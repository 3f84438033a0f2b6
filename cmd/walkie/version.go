package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"
)

// buildVersion is what the binary knows of its own build: the module
// version (set by `go install …@vX`, "(devel)" for a build from a
// checkout), the commit and whether the tree had changes, and the Go
// version it was built with.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	Time      string `json:"commit_time,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
}

// The release build (scripts/release/goreleaser.yaml) sets these with
// -ldflags -X: a build without version control information
// (-buildvcs=false, or from a source archive) still knows its tag and
// commit. The linker can set only package-level string variables.
var (
	linkedVersion    string
	linkedCommit     string
	linkedCommitTime string
)

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(devel)", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			v.Version = info.Main.Version
		}
		v.GoVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			case "vcs.time":
				v.Time = s.Value
			}
		}
	}
	if linkedVersion != "" {
		v.Version = linkedVersion
	}
	if linkedCommit != "" {
		v.Commit, v.Modified, v.Time = linkedCommit, false, linkedCommitTime
	}
	return v
}

func printVersion(w io.Writer, exp *jsonExporter) error {
	v := readBuildVersion()
	if exp != nil {
		return exp.Write(w, v)
	}
	commit := "unknown (built without version control information)"
	if v.Commit != "" {
		commit = v.Commit
		if v.Modified {
			commit += " (with uncommitted changes)"
		}
		if v.Time != "" {
			commit += ", " + v.Time
		}
	}
	fmt.Fprintf(w, "walkie %s\ncommit %s\ngo     %s %s\n", v.Version, commit, v.GoVersion, v.Platform)
	return nil
}

func versionCommand(f *Factory, runF func(context.Context, *versionOptions) error) *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the version, commit and Go version",
		Description: `The version is the release's tag (v1.2.3) for a binary of a release
archive or package, the module's for go install
github.com/walkie-sh/walkie/cmd/walkie@v1.2.3, and "(devel)" for a build
from a checkout; the commit is the one the binary was built from (set by
the release build, else as Go records it), and the Go version the one
that built it. walkie --version and walkie -v
print the same. The skills walkie skill install writes carry this version.

EXAMPLES:
   walkie version
   walkie version --jq .commit`,
		Flags: jsonFlags(buildVersion{}),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return withCode(exitBadInput, fmt.Errorf("version takes no arguments; see `walkie version --help`"))
			}
			exp, err := exporterOf(c)
			if err != nil {
				return err
			}
			return runWith(c.Context, runF, versionRun, &versionOptions{IO: f.IO, JSON: exp})
		},
	}
}

// versionOptions are walkie version's.
type versionOptions struct {
	IO   *IOStreams
	JSON *jsonExporter
}

func versionRun(_ context.Context, o *versionOptions) error { return printVersion(o.IO.Out, o.JSON) }
