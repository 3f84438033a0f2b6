#!/usr/bin/env bash
# Installs the real agent CLIs that walkie's integration tests drive, at
# pinned exact versions, into .cache/clis/ under the repository root (git
# ignores /.cache/). Reuses the cache when every pinned version is already
# there, so CI and repeated runs cost nothing.
#
# Usage: scripts/install-clis.sh [--force]
# Prints the folder holding the binaries on the last line of stdout.
set -euo pipefail

CLAUDE_VERSION=2.1.197
CODEX_VERSION=0.171.0
GEMINI_VERSION=0.61.0

PKGS=(
	"@anthropic-ai/claude-code@${CLAUDE_VERSION}"
	"@openai/codex@${CODEX_VERSION}"
	"@google/gemini-cli@${GEMINI_VERSION}"
)

die() {
	echo "install-clis: $*" >&2
	exit 1
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir="$root/.cache/clis"
bin="$dir/node_modules/.bin"

force=0
if [[ "${1:-}" == "--force" ]]; then
	force=1
elif [[ $# -gt 0 ]]; then
	die "unknown argument $1 (usage: scripts/install-clis.sh [--force])"
fi

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
	[[ -x "$bin/claude" && -x "$bin/codex" && -x "$bin/gemini" ]]
}

if [[ $force -eq 0 ]] && up_to_date; then
	echo "install-clis: pinned versions already in $dir (claude $CLAUDE_VERSION, codex $CODEX_VERSION, gemini $GEMINI_VERSION)" >&2
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
# A private package.json keeps npm from walking up into the repository and
# records exactly what the cache holds.
cat >"$dir/package.json" <<EOF
{
  "name": "walkie-clis",
  "private": true,
  "description": "Real agent CLIs for walkie's integration tests (scripts/install-clis.sh)",
  "dependencies": {
    "@anthropic-ai/claude-code": "$CLAUDE_VERSION",
    "@openai/codex": "$CODEX_VERSION",
    "@google/gemini-cli": "$GEMINI_VERSION"
  }
}
EOF

echo "install-clis: installing ${PKGS[*]} into $dir" >&2
if ! (cd "$dir" && npm install --no-audit --no-fund --save-exact --loglevel=error "${PKGS[@]}" >&2); then
	die "npm install failed (registry $registry); see the npm output above"
fi

up_to_date || die "installed, but the versions in $dir do not match the pins; run with --force"
echo "install-clis: claude $CLAUDE_VERSION, codex $CODEX_VERSION, gemini $GEMINI_VERSION ready in $bin" >&2
echo "$bin"
