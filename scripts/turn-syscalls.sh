#!/usr/bin/env bash
# turn-syscalls.sh [TURNS]: what one turn of `walkie auto` asks of the
# kernel. It runs a debate of TURNS (default 100) trivial turns between two
# benchagents (controller/testdata/benchagent, which append a line and
# exit) under `strace -f`, and counts the system calls of walkie's own
# process (every thread of it; not the agents, not the sandbox's helper):
# syncs (fsync, fdatasync), renames and getsid (the scan for a session's
# processes) a turn, and all system calls a turn. strace slows every call,
# which makes the Go runtime's scheduler and the pty's reader wake more
# often: "all" counts those too, "io" leaves out the calls that only wait
# or schedule (futex, nanosleep, epoll_pwait, sched_yield, and read on the
# pty's nonblocking descriptor). The one-off calls of start-up and the
# end of the run are spread over the turns. TOP=N prints the N calls
# made most often, a turn. docs/benchmarks.md has the
# targets and the figures.
set -euo pipefail
turns=${1:-100}
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v strace >/dev/null || { echo "turn-syscalls: strace is not installed (apt-get install strace)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/walkie" ./cmd/walkie
go build -o "$tmp/benchagent" ./controller/testdata/benchagent
# The trace goes outside the debate's directory, which the controller
# watches (inotify): its own writes there would wake it.
mkdir "$tmp/d"
cd "$tmp/d"
echo "Benchmark the controller between turns." > brief.md
: > "$tmp/times" # the agents note their times here: granted, so it must exist
../walkie init bench.walkie.md --agents a,b --max-rounds $((turns / 2)) --briefing brief.md >/dev/null
cat > walkie.yaml <<YAML
defaults:
  home: inherit
  grace: 5s
  timeout: 1m
agents:
  a:
    command: ["$tmp/benchagent", "{file}", "{agent}", "{turn}", "$tmp/times"]
    sandbox_write: ["$tmp/times"]
    usage: none
  b:
    command: ["$tmp/benchagent", "{file}", "{agent}", "{turn}", "$tmp/times"]
    sandbox_write: ["$tmp/times"]
    usage: none
YAML
# Every turn must have run the agent to its end: the times file has a line
# per turn, or the figures are of something else.
code=0
strace -f -qq -o "$tmp/trace.txt" ../walkie auto bench.walkie.md --approve >/dev/null 2>auto.err || code=$?
if [ "$code" != 10 ]; then
  echo "turn-syscalls: walkie auto exited $code, not 10 (the round cap):" >&2
  cat auto.err >&2
  exit 1
fi
if [ "$(wc -l < "$tmp/times")" != "$turns" ]; then
	echo "turn-syscalls: the agents noted $(wc -l < "$tmp/times") of $turns turns (is the sandbox refusing them?)" >&2
	exit 1
fi
# Each line of trace.txt is "PID call(...)"; a clone's result is a new
# thread of its caller's process (CLONE_THREAD) or a new process.
awk -v turns="$turns" -v top="${TOP:-0}" '
function owner(p) { return (p in tg) ? tg[p] : p }
function count(p, n, call) {
	if (owner(p) != root) return
	all++
	if (n ~ /^(fsync|fdatasync|sync_file_range|syncfs)$/) syncs++
	if (n ~ /^rename/) renames++
	if (n == "getsid") getsid++
	by[n]++
	if (n !~ /^(futex|nanosleep|epoll_pwait|epoll_wait|sched_yield)$/ && !(n == "read" && call ~ /EAGAIN/)) io++
}
{
	pid = $1; rest = substr($0, length($1) + 2); sub(/^ +/, "", rest)
	if (NR == 1) root = pid
	if (rest ~ /^(\+\+\+|---)/) next
	if (rest ~ /<unfinished \.\.\.>$/) { pend[pid] = rest; next }
	if (rest ~ /^<\.\.\. [a-z0-9_]+ resumed>/) {
		name = rest; sub(/^<\.\.\. /, "", name); sub(/ resumed>.*/, "", name)
		call = pend[pid] rest; delete pend[pid]
	} else {
		name = rest; sub(/\(.*/, "", name); call = rest
	}
	count(pid, name, call)
	if (name ~ /^clone/ && match(call, /= [0-9]+$/)) {
		child = substr(call, RSTART + 2)
		tg[child] = (call ~ /CLONE_THREAD/) ? owner(pid) : child
	}
}
END {
	printf "turn-syscalls: %d turns: syncs/turn %.2f (target <= 3)  renames/turn %.2f  getsid/turn %.1f  io-syscalls/turn %.0f  all-syscalls/turn %.0f (target <= 350)\n",
		turns, syncs / turns, renames / turns, getsid / turns, io / turns, all / turns
	if (top) for (n in by) printf "%10.1f %s\n", by[n] / turns, n | "sort -rn | head -" top
}' "$tmp/trace.txt"
