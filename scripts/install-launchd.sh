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

die() { echo "install-launchd: $*" >&2; exit 2; }

dir=$HOME/debates
bin=
listen=127.0.0.1:7433
path=$PATH
mode=install
while [ $# -gt 0 ]; do
	case $1 in
	--dir | --bin | --listen | --path)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--dir) dir=$2 ;;
		--bin) bin=$2 ;;
		--listen) listen=$2 ;;
		--path) path=$2 ;;
		esac
		shift 2
		;;
	--print) mode=print; shift ;;
	--uninstall) mode=uninstall; shift ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

if [ "$mode" != print ] && [ "$(uname -s)" != Darwin ]; then
	die "launchd is macOS only; --print shows the plist it would install (on Linux, see scripts/walkie.service)"
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

if [ -z "$bin" ]; then
	bin=$(command -v walkie || true)
	if [ -z "$bin" ] && command -v go >/dev/null; then
		bin=$(go env GOPATH)/bin/walkie
	fi
	[ -n "$bin" ] || die "no walkie on PATH: go install github.com/walkie-sh/walkie/cmd/walkie@latest, or give --bin"
fi
# launchd expands neither ~ nor $HOME, and runs nothing through a shell.
for v in "$dir" "$bin"; do
	case $v in
	/*) ;;
	*) die "$v: give an absolute path (launchd does not expand ~ or relative paths)" ;;
	esac
done
for v in "$dir" "$bin" "$listen" "$path" "$HOME"; do
	case $v in
	*$'\n'* | *$'\r'*) die "a value holds a line break: $v" ;;
	esac
done
[ -x "$bin" ] && [ -f "$bin" ] || die "$bin: not an executable file (build it with make install, or give --bin)"
# Tools the agents and the keychain need live here; a PATH without them
# breaks node's #!/usr/bin/env and claude's use of /usr/bin/security.
case ":$path:" in *:/usr/bin:*) ;; *) path=$path:/usr/bin ;; esac
case ":$path:" in *:/bin:*) ;; *) path=$path:/bin ;; esac

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

for agent in claude codex gemini; do
	if found=$(PATH=$path; command -v "$agent"); then
		echo "  $agent: $found"
	else
		echo "  $agent: not on the service's PATH (--path) — fine if you do not use it"
	fi
done

[ -n "$listen" ] || { echo "no --listen: check ~/Library/Logs/walkie/serve.log"; exit 0; }
for _ in 1 2 3 4 5 6 7 8 9 10; do
	if health=$(curl -fsS --max-time 2 "http://$listen/healthz" 2>/dev/null); then
		echo "healthy: $health"
		echo "logs:    tail -f ~/Library/Logs/walkie/serve.log"
		exit 0
	fi
	sleep 1
done
echo "install-launchd: walkie serve does not answer on $listen after 10 s; the end of its log:" >&2
tail -n 20 "$HOME/Library/Logs/walkie/serve.log" >&2 || true
exit 1
