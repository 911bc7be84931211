#!/usr/bin/env bash
# Runs the five workloads on idemchart (examples/workloads.rs) and on XState
# (bench/xstate/bench.mjs) in one run on this machine and prints a table:
# workload, idemchart events/s, XState events/s, ratio.
#
#   bench/compare.sh                    # all five, full counts, one round
#   bench/compare.sh --runs 3           # three rounds, medians in the table
#   bench/compare.sh --quick W4 W5      # 10x fewer events, some workloads
#   bench/compare.sh --out results.jsonl  # also keep every JSON line
#
# Within a round the two sides take turns workload by workload, so that both
# see the same load on a shared machine. The JSON lines of both programs are
# collected and bench/table.mjs turns them into the table (medians per side).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

runs=1
quick=()
out=""
filters=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --quick) quick=(--quick); shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    --*) echo "unknown option $1" >&2; exit 2 ;;
    *) filters+=("$1"); shift ;;
  esac
done
if [ ${#filters[@]} -eq 0 ]; then
  filters=(W1 W2 W3 W4 W5)
fi

cargo build --quiet --release --manifest-path "$root/Cargo.toml" --example workloads
ours="$root/target/release/examples/workloads"
if [ ! -d "$here/xstate/node_modules" ]; then
  (cd "$here/xstate" && npm ci --silent)
fi

lines="$(mktemp)"
trap 'rm -f "$lines"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((round = 1; round <= runs; round++)); do
  for w in "${filters[@]}"; do
    echo "round $round/$runs: $w" >&2
    "$ours" "${quick[@]}" "$w" >>"$lines"
    node "$here/xstate/bench.mjs" "${quick[@]}" "$w" >>"$lines"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
if [ -n "$out" ]; then
  cp "$lines" "$out"
fi
node "$here/table.mjs" <"$lines"
