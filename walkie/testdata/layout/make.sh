#!/usr/bin/env bash
# Makes the fixtures of the layout before the log (state.json, turns.jsonl,
# session.json beside the record), for the migration tests: run it with a
# walkie and a fakeagent built at the last commit of that layout
# (0a64f64), e.g.
#
#   git worktree add /tmp/old 0a64f64 && (cd /tmp/old && go build -o /tmp/old/bin/ ./cmd/walkie ./cmd/fakeagent)
#   walkie/testdata/layout/make.sh /tmp/old/bin
#
# It writes one txtar archive per fixture here: the walkie file and its
# .walkie/ID/ directory as that walkie left them (locks and spares left out).
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/walkie-layout-XXXXXX)
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH"

config() { # dir script-a script-b
	cat >"$1/walkie.yaml" <<YAML
defaults:
  timeout: 20s
  stall: 10s
  grace: 100ms
  kill_grace: 500ms
  retries: 1
  home: inherit
agents:
  a:
    command: [fakeagent, --file, "{file}", --agent, "{agent}", --script, "$1/a.yaml", --state, "$1/a.state"]
    usage: claude-json
  b:
    command: [fakeagent, --file, "{file}", --agent, "{agent}", --script, "$1/b.yaml", --state, "$1/b.state"]
    usage: claude-json
YAML
	printf '%s\n' "$2" >"$1/a.yaml"
	printf '%s\n' "$3" >"$1/b.yaml"
}

pack() { # dir name
	(cd "$1" && find d.walkie.md .walkie -type f ! -name lock ! -name run.lock ! -name '*.spare' | sort |
		while read -r f; do printf -- '-- %s --\n' "$f"; cat "$f"; [ -z "$(tail -c1 "$f")" ] || echo; done) |
		sed "s|$work|/tmp/walkie-layout|g" >"$here/$2.txtar" # the run's own directory, named the same every time
}

# ended: two rounds run to the cap with a rejected first attempt (a wrong
# heading, retried), costs reported, then extended by a round and halted:
# the state holds a status, a reason, an extension, retry counts cleared,
# costs, the closing note's mark and the supervisor's copy switch.
d=$work/ended && mkdir -p "$d" && cd "$d"
config "$d" $'usage: true\ncost_usd: 0.02\nsteps:\n  - behavior: wrong-heading\n  - {}' $'usage: true\ncost_usd: 0.03'
printf 'Should the fixture pass? One turn each.\n' >briefing.md
walkie init d.walkie.md --agents a,b --max-rounds 2 --briefing briefing.md >/dev/null
walkie auto d.walkie.md --approve >/dev/null 2>&1 || [ $? = 10 ]
walkie post d.walkie.md --supervisor --body-file <(printf 'A note from the supervisor.\n') >/dev/null
walkie extend d.walkie.md --rounds 1 >/dev/null
walkie halt d.walkie.md --reason 'fixture: halted after an extension' >/dev/null
pack "$d" ended

# interrupted: the controller killed (SIGKILL) while the agent of turn 2
# writes: state.json has the running attempt, session.json its session,
# snapshot.md the record before it, and the record the agent's unstamped
# text.
d=$work/interrupted && mkdir -p "$d" && cd "$d"
config "$d" $'usage: true' $'behavior: none\nshell: "printf \'\\\\n## Turn 2 · b\\\\n\\\\nHalf a tur\' >> d.walkie.md"\nhang_after: true'
printf 'Should the fixture pass? One turn each.\n' >briefing.md
walkie init d.walkie.md --agents a,b --max-rounds 2 --briefing briefing.md >/dev/null
walkie auto d.walkie.md --approve >/dev/null 2>&1 &
pid=$!
for _ in $(seq 500); do
	[ -f .walkie/d/session.json ] && grep -q 'Half a tur' d.walkie.md && break
	sleep 0.02
done
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
sess=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' .walkie/d/session.json)
kill -9 -- "-$sess" 2>/dev/null || true
pack "$d" interrupted
