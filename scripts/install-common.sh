# What install-launchd.sh and install-systemd.sh share, sourced by both
# (not run): their arguments, the checks of the values, the list of the
# agent CLIs the service finds, and the health check. The caller sets
# `name` (its messages' prefix), `manager` (launchd, systemd: named in
# the refusals) and `help_lines` (the lines of its opening comment that
# --help prints) first.
#
# Written for the bash 3.2 that macOS ships; no GNU tools.

die() { echo "$name: $*" >&2; exit 2; }

# parse_args reads the arguments into dir, bin, listen, path and mode
# (install, print, uninstall), with their defaults: ~/debates, the walkie
# found later, 127.0.0.1:7433, the shell's PATH.
parse_args() {
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
		-h | --help) sed -n "$help_lines" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) die "unknown argument $1 (see --help)" ;;
		esac
	done
}

# check_values finds walkie when --bin was not given, refuses what the
# service manager would misread, and adds to PATH the directories node's
# #!/usr/bin/env and the CLIs' own tools need.
check_values() {
	if [ -z "$bin" ]; then
		bin=$(command -v walkie || true)
		if [ -z "$bin" ] && command -v go >/dev/null; then
			bin=$(go env GOPATH)/bin/walkie
		fi
		[ -n "$bin" ] || die "no walkie on PATH: go install github.com/walkie-sh/walkie/cmd/walkie@latest, or give --bin"
	fi
	local v
	for v in "$dir" "$bin"; do
		case $v in
		/*) ;;
		*) die "$v: give an absolute path ($manager does not expand ~ or relative paths)" ;;
		esac
	done
	for v in "$dir" "$bin" "$listen" "$path" "$HOME"; do
		case $v in
		*$'\n'* | *$'\r'*) die "a value holds a line break: $v" ;;
		esac
	done
	[ -x "$bin" ] && [ -f "$bin" ] || die "$bin: not an executable file (build it with make install, or give --bin)"
	case ":$path:" in *:/usr/bin:*) ;; *) path=$path:/usr/bin ;; esac
	case ":$path:" in *:/bin:*) ;; *) path=$path:/bin ;; esac
}

# report_agents says which agent CLIs the service's PATH finds.
report_agents() {
	local agent found
	for agent in claude codex gemini; do
		if found=$(PATH=$path; command -v "$agent"); then
			echo "  $agent: $found"
		else
			echo "  $agent: not on the service's PATH (--path) — fine if you do not use it"
		fi
	done
}

# check_health asks the started service's /healthz for 10 s; logs is how
# to follow its log, and show_log, which the caller defines, prints its
# end when it does not answer.
check_health() {
	local logs=$1 health
	[ -n "$listen" ] || { echo "no --listen: check its log ($logs)"; exit 0; }
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		if health=$(curl -fsS --max-time 2 "http://$listen/healthz" 2>/dev/null); then
			echo "healthy: $health"
			echo "logs:    $logs"
			exit 0
		fi
		sleep 1
	done
	echo "$name: walkie serve does not answer on $listen after 10 s; the end of its log:" >&2
	show_log >&2 || true
	exit 1
}
