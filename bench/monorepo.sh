#!/usr/bin/env bash
# `idemchart lint .` at the root of a large workspace: the fixture
# repositories of tests/data/repos/ (variants left out) copied N times, 30 by
# default, into the packages of one pnpm workspace in a temporary directory.
# Prints the workspace's size, then the wall, user and system time and peak
# RSS of one run of the binary ($IDEMCHART, else target/release/idemchart).
#
#   cargo build --release && bench/monorepo.sh 8     # about 200 XState files
set -euo pipefail
cd "$(dirname "$0")/.."
copies="${1:-30}"
bin="$(realpath "${IDEMCHART:-target/release/idemchart}")"
dir="$(mktemp -d /tmp/idemchart-monorepo.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
printf '{ "name": "workspace", "private": true }\n' >"$dir/package.json"
printf 'packages:\n  - "packages/*"\n' >"$dir/pnpm-workspace.yaml"
printf '{ "compilerOptions": { "strict": true } }\n' >"$dir/tsconfig.json"
for repo in tests/data/repos/*/; do
    [ -f "$repo/variant-of" ] && continue
    name="$(basename "$repo")"
    for i in $(seq "$copies"); do
        mkdir -p "$dir/packages/$name-$i"
        cp -r "$repo/." "$dir/packages/$name-$i/"
    done
done
files="$(find "$dir/packages" -type f | wc -l)"
scripts="$(find "$dir/packages" -type f \( -name '*.ts' -o -name '*.tsx' -o -name '*.js' -o -name '*.mjs' \) -not -path '*/node_modules/*' -exec grep -l "from 'xstate'\|from \"xstate\"" {} + | wc -l)"
summary="$(cd "$dir" && "$bin" lint . 2>/dev/null | grep "^linted" || true)"
echo "workspace: $copies copies, $files files, $scripts import xstate; $summary"
cd "$dir"
/usr/bin/time -f "wall %e s, user %U s, sys %S s, max RSS %M KB" "$bin" lint . >/dev/null 2>"$dir/stderr" || true
tail -1 "$dir/stderr"
