#!/usr/bin/env bash
# The walkie action's pull-request input: for a workflow whose event is not
# pull_request (issue_comment, workflow_dispatch), reads the pull request
# from the REST API and writes it as the payload walkie review reads
# ($GITHUB_EVENT_PATH), so the review has its base, title and description
# and the comment goes to it. A pull request from a fork is refused: its
# code would meet the agents while they hold the repository's secrets.
#
#   WALKIE_PULL_REQUEST  the number;  GITHUB_TOKEN  a token that may read it
#
# Writes event-path=FILE to $GITHUB_OUTPUT.
set -euo pipefail

die() {
	echo "::error title=walkie action::$*"
	exit 2
}

n=${WALKIE_PULL_REQUEST:-}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "pull-request \"$n\": the number of a pull request"
command -v jq >/dev/null 2>&1 || die "jq is needed to read the pull request (GitHub's runners have it)"
api=${GITHUB_API_URL:-https://api.github.com}
repo=${GITHUB_REPOSITORY:?}
pr="${RUNNER_TEMP:?}/walkie-pull-request.json"
curl -fsSL --retry 2 -H "Authorization: Bearer ${GITHUB_TOKEN:?}" -H "Accept: application/vnd.github+json" \
	-o "$pr" "$api/repos/$repo/pulls/$n" || die "cannot read pull request #$n of $repo from $api"

head=$(jq -r '.head.repo.full_name // ""' "$pr")
base=$(jq -r '.base.repo.full_name // ""' "$pr")
[[ -n "$base" ]] || die "the API's answer for #$n is no pull request"
[[ "$head" == "$base" ]] || die "pull request #$n comes from ${head:-a deleted fork}: walkie reviews only branches of $base (docs/ci.md, \"Risks\")"

event="$RUNNER_TEMP/walkie-event.json"
jq '{pull_request: ., repository: .base.repo}' "$pr" >"$event"
echo "event-path=$event" >>"$GITHUB_OUTPUT"
