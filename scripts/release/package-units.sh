#!/usr/bin/env bash
# Renders the systemd user units of scripts/ for the .deb and .rpm packages
# into DIR: ExecStart names /usr/bin/walkie, where the packages install it,
# and the header says how to start a packaged unit. GoReleaser runs it
# before a release (scripts/release/goreleaser.yaml).
#
# Usage: scripts/release/package-units.sh DIR
set -euo pipefail

die() {
	echo "package-units: $*" >&2
	exit 1
}

[[ $# -eq 1 && -n "$1" ]] || die "usage: scripts/release/package-units.sh DIR"
out=$1
scripts=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"

for unit in walkie.service walkie-worker.service; do
	src="$scripts/$unit"
	# A unit whose ExecStart no longer starts with the binary this
	# replaces would ship a path that does not exist: refuse.
	grep -q '^ExecStart=%h/go/bin/walkie ' "$src" ||
		die "$src: no line starting ExecStart=%h/go/bin/walkie; update this script with the unit"
	{
		printf '%s\n' \
			"# ${unit%.service} as a systemd user service, installed by the walkie package" \
			"# from scripts/$unit of the walkie repository, with walkie in /usr/bin." \
			"# That file's comments say what to set up first; then, as your user:" \
			"#" \
			"#   systemctl --user enable --now ${unit%.service}" \
			"#   loginctl enable-linger \"\$USER\"     # keep it running when you log out" \
			"#" \
			"# Change it with \`systemctl --user edit ${unit%.service}\`: an upgrade replaces this file."
		# The unit without its leading comment block, walkie where the
		# package puts it.
		sed -e '1,/^\[Unit\]$/{/^\[Unit\]$/!d;}' -e 's|^ExecStart=%h/go/bin/walkie |ExecStart=/usr/bin/walkie |' "$src"
	} >"$out/$unit.tmp"
	mv -f "$out/$unit.tmp" "$out/$unit"
done
