#!/usr/bin/env bash
# make demo: a real `walkie auto` debate between two scripted agents, each
# turn a fresh process in its own pseudo-terminal. No account, no network.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run="$root/demo/run"
rm -rf "$run"
mkdir -p "$run"
cp "$root"/scripts/demo/{walkie.yaml,ada.yaml,brook.yaml} "$run"/
export PATH="$root/bin:$PATH"
cd "$run"

echo "== walkie init: a debate between ada and brook, at most 4 rounds"
walkie init orders.walkie.md --agents ada,brook --max-rounds 4 --briefing "$root/scripts/demo/briefing.md"
echo "== walkie brief approve: pin the briefing"
walkie brief approve orders.walkie.md --yes
echo "== walkie auto: one agent session per turn, until both sign off"
# On a terminal a live line per running session; in a pipe or a CI log,
# one readable line per turn.
set +e
walkie auto orders.walkie.md
rc=$?
set -e
echo
echo "== walkie show: the record for reading (demo/run/orders.walkie.md holds its bytes)"
walkie show orders.walkie.md
echo
echo "== walkie verify"
walkie verify orders.walkie.md
echo "== walkie log"
walkie log orders.walkie.md
exit $rc
