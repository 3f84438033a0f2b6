#!/usr/bin/env bash
# Builds the Temporal CLI (which carries the dev server, `temporal server
# start-dev`) at a pinned version into .cache/temporal/<version>/ under the
# repository root (git ignores /.cache/). A cold build compiles the whole
# Temporal server and takes minutes on two cores; every later run finds the
# binary and returns at once, so CI and repeated `make test` cost nothing.
#
# Usage: scripts/install-temporal.sh [--force | --check]
# Prints the path of the temporal binary on the last line of stdout.
# --check builds nothing: it prints the path and exits 0 when the binary is
# there, and exits 1 otherwise (the tests use it to find the server).
set -euo pipefail

TEMPORAL_CLI_VERSION=v1.5.1

die() {
	echo "install-temporal: $*" >&2
	exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/.cache/temporal/$TEMPORAL_CLI_VERSION"
bin="$dir/temporal"

force=0
case "${1:-}" in
"") ;;
--force) force=1 ;;
--check)
	[[ -x "$bin" ]] || exit 1
	echo "$bin"
	exit 0
	;;
*) die "unknown argument $1 (usage: scripts/install-temporal.sh [--force | --check])" ;;
esac

if [[ $force -eq 0 && -x "$bin" ]]; then
	echo "install-temporal: temporal CLI $TEMPORAL_CLI_VERSION already in $dir" >&2
	echo "$bin"
	exit 0
fi

command -v "${GO:-go}" >/dev/null 2>&1 || die "go is not installed; the Temporal CLI is built from source with go install"

mkdir -p "$dir"
# Build into a scratch folder and move the finished binary in, so an
# interrupted build never leaves a half-written binary that the fast path
# above would trust.
tmp=$(mktemp -d "$dir/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "install-temporal: building github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION (a cold build takes minutes)" >&2
start=$(date +%s)
GOBIN="$tmp" GOFLAGS=-buildvcs=false "${GO:-go}" install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION" ||
	die "go install github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION failed (is the Go module proxy reachable?)"
mv -f "$tmp/temporal" "$bin"
echo "install-temporal: built in $(($(date +%s) - start))s" >&2
echo "$bin"
