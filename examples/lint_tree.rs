//! Times `idemchart lint DIR` on a generated web project: 1,000 TypeScript
//! files of mixed sizes, a third of them holding an XState machine, the rest
//! ordinary modules (types, functions, classes). Prints files/s and MB/s for
//! the whole tree, then the time to lint one machine of 500 states.
//!
//! ```text
//! cargo run --release --example lint_tree             # 1,000 files
//! cargo run --release --example lint_tree -- 5000     # another count
//! ```
//!
//! The tree is the same on every run. The walk, the skip of files without a
//! machine, the loading and the linting are those of the command (one
//! thread); the report is rendered as JSON and thrown away. The best of
//! three runs is printed.

use std::fmt::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use idemchart::import::xstate::{self, Settings};

/// Ordinary TypeScript: interfaces, helpers and a class, `units` times over.
fn module(units: usize, seed: usize) -> String {
    let mut out = String::from("import { z } from 'zod';\n\n");
    for u in 0..units {
        let n = seed * 31 + u;
        let _ = write!(
            out,
            "export interface Order{n} {{\n  id: string;\n  lines: {{ sku: string; qty: number }}[];\n  total: number;\n}}\n\n\
             export const orderSchema{n} = z.object({{ id: z.string(), total: z.number().min(0) }});\n\n\
             export function totalOf{n}(order: Order{n}): number {{\n  return order.lines.reduce((sum, line) => sum + line.qty * {price}, 0);\n}}\n\n\
             export class OrderRepository{n} {{\n  private cache = new Map<string, Order{n}>();\n\n  async find(id: string): Promise<Order{n} | undefined> {{\n    if (this.cache.has(id)) {{\n      return this.cache.get(id);\n    }}\n    const response = await fetch(`/orders/${{id}}`);\n    const order = (await response.json()) as Order{n};\n    this.cache.set(id, order);\n    return order;\n  }}\n}}\n\n",
            price = n % 97 + 1,
        );
    }
    out
}

/// An XState v5 machine of `states` states: a workflow of stages of ten
/// steps, each step going on or back within its stage, the last step of a
/// stage on to the next stage, with guards, assigns, an invocation in some
/// steps and a timeout in others, and a final state at the end.
fn machine(states: usize, seed: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "import {{ assign, fromPromise, setup }} from 'xstate';\n\n\
         export const flow{seed} = setup({{\n  actors: {{ charge: fromPromise(async () => ({{ ok: true }})) }},\n  guards: {{\n    enough: ({{ context }}) => context.count >= 3,\n    fresh: ({{ context, event }}) => !context.seen.includes(event.requestId),\n  }},\n  actions: {{\n    remember: assign({{ seen: ({{ context, event }}) => [...context.seen, event.requestId] }}),\n  }},\n}}).createMachine({{\n  id: 'flow{seed}',\n  initial: 's0',\n  context: {{ count: 0, seen: [], total: 0 }},\n  meta: {{ idemchart: {{ events: {{ NEXT: {{ id: 'requestId' }}, BACK: {{ id: 'requestId' }}, ADD: {{ id: 'requestId' }} }}, effects: {{ charge: {{ idempotency: 'key' }} }} }} }},\n  states: {{"
    );
    for i in 0..states {
        let next = if i + 1 == states {
            "done".to_string()
        } else {
            format!("s{}", i + 1)
        };
        let back = if i % 10 == 0 { i } else { i - 1 };
        let _ = write!(
            out,
            "    s{i}: {{\n      on: {{\n        NEXT: {{ target: '{next}', guard: 'fresh', actions: 'remember' }},\n        BACK: 's{back}',\n"
        );
        if i % 10 == 3 {
            out.push_str("        ADD: { actions: assign({ total: ({ context, event }) => context.total + event.amount }) },\n");
        }
        out.push_str("      },\n");
        if i % 10 == 5 {
            let _ = writeln!(
                out,
                "      invoke: {{ src: 'charge', input: ({{ context }}) => ({{ total: context.total }}), onDone: '{next}', onError: 's{back}' }},"
            );
        }
        if i % 10 == 7 {
            let _ = writeln!(out, "      after: {{ 30000: 's{back}' }},");
        }
        out.push_str("    },\n");
    }
    out.push_str("    done: { type: 'final' },\n  },\n});\n");
    out
}

