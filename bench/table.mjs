// Reads the JSON lines of examples/workloads.rs and bench/xstate/bench.mjs
// on stdin and prints a Markdown table: per workload, the median events/s of
// each side over its runs and their ratio. Used by bench/compare.sh.

import { readFileSync } from 'node:fs';

const rows = readFileSync(0, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line));

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const byWorkload = new Map();
for (const row of rows) {
  const side = row.impl === 'idemchart' ? 'idemchart' : 'xstate';
  if (!byWorkload.has(row.workload)) byWorkload.set(row.workload, { idemchart: [], xstate: [], events: row.events });
  byWorkload.get(row.workload)[side].push(row.events_per_sec);
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const runs = Math.max(...[...byWorkload.values()].map((w) => Math.max(w.idemchart.length, w.xstate.length)));
console.log(`| workload | events | idemchart events/s | XState events/s | ratio |`);
console.log(`| --- | ---: | ---: | ---: | ---: |`);
for (const [name, w] of [...byWorkload.entries()].sort()) {
  if (w.idemchart.length === 0 || w.xstate.length === 0) {
    console.log(`| ${name} | ${fmt(w.events)} | ${w.idemchart.length ? fmt(median(w.idemchart)) : '–'} | ${w.xstate.length ? fmt(median(w.xstate)) : '–'} | – |`);
    continue;
  }
  const ours = median(w.idemchart);
  const theirs = median(w.xstate);
  console.log(`| ${name} | ${fmt(w.events)} | ${fmt(ours)} | ${fmt(theirs)} | ${(ours / theirs).toFixed(1)}x |`);
}
if (runs > 1) console.log(`\nMedians of ${runs} runs per side.`);
