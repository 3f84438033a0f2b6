#!/usr/bin/env bash
# Installs the system tools walkie's tests drive: tmux, the real terminal
# the display tests (cmd/walkie/tmux_test.go) read the screen of, and on
# Linux rpm, which the snapshot-release test (scripts/release_test.go)
# reads the .rpm with (dpkg-deb, for the .deb, comes with Debian). From
# Debian's packages, or Homebrew's on macOS. Does nothing when they are
# already there. Without them those tests skip and say why, and fail when
# CI is set.
set -euo pipefail

# tool:package pairs.
want=(tmux:tmux)
[[ "$(uname -s)" == Linux ]] && want+=(rpm:rpm)

missing=()
for pair in "${want[@]}"; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	if command -v brew >/dev/null 2>&1; then
		echo "install-tools: installing ${missing[*]} from Homebrew" >&2
		brew install "${missing[@]}" >&2
		exit 0
	fi
	echo "install-tools: ${missing[*]} missing and no apt-get or brew here: install them with your package manager" >&2
	exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "install-tools: ${missing[*]} missing; run as root or install sudo" >&2; exit 1; }
	sudo="sudo"
fi
echo "install-tools: installing ${missing[*]} from Debian's packages" >&2
$sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2 ||
	{ $sudo apt-get update >&2 && $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2; }
