# shellcheck shell=bash
# Sourced by scripts/install-temporal.sh and scripts/install-goreleaser.sh:
# builds one Go program at a pinned version into .cache/NAME/VERSION/ under
# the repository root (git ignores /.cache/). A cold build takes minutes on
# two cores; every later run finds the binary and returns at once, so CI
# and repeated `make test` cost nothing.
#
# go_tool NAME PACKAGE VERSION [--force | --check]
# prints the binary's path on the last line of stdout. --check builds
# nothing: it prints the path and returns 0 when the binary is there, and
# exits 1 otherwise (the tests use it to find the binary).

go_tool() {
	local name=$1 pkg=$2 version=$3 flag=${4:-}
	local root dir bin tmp start
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	dir="$root/.cache/$name/$version"
	bin="$dir/${pkg##*/}"
	# A major-version suffix (…/v2) is not the binary's name.
	[[ "${pkg##*/}" =~ ^v[0-9]+$ ]] && bin="$dir/$name"

	local force=0
	case "$flag" in
	"") ;;
	--force) force=1 ;;
	--check)
		[[ -x "$bin" ]] || exit 1
		echo "$bin"
		return 0
		;;
	*) go_tool_die "$name" "unknown argument $flag (usage: $0 [--force | --check])" ;;
	esac

	if [[ $force -eq 0 && -x "$bin" ]]; then
		echo "install-$name: $pkg $version already in $dir" >&2
		echo "$bin"
		return 0
	fi

	command -v "${GO:-go}" >/dev/null 2>&1 || go_tool_die "$name" "go is not installed; $pkg is built from source with go install"

	mkdir -p "$dir"
	# Build into a scratch folder and move the finished binary in, so an
	# interrupted build never leaves a half-written binary that the fast
	# path above would trust.
	tmp=$(mktemp -d "$dir/.build.XXXXXX")
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "rm -rf '$tmp'" EXIT
	echo "install-$name: building $pkg@$version (a cold build takes minutes)" >&2
	start=$(date +%s)
	GOBIN="$tmp" GOFLAGS=-buildvcs=false "${GO:-go}" install "$pkg@$version" ||
		go_tool_die "$name" "go install $pkg@$version failed (is the Go module proxy reachable?)"
	mv -f "$tmp/$(basename "$bin")" "$bin"
	echo "install-$name: built in $(($(date +%s) - start))s" >&2
	echo "$bin"
}

go_tool_die() {
	echo "install-$1: $2" >&2
	exit 1
}
