#!/bin/sh
# Installs walkie and walkie-temporal from a GitHub release of walkie, after
# checking the archive against the release's checksums.txt (SHA-256).
#
#   curl -fsSL https://raw.githubusercontent.com/walkie-sh/walkie/main/scripts/install.sh | sh
#   curl -fsSL …/install.sh | sh -s -- --version v0.1.0 --dir /usr/local/bin
#
# Options (or the variables in brackets):
#   --version VERSION  a release tag, e.g. v0.1.0 [WALKIE_VERSION]; default the latest release
#   --dir DIR          where the binaries go [WALKIE_INSTALL_DIR]; default ~/.local/bin
#   --url URL          the releases to download from [WALKIE_RELEASES_URL];
#                      default https://github.com/walkie-sh/walkie/releases
#                      (URL/download/VERSION/FILE and URL/latest/download/FILE)
#
# Linux and macOS, amd64 and arm64. Nothing is installed unless the
# download matches its checksum; the binaries are replaced whole, never
# half-written. Written for any POSIX sh: it runs before anything else is
# there.
set -eu

die() {
	echo "install.sh: $*" >&2
	exit 1
}

usage() {
	cat <<'USAGE'
install.sh [--version VERSION] [--dir DIR] [--url URL]
  --version  a release tag, e.g. v0.1.0 (WALKIE_VERSION); default the latest release
  --dir      where walkie and walkie-temporal go (WALKIE_INSTALL_DIR); default ~/.local/bin
  --url      the releases to download from (WALKIE_RELEASES_URL);
             default https://github.com/walkie-sh/walkie/releases
USAGE
}

version=${WALKIE_VERSION:-latest}
dir=${WALKIE_INSTALL_DIR:-${HOME:?HOME is not set}/.local/bin}
url=${WALKIE_RELEASES_URL:-https://github.com/walkie-sh/walkie/releases}
while [ $# -gt 0 ]; do
	case $1 in
	--version | --dir | --url)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--version) version=$2 ;;
		--dir) dir=$2 ;;
		--url) url=$2 ;;
		esac
		shift 2
		;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done

case $version in
latest) ;;
v[0-9]*) ;;
[0-9]*) version=v$version ;;
*) die "--version $version: give a release tag such as v0.1.0, or latest" ;;
esac

case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) die "$(uname -s) is not supported: walkie releases are for Linux and macOS (go install github.com/walkie-sh/walkie/cmd/walkie@latest builds it elsewhere)" ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) die "$(uname -m) is not supported: walkie releases are for amd64 and arm64" ;;
esac

archive=walkie_${os}_${arch}.tar.gz
if [ "$version" = latest ]; then
	base=$url/latest/download
else
	base=$url/download/$version
fi

fetch() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 2 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		die "neither curl nor wget is installed"
	fi
}

sha256() { # FILE
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d ' ' -f 1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d ' ' -f 1
	elif command -v openssl >/dev/null 2>&1; then
		openssl dgst -sha256 "$1" | sed 's/.*= *//'
	else
		die "no sha256sum, shasum or openssl to check the download with"
	fi
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/walkie-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

echo "install.sh: downloading $base/$archive" >&2
fetch "$base/checksums.txt" "$tmp/checksums.txt" || die "cannot download $base/checksums.txt (is $version a release of walkie?)"
fetch "$base/$archive" "$tmp/$archive" || die "cannot download $base/$archive"

want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1 }' "$tmp/checksums.txt")
[ -n "$want" ] || die "checksums.txt of $version lists no $archive"
got=$(sha256 "$tmp/$archive")
[ "$got" = "$want" ] || die "$archive does not match checksums.txt (sha256 $got, want $want): not installed"

mkdir -p "$tmp/x"
tar -xzf "$tmp/$archive" -C "$tmp/x" walkie walkie-temporal || die "$archive does not hold walkie and walkie-temporal"
mkdir -p "$dir" || die "cannot create $dir"
# Copy beside the targets, check the copy runs, then rename over them: a
# running walkie keeps its old file, and no one sees a half-copied or
# broken binary.
for bin in walkie walkie-temporal; do
	if ! { cp "$tmp/x/$bin" "$dir/.$bin.new" && chmod 755 "$dir/.$bin.new"; }; then
		rm -f "$dir/.walkie.new" "$dir/.walkie-temporal.new"
		die "cannot write $dir/.$bin.new"
	fi
done
if ! installed=$("$dir/.walkie.new" --version | head -n 1); then
	rm -f "$dir/.walkie.new" "$dir/.walkie-temporal.new"
	die "the downloaded walkie does not run on this machine: not installed"
fi
mv -f "$dir/.walkie-temporal.new" "$dir/walkie-temporal"
mv -f "$dir/.walkie.new" "$dir/walkie"
echo "install.sh: $installed installed in $dir (with walkie-temporal)" >&2
case :$PATH: in
*:"$dir":*) ;;
*) echo "install.sh: $dir is not on your PATH; add it, e.g. export PATH=\"$dir:\$PATH\"" >&2 ;;
esac
