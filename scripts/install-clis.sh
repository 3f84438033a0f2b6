#!/usr/bin/env bash
# Installs the real agent CLIs that walkie's integration tests drive (and
# the GitHub Action's reviews run), at the exact versions scripts/versions.env
# pins, into .cache/clis/ under the repository root (git ignores /.cache/),
# or into $WALKIE_CLIS_DIR. Reuses the folder when every pinned version
# asked for is already there, so CI and repeated runs cost nothing.
#
# Usage: scripts/install-clis.sh [--force] [CLI...]
# CLI is claude, codex or gemini; none means all three.
# Prints the folder holding the binaries on the last line of stdout.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=versions.env
source "$here/versions.env"

die() {
	echo "install-clis: $*" >&2
	exit 1
}

dir=${WALKIE_CLIS_DIR:-$(cd "$here/.." && pwd)/.cache/clis}
bin="$dir/node_modules/.bin"

force=0
clis=()
for arg in "$@"; do
	case "$arg" in
	--force) force=1 ;;
	claude | codex | gemini) clis+=("$arg") ;;
	*) die "unknown argument $arg (usage: scripts/install-clis.sh [--force] [claude|codex|gemini...])" ;;
	esac
done
[[ ${#clis[@]} -gt 0 ]] || clis=(claude codex gemini)

# The npm package of each CLI, at its pin.
PKGS=()
for cli in "${clis[@]}"; do
	case "$cli" in
	claude) PKGS+=("@anthropic-ai/claude-code@${CLAUDE_VERSION}") ;;
	codex) PKGS+=("@openai/codex@${CODEX_VERSION}") ;;
	gemini) PKGS+=("@google/gemini-cli@${GEMINI_VERSION}") ;;
	esac
done
pins="claude $CLAUDE_VERSION, codex $CODEX_VERSION, gemini $GEMINI_VERSION"

command -v node >/dev/null 2>&1 || die "node is not installed; install Node.js 20 or later (it brings npm)"
command -v npm >/dev/null 2>&1 || die "npm is not installed; install Node.js 20 or later (it brings npm)"

# installed_version PKG prints the version recorded in the package's own
# package.json inside the cache, or nothing. Reading the file (rather than
# running the CLI) keeps this from writing to HOME.
installed_version() {
	local pj="$dir/node_modules/$1/package.json"
	[[ -f "$pj" ]] || return 0
	node -e 'process.stdout.write(require(process.argv[1]).version || "")' "$pj" 2>/dev/null || true
}

up_to_date() {
	local spec name want
	for spec in "${PKGS[@]}"; do
		name=${spec%@*}
		want=${spec##*@}
		[[ "$(installed_version "$name")" == "$want" ]] || return 1
	done
	for cli in "${clis[@]}"; do
		[[ -x "$bin/$cli" ]] || return 1
	done
}

if [[ $force -eq 0 ]] && up_to_date; then
	echo "install-clis: ${clis[*]} at the pinned versions already in $dir ($pins)" >&2
	echo "$bin"
	exit 0
fi

registry=$(npm config get registry 2>/dev/null || echo "https://registry.npmjs.org/")
# A cheap look-up of one pinned version tells "registry unreachable" apart
# from a failing install, and bounds the wait when the network is gone.
if ! timeout 60 npm view "${PKGS[0]}" version --fetch-retries=1 >/dev/null 2>&1; then
	die "cannot reach the npm registry $registry (npm view ${PKGS[0]} failed); check the network or npm config"
fi

mkdir -p "$dir"
# A private package.json keeps npm from walking up into the repository;
# npm install --save-exact records in it exactly what the folder holds.
[[ -f "$dir/package.json" ]] ||
	printf '{\n  "name": "walkie-clis",\n  "private": true,\n  "description": "Real agent CLIs for walkie (scripts/install-clis.sh)"\n}\n' >"$dir/package.json"

echo "install-clis: installing ${PKGS[*]} into $dir" >&2
if ! (cd "$dir" && npm install --no-audit --no-fund --save-exact --loglevel=error "${PKGS[@]}" >&2); then
	die "npm install failed (registry $registry); see the npm output above"
fi

up_to_date || die "installed, but the versions in $dir do not match the pins; run with --force"
echo "install-clis: ${clis[*]} ready in $bin ($pins)" >&2
echo "$bin"
