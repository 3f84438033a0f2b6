#!/bin/bash
# Install walkie serve as a systemd user service (Linux): render
# scripts/walkie.service with your paths and your shell's PATH, put it in
# ~/.config/systemd/user, enable and (re)start it, and check that it
# answers. See docs/operations.md, "systemd (Linux)".
#
#   scripts/install-systemd.sh [--dir DIR] [--bin WALKIE] [--listen ADDR] [--path PATH]
#   scripts/install-systemd.sh --print ...      # write the unit to stdout, change nothing
#   scripts/install-systemd.sh --uninstall      # stop and disable it, remove the unit (the journal stays)
#
# Defaults: --dir ~/debates, --bin the walkie on your PATH (or in
# $(go env GOPATH)/bin), --listen 127.0.0.1:7433, --path your shell's PATH,
# so the agent CLIs your shell finds (~/.local/bin, npm's global bin, nvm)
# are found by the service too: a user manager's own PATH has none of them.
set -euo pipefail

unit_name=walkie.service
here=$(cd "$(dirname "$0")" && pwd)
template=$here/$unit_name

name=install-systemd manager=systemd help_lines=2,14p
# shellcheck source=install-common.sh
. "$here/install-common.sh"
parse_args "$@"

if [ "$mode" != print ]; then
	command -v systemctl >/dev/null 2>&1 ||
		die "no systemctl: this machine does not run systemd; --print shows the unit it would install (on macOS, see scripts/install-launchd.sh)"
fi
unit_dir=${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user
unit=$unit_dir/$unit_name

if [ "$mode" = uninstall ]; then
	if [ -e "$unit" ]; then
		echo "stopping $unit_name (running turns get walkie's --grace)"
		systemctl --user disable --now "$unit_name" || true
		rm -f "$unit"
		systemctl --user daemon-reload
	fi
	echo "removed $unit (the log stays in the journal: journalctl --user -u walkie)"
	exit 0
fi

check_values
case $dir in
*[[:space:]]) die "$dir: a directory that ends in white space (systemd would cut it off)" ;;
*\\) die "$dir: a directory that ends in a backslash (systemd would read the next line into it)" ;;
esac

# spec keeps a value's % from being read as a systemd specifier (%h).
spec() { printf '%s' "$1" | sed -e 's/%/%%/g'; }
# quoted is one word of a unit's command line or assignment: in double
# quotes, with \ and " escaped, % doubled, and $ doubled where systemd
# would expand a variable (exec lines only: pass "exec" as $2).
quoted() {
	local v
	v=$(printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/%/%%/g')
	if [ "${2:-}" = exec ]; then
		v=$(printf '%s' "$v" | sed -e 's/\$/$$/g')
	fi
	printf '"%s"' "$v"
}

# render writes the template with the lines that name this machine's
# paths replaced whole; the rest (signals, restarts, the grace) is the
# template's. Its opening comment says how to install it by hand: not for
# a rendered copy.
render() {
	local exec_line
	exec_line="ExecStart=$(quoted "$bin" exec) serve --dir $(quoted "$dir" exec) --listen $(quoted "$listen" exec) --grace 2m --log-format json"
	W_DIR="WorkingDirectory=$(spec "$dir")" W_EXEC=$exec_line W_PATH="Environment=$(quoted "PATH=$path")" awk '
		!started && /^#/ { next }
		!started { started = 1; print "# Rendered by scripts/install-systemd.sh from walkie.service; see docs/operations.md." }
		/^WorkingDirectory=/ { print ENVIRON["W_DIR"]; next }
		/^ExecStart=/ { print ENVIRON["W_EXEC"]; next }
		/^Environment="PATH=/ { print ENVIRON["W_PATH"]; next }
		{ print }' "$template"
}

if [ "$mode" = print ]; then
	render
	exit 0
fi

mkdir -p "$dir" "$unit_dir"
tmp=$(mktemp "$unit_dir/.$unit_name.XXXXXX")
trap 'rm -f "$tmp"' EXIT
render >"$tmp"
chmod 644 "$tmp"
mv "$tmp" "$unit"
systemctl --user daemon-reload
systemctl --user enable "$unit_name" >/dev/null
# restart starts it when it is stopped, and gives a running one the new
# unit (its stop gives running turns walkie's --grace).
systemctl --user restart "$unit_name"
echo "started $unit_name with $unit"

report_agents

if [ "$(loginctl show-user "$(id -un)" --property=Linger --value 2>/dev/null || true)" != yes ]; then
	echo "note: it stops when you log out; to keep it running: loginctl enable-linger $(id -un)"
fi

show_log() { journalctl --user -u walkie -n 20 --no-pager; }
check_health "journalctl --user -u walkie -f -o cat"
