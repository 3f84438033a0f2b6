#!/usr/bin/env bash
# Installs Chromium from the distribution's packages for the fleet page's
# browser tests (controller/daemon/browser_test.go). It is a no-op when a
# Chromium is already on PATH or named by WALKIE_CHROMIUM. Debian and Ubuntu get
# `apt-get install chromium`; elsewhere it says what to install and exits
# non-zero, so `make test` can report it (and, with CI set, the browser
# tests fail rather than skip).
#
# Usage: scripts/install-chromium.sh
# Prints the Chromium binary's path on the last line of stdout.
set -euo pipefail

die() {
	echo "install-chromium: $*" >&2
	exit 1
}

find_chromium() {
	if [[ -n "${WALKIE_CHROMIUM:-}" ]]; then
		[[ -x "$WALKIE_CHROMIUM" ]] || die "WALKIE_CHROMIUM=$WALKIE_CHROMIUM is not an executable"
		echo "$WALKIE_CHROMIUM"
		return 0
	fi
	local name
	for name in chromium chromium-browser google-chrome-stable google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

if path=$(find_chromium); then
	echo "$path"
	exit 0
fi

command -v apt-get >/dev/null 2>&1 ||
	die "no Chromium found and no apt-get to install one; install Chromium (or Chrome) and put it on PATH, or set WALKIE_CHROMIUM"

sudo=()
if [[ $(id -u) -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || die "installing Chromium needs root: run 'apt-get install chromium' as root"
	sudo=(sudo)
fi

export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing on a fresh machine; one update is enough.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; then
	"${sudo[@]}" apt-get update -qq >/dev/null
	"${sudo[@]}" apt-get install -y --no-install-recommends chromium >/dev/null ||
		die "apt-get install chromium failed"
fi

path=$(find_chromium) || die "chromium was installed but is not on PATH"
echo "$path"
