#!/usr/bin/env bash
# curl against `idemchart serve` at $1: one event sent twice gets the same
# status and bytes, the second with `Idempotent-Replayed: true`; the same id
# with another payload gets a problem document. Prints a transcript; exits
# non-zero on any difference.
set -euo pipefail
base="$1"
url="$base/machines/order/processes/curl-1/events"
event='{"type": "PAY", "data": {"payId": "pay-1", "amount": 12.5}}'
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

send() { # body, name
    curl -sS -o "$scratch/$2.body" -D "$scratch/$2.head" -w '%{http_code}' \
        -H 'content-type: application/json' -d "$1" "$url"
}

first="$(send "$event" first)"
second="$(send "$event" second)"
echo "first: $first"
cat "$scratch/first.body"; echo
echo "second: $second $(grep -i '^idempotent-replayed:' "$scratch/second.head" | tr -d '\r')"
cat "$scratch/second.body"; echo
[ "$first" = 200 ] && [ "$second" = 200 ]
cmp "$scratch/first.body" "$scratch/second.body"
grep -qi '^idempotent-replayed: true' "$scratch/second.head"
! grep -qi '^idempotent-replayed' "$scratch/first.head"

reused="$(send '{"type": "PAY", "data": {"payId": "pay-1", "amount": 99}}' reused)"
echo "reused: $reused $(grep -i '^content-type:' "$scratch/reused.head" | tr -d '\r')"
cat "$scratch/reused.body"; echo
[ "$reused" = 422 ]
echo "same bytes: yes"
