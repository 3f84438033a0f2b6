#!/usr/bin/env bash
# Builds GoReleaser at the version scripts/versions.env pins into
# .cache/goreleaser/<version>/ for the release workflow and the
# snapshot-release test (scripts/release_test.go). A cold build takes about
# four minutes on two cores (docs/benchmarks.md); later runs return at once.
#
# Usage: scripts/install-goreleaser.sh [--force | --check]
# Prints the path of the goreleaser binary on the last line of stdout.
# --check builds nothing: it prints the path and exits 0 when the binary is
# there, and exits 1 otherwise (the tests use it to find it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.env
source "$here/versions.env"
# shellcheck source-path=SCRIPTDIR source=go-tool.sh
source "$here/go-tool.sh"
[[ $# -le 1 ]] || go_tool_die goreleaser "one argument at most (usage: scripts/install-goreleaser.sh [--force | --check])"
go_tool goreleaser github.com/goreleaser/goreleaser/v2 "$GORELEASER_VERSION" "${1:-}"
