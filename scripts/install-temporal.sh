#!/usr/bin/env bash
# Builds the Temporal CLI (which carries the dev server, `temporal server
# start-dev`) at the version scripts/versions.env pins into
# .cache/temporal/<version>/ for the scale-out tests. A cold build compiles
# the whole Temporal server and takes minutes; later runs return at once.
#
# Usage: scripts/install-temporal.sh [--force | --check]
# Prints the path of the temporal binary on the last line of stdout.
# --check builds nothing: it prints the path and exits 0 when the binary is
# there, and exits 1 otherwise (the tests use it to find the server).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.env
source "$here/versions.env"
# shellcheck source-path=SCRIPTDIR source=go-tool.sh
source "$here/go-tool.sh"
[[ $# -le 1 ]] || go_tool_die temporal "one argument at most (usage: scripts/install-temporal.sh [--force | --check])"
go_tool temporal github.com/temporalio/cli/cmd/temporal "$TEMPORAL_CLI_VERSION" "${1:-}"
