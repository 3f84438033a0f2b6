#!/usr/bin/env bash
# Installs the system tools walkie's tests drive, from Debian's packages:
# tmux, the real terminal the display tests (cmd/walkie/tmux_test.go) read
# the screen of. Does nothing when they are already there. Without them
# those tests skip and say why, and fail when CI is set.
set -euo pipefail

missing=()
for tool in tmux; do
	command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-tools: ${missing[*]} missing and no apt-get here: install them with your package manager" >&2
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
