#!/usr/bin/env bash
# make bench: every Go benchmark in the tree, once. Targets (ratios, p50/p99,
# peak memory) are reported by the benchmarks themselves with
# b.ReportMetric, each measured against its baseline in the same run, so a
# shared, noisy machine moves both sides alike. Nothing here asserts a
# time: read the figures (docs/benchmarks.md says what each one targets).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
pkgs=$(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... )
# -benchtime=1x for whole-process and 1 GB benchmarks would be too little for
# the fast ones, so each benchmark picks its own iteration count; -count 1
# keeps the run to a few minutes on two cores.
go test -run '^$' -bench "${BENCH:-.}" -benchmem -count 1 -timeout 60m $pkgs
# Beside BenchmarkTurnGap's times: the syncs and system calls of a turn,
# counted with strace (scripts/turn-syscalls.sh says how).
if [ -n "${BENCH:-}" ] && [[ ! "TurnGap" =~ ${BENCH} ]]; then
	exit 0
fi
if command -v strace >/dev/null; then
	scripts/turn-syscalls.sh 100
elif [ -n "${CI:-}" ]; then
	echo "bench: strace is not installed, and CI must count the syscalls of a turn" >&2
	exit 1
else
	echo "bench: strace is not installed: the syscalls of a turn are not counted (apt-get install strace)"
fi