/// Writes the tree under `root`: `count` files, every third a machine.
fn generate(root: &Path, count: usize) -> std::io::Result<u64> {
    let mut bytes = 0;
    for i in 0..count {
        let dir = root.join(format!("src/feature{}", i % 40));
        std::fs::create_dir_all(&dir)?;
        // Sizes from a few hundred bytes to tens of kilobytes.
        let size = [1, 2, 4, 8, 16, 32][i % 6];
        let text = if i % 3 == 0 {
            machine(4 + size * 2, i)
        } else {
            module(size, i)
        };
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("file{i}.ts")), text)?;
    }
    // A node_modules the search must not enter.
    let installed = root.join("node_modules/xstate/dist");
    std::fs::create_dir_all(&installed)?;
    std::fs::write(installed.join("index.js"), machine(20, 0))?;
    Ok(bytes)
}

/// What `idemchart lint --format json DIR` does: the files linted, the
/// machines, the findings.
fn lint_tree(root: &Path) -> (usize, usize, usize) {
    let files = idemchart::load::discover(&[root.to_path_buf()], |_| true).expect("walkable");
    let mut resolver = idemchart::load::Resolver::default();
    let settings = Settings::default();
    let (mut linted, mut machines, mut findings) = (0, 0, 0);
    let mut reports = Vec::new();
    for candidate in files {
        let read = idemchart::load::load_machines(&candidate.path, &settings, &mut resolver);
        let Ok(loaded) = read.expect("readable") else {
            continue;
        };
        linted += 1;
        let mut diagnostics = loaded.errors;
        for m in loaded.machines {
            machines += 1;
            diagnostics.extend(m.notes);
            match m.machine {
                Ok(machine) => diagnostics.extend(idemchart::lint::lint(&machine)),
                Err(errors) => diagnostics.extend(errors),
            }
        }
        for (file, found) in loaded.sources.split(diagnostics) {
            findings += found.len();
            reports.push(idemchart::report::FileReport::new(file, found));
        }
    }
    std::hint::black_box(idemchart::report::json(&reports));
    (linted, machines, findings)
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        last = Some(value);
    }
    (best, last.expect("at least one run"))
}

fn main() -> std::io::Result<()> {
    let count: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("a number of files"))
        .unwrap_or(1000);
    let root = std::env::temp_dir().join(format!("idemchart-lint-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let bytes = generate(&root, count)?;
    let (time, (linted, machines, findings)) = best_of(3, || lint_tree(&root));
    let seconds = time.as_secs_f64();
    println!(
        "tree: {count} files, {:.1} MB; {linted} files with {machines} machines linted, {findings} findings",
        bytes as f64 / 1e6
    );
    println!(
        "  {:.0} ms: {:.0} files/s, {:.1} MB/s",
        seconds * 1e3,
        count as f64 / seconds,
        bytes as f64 / 1e6 / seconds
    );

    let big = machine(500, 1);
    let file = idemchart::SourceFile::new("big.ts", big);
    let (read, machine) = best_of(3, || {
        let loaded = xstate::load(file.clone(), &Settings::default());
        loaded
            .machines
            .into_iter()
            .next()
            .and_then(|m| m.machine.ok())
            .expect("loads")
    });
    let (lint, _) = best_of(3, || idemchart::lint::lint(&machine).len());
    let (time, found) = best_of(3, || {
        let loaded = xstate::load(file.clone(), &Settings::default());
        let machine = loaded.machines[0]
            .machine
            .as_ref()
            .expect("the 500-state machine loads");
        assert_eq!(machine.states.len(), 502);
        idemchart::lint::lint(machine).len()
    });
    println!(
        "500-state machine ({:.0} KB): {:.1} ms to read, lower and lint ({found} findings): {:.1} ms to read and lower, {:.1} ms to lint",
        file.text.len() as f64 / 1e3,
        time.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
        lint.as_secs_f64() * 1e3,
    );
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
