#!/bin/bash
# Install walkie serve as a launchd user agent (macOS): render
# scripts/dev.walkie.serve.plist with your paths, put it in
# ~/Library/LaunchAgents, (re)start it in your GUI session, and check that
# it answers. See docs/operations.md, "macOS".
#
#   scripts/install-launchd.sh [--dir DIR] [--bin WALKIE] [--listen ADDR] [--path PATH]
#   scripts/install-launchd.sh --print ...      # write the plist to stdout, change nothing
#   scripts/install-launchd.sh --uninstall      # stop it and remove the plist (logs stay)
#
# Defaults: --dir ~/debates, --bin the walkie on your PATH (or in
# $(go env GOPATH)/bin), --listen 127.0.0.1:7433, --path your shell's PATH,
# so the agent CLIs your shell finds (Homebrew, npm globals) are found by
# the service too.
#
# Written for the bash 3.2 that macOS ships; no GNU tools.
set -euo pipefail

label=dev.walkie.serve
here=$(cd "$(dirname "$0")" && pwd)
template=$here/$label.plist

name=install-launchd manager=launchd help_lines=2,16p
# shellcheck source=install-common.sh
. "$here/install-common.sh"
parse_args "$@"

if [ "$mode" != print ] && [ "$(uname -s)" != Darwin ]; then
	die "launchd is macOS only; --print shows the plist it would install (on Linux, see scripts/install-systemd.sh)"
fi
uid=$(id -u)
plist=$HOME/Library/LaunchAgents/$label.plist
target=gui/$uid/$label

# stop boots the agent out and waits until launchd has let it go: bootout
# returns while walkie still drains (up to ExitTimeOut), and a bootstrap
# meanwhile fails with an I/O error.
stop() {
	launchctl print "$target" >/dev/null 2>&1 || return 0
	echo "stopping $target (running turns get walkie's --grace)"
	launchctl bootout "$target" 2>/dev/null || true
	local waited=0
	while launchctl print "$target" >/dev/null 2>&1; do
		[ $waited -lt 160 ] || die "$target still loaded after 160 s; see launchctl print $target"
		sleep 1
		waited=$((waited + 1))
	done
}

if [ "$mode" = uninstall ]; then
	stop
	rm -f "$plist"
	echo "removed $plist (logs stay in ~/Library/Logs/walkie)"
	exit 0
fi

check_values

# xml_escape makes a value safe inside <string>: &, < and >.
xml_escape() { printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }

# render replaces the template's placeholders literally (awk's index, no
# regular expressions), the longer first: the binary and the log
# directory both start with /Users/YOU.
render() {
	W_BIN=$(xml_escape "$bin") W_DIR=$(xml_escape "$dir") W_LOGS=$(xml_escape "$HOME/Library/Logs/walkie") \
		W_LISTEN=$(xml_escape "$listen") W_PATH=$(xml_escape "$path") awk '
		function subst(s, from, to,   out, i) {
			out = ""
			while ((i = index(s, from)) > 0) {
				out = out substr(s, 1, i - 1) to
				s = substr(s, i + length(from))
			}
			return out s
		}
		# The template opens with how to install it by hand: not for a
		# rendered copy.
		!done && $0 == "<!--" { skip = 1; next }
		skip { if ($0 == "-->") { skip = 0; done = 1; print "<!-- Rendered by scripts/install-launchd.sh from dev.walkie.serve.plist; see docs/operations.md. -->" }; next }
		{
			s = $0
			s = subst(s, "/Users/YOU/go/bin/walkie", ENVIRON["W_BIN"])
			s = subst(s, "/Users/YOU/Library/Logs/walkie", ENVIRON["W_LOGS"])
			s = subst(s, "/Users/YOU/debates", ENVIRON["W_DIR"])
			s = subst(s, "<string>127.0.0.1:7433</string>", "<string>" ENVIRON["W_LISTEN"] "</string>")
			s = subst(s, "<string>/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin</string>", "<string>" ENVIRON["W_PATH"] "</string>")
			print s
		}' "$template"
}

if [ "$mode" = print ]; then
	render
	exit 0
fi

mkdir -p "$dir" "$HOME/Library/Logs/walkie" "$HOME/Library/LaunchAgents"
tmp=$(mktemp "$HOME/Library/LaunchAgents/.$label.XXXXXX")
trap 'rm -f "$tmp"' EXIT
render >"$tmp"
plutil -lint "$tmp" >/dev/null || die "the rendered plist does not parse (plutil -lint $tmp)"
chmod 644 "$tmp"
stop
mv "$tmp" "$plist"
launchctl bootstrap "gui/$uid" "$plist"
echo "started $target with $plist"

report_agents
show_log() { tail -n 20 "$HOME/Library/Logs/walkie/serve.log"; }
check_health "tail -f ~/Library/Logs/walkie/serve.log"
