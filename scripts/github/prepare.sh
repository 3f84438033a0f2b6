#!/usr/bin/env bash
# The walkie action's first step: turns its inputs into what the later
# steps need, and refuses bad input before anything is downloaded. Inputs
# arrive as variables (never pasted into a script):
#
#   WALKIE_VERSION_INPUT   the version input ("" for the action's own)
#   WALKIE_ACTION_REF      github.action_ref: the tag or commit the action runs at
#   WALKIE_BUILD_FROM_SOURCE, WALKIE_AGENTS, WALKIE_INSTALL_CLIS, WALKIE_CONFIG,
#   WALKIE_CLAUDE_MODEL, WALKIE_CODEX_MODEL, WALKIE_GEMINI_MODEL,
#   WALKIE_USE_BEDROCK, WALKIE_USE_VERTEX
#
# and writes to $GITHUB_OUTPUT:
#
#   version   the release to fetch (vX.Y.Z)
#   bin-dir   where that release's binaries are kept (and cached)
#   clis      the agent CLIs to install, space separated ("" for none)
#   clis-key  their pinned versions, for the cache key
#   clis-dir  where they are installed (and cached)
#   config    the config file walkie review reads ("" for none): the config
#             input, or one written here from the model and cloud inputs
set -euo pipefail
# Empty arrays are expanded as ${a[@]+"${a[@]}"}: macOS ships bash 3.2,
# where set -u refuses "${a[@]}" of an empty one.

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../versions.env
source "$here/../versions.env"

die() {
	echo "::error title=walkie action::$*"
	exit 2
}

out() { echo "$1=$2" >>"$GITHUB_OUTPUT"; }

is_bool() { [[ "$1" == true || "$1" == false ]]; }

# The version: the input; else the action's ref when it is a release tag
# (uses: …/scripts/github@v0.1.0); else the release versions.env names at
# this commit, the latest one before it.
version=${WALKIE_VERSION_INPUT:-}
if [[ -n "$version" ]]; then
	[[ "$version" =~ ^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]] ||
		die "version \"$version\": give a release tag such as $WALKIE_VERSION (latest is not allowed: a cached binary would never update)"
	[[ "$version" == v* ]] || version=v$version
elif [[ "${WALKIE_ACTION_REF:-}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]]; then
	version=$WALKIE_ACTION_REF
else
	version=$WALKIE_VERSION
fi
out version "$version"

from_source=${WALKIE_BUILD_FROM_SOURCE:-false}
is_bool "$from_source" || die "build-from-source \"$from_source\": true or false"

os=$(uname -s | tr '[:upper:]' '[:lower:]')
arch=$(uname -m)
out bin-dir "${RUNNER_TOOL_CACHE:?}/walkie/$version/$os-$arch"

# The CLIs: the presets among the agents, unless named outright.
want=${WALKIE_INSTALL_CLIS:-auto}
clis=()
# pick_clis OTHER LIST adds the presets LIST names (comma or space
# separated) once each; OTHER says what another name is: "agent", a note
# (an agent of the config brings its own CLI), or "cli", refused.
pick_clis() {
	local other=$1 name c words
	IFS=', ' read -r -a words <<<"$2"
	for name in ${words[@]+"${words[@]}"}; do
		case "$name" in
		claude | codex | gemini)
			for c in ${clis[@]+"${clis[@]}"}; do [[ "$c" == "$name" ]] && continue 2; done
			clis+=("$name")
			;;
		"") ;;
		*)
			[[ "$other" == agent ]] || die "install-clis \"$2\": auto, none, or a list of claude, codex and gemini"
			echo "walkie action: agent $name is no preset; install its CLI in a step before this one (install-clis installs claude, codex and gemini only)"
			;;
		esac
	done
}
case "$want" in
auto) pick_clis agent "${WALKIE_AGENTS:-}" ;;
none) ;;
*) pick_clis cli "$want" ;;
esac
key=""
for c in ${clis[@]+"${clis[@]}"}; do
	case "$c" in
	claude) key+="claude-${CLAUDE_VERSION}_" ;;
	codex) key+="codex-${CODEX_VERSION}_" ;;
	gemini) key+="gemini-${GEMINI_VERSION}_" ;;
	esac
done
out clis "${clis[*]+${clis[*]}}"
out clis-key "${key%_}"
out clis-dir "$RUNNER_TOOL_CACHE/walkie-clis/$os-$arch"

# The model and cloud inputs become a config of the presets; a config of
# the user's own already says how its agents run.
bedrock=${WALKIE_USE_BEDROCK:-false}
vertex=${WALKIE_USE_VERTEX:-false}
is_bool "$bedrock" || die "use-bedrock \"$bedrock\": true or false"
is_bool "$vertex" || die "use-vertex \"$vertex\": true or false"
[[ "$bedrock" == false || "$vertex" == false ]] || die "use-bedrock and use-vertex are both true: claude runs on one of them"
models=()
for pair in "claude:${WALKIE_CLAUDE_MODEL:-}" "codex:${WALKIE_CODEX_MODEL:-}" "gemini:${WALKIE_GEMINI_MODEL:-}"; do
	name=${pair%%:*} model=${pair#*:}
	[[ -n "$model" ]] || continue
	# Bedrock and Vertex model ids hold dots, colons and @; nothing here
	# needs quoting in YAML, or could be read as more than a name.
	[[ "$model" =~ ^[A-Za-z0-9][A-Za-z0-9._:/@-]*$ ]] || die "$name-model \"$model\": a model name is letters, digits and . _ : / @ -"
	models+=("$name" "$model")
done

if [[ -n "${WALKIE_CONFIG:-}" ]]; then
	if [[ ${#models[@]} -gt 0 || "$bedrock" == true || "$vertex" == true ]]; then
		die "config is set, so the model and cloud inputs do not apply: set model: and env_allow: under agents in $WALKIE_CONFIG (docs/ci.md, \"Models and clouds\")"
	fi
	out config "$WALKIE_CONFIG"
	exit 0
fi
if [[ ${#models[@]} -eq 0 && "$bedrock" == false && "$vertex" == false ]]; then
	out config ""
	exit 0
fi

cfg="${RUNNER_TEMP:?}/walkie-action.yaml"
{
	echo "# Written by the walkie action from its inputs (scripts/github/prepare.sh)."
	echo "agents:"
	for name in claude codex gemini; do
		model=""
		for ((i = 0; i < ${#models[@]}; i += 2)); do
			[[ "${models[i]}" == "$name" ]] && model=${models[i + 1]}
		done
		allow=""
		if [[ "$name" == claude && "$bedrock" == true ]]; then
			# What Claude Code reads for Bedrock, as
			# aws-actions/configure-aws-credentials sets it.
			allow="AWS_REGION, AWS_DEFAULT_REGION, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_BEARER_TOKEN_BEDROCK"
		elif [[ "$name" == claude && "$vertex" == true ]]; then
			# What Claude Code reads for Vertex AI, as
			# google-github-actions/auth sets the credentials.
			allow="ANTHROPIC_VERTEX_PROJECT_ID, CLOUD_ML_REGION, GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_CLOUD_PROJECT"
		fi
		[[ -n "$model" || -n "$allow" ]] || continue
		echo "  $name:"
		[[ -z "$model" ]] || echo "    model: \"$model\""
		[[ -z "$allow" ]] || echo "    env_allow: [$allow]"
	done
} >"$cfg"
out config "$cfg"
