//! Generated machines for the speed examples (`lint_speed`, `lsp_speed`)
//! and the language server's tests of large files: about five transitions
//! per state, in nested and parallel parts, the same for a seed on every
//! run; and the `regions` shape of issue 31.

#![allow(dead_code)]

use std::fmt::Write;

/// xorshift64*: small, deterministic, good enough to shape a test machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Sibling leaves, which transitions mostly stay within (targets are
/// written relative, by sibling name, as people write them).
struct Group {
    leaves: Vec<usize>,
    /// A compound sibling of the leaves, entered by default.
    nested: Option<usize>,
}

/// The DSL text of a machine with about `states` states.
pub fn generate(states: usize, seed: u64) -> String {
    let mut rng = Rng(seed | 1);
    let events = (states / 20).max(20);
    let mut out = String::new();
    writeln!(out, "machine generated{states}").unwrap();
    out.push_str("context { n = 0\n seen = [] }\n");
    out.push_str("source hooks retry 3d\ndedup retention 7d\n");
    for e in 0..events {
        writeln!(
            out,
            "event E{e}(eid: string, amount: number) id eid from hooks"
        )
        .unwrap();
    }
    out.push_str("effect notify idempotent key\neffect lookup idempotent natural\n");

    // Plan the shape first: modules of 40-60 states, a third of them
    // parallel with regions, the others compound with a nested compound.
    let mut next_id = 0usize;
    let mut fresh = || {
        next_id += 1;
        next_id
    };
    enum Module {
        Compound {
            id: usize,
            leaves: Vec<usize>,
            nested: (usize, Vec<usize>),
        },
        Parallel {
            id: usize,
            regions: Vec<(usize, Vec<usize>)>,
        },
    }
    let mut modules = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    let mut planned = 0;
    while planned < states {
        if rng.chance(30) {
            let id = fresh();
            let regions: Vec<(usize, Vec<usize>)> = (0..2 + rng.below(2))
                .map(|_| (fresh(), (0..8 + rng.below(8)).map(|_| fresh()).collect()))
                .collect();
            planned += 1 + regions.iter().map(|(_, l)| 1 + l.len()).sum::<usize>();
            for (_, leaves) in &regions {
                groups.push(Group {
                    leaves: leaves.clone(),
                    nested: None,
                });
            }
            modules.push(Module::Parallel { id, regions });
        } else {
            let id = fresh();
            let leaves: Vec<usize> = (0..20 + rng.below(20)).map(|_| fresh()).collect();
            let nested = (
                fresh(),
                (0..8 + rng.below(8)).map(|_| fresh()).collect::<Vec<_>>(),
            );
            planned += 2 + leaves.len() + nested.1.len();
            groups.push(Group {
                leaves: leaves.clone(),
                nested: Some(nested.0),
            });
            groups.push(Group {
                leaves: nested.1.clone(),
                nested: None,
            });
            modules.push(Module::Compound { id, leaves, nested });
        }
    }
    let module_ids: Vec<usize> = modules
        .iter()
        .map(|m| match m {
            Module::Compound { id, .. } | Module::Parallel { id, .. } => *id,
        })
        .collect();
    let group_of_leaf = {
        let mut map = vec![usize::MAX; next_id + 1];
        for (g, group) in groups.iter().enumerate() {
            for &l in &group.leaves {
                map[l] = g;
            }
        }
        map
    };

    // A leaf's transitions: mostly to its siblings, some into a nested
    // compound state, some targetless updates, some guarded by identity.
    // Moves between modules are the modules' own transitions, which every
    // state inside inherits.
    let leaf = |rng: &mut Rng, out: &mut String, s: usize, indent: &str| {
        let group = &groups[group_of_leaf[s]];
        writeln!(out, "{indent}state s{s} {{").unwrap();
        let count = 4 + rng.below(3);
        for _ in 0..count {
            let e = rng.below(events);
            let roll = rng.below(100);
            if roll < 65 {
                let t = group.leaves[rng.below(group.leaves.len())];
                if rng.chance(20) {
                    writeln!(
                        out,
                        "{indent}  on E{e} -> s{t} if !(event.eid in context.seen) {{ seen = context.seen + [event.eid] }}"
                    )
                    .unwrap();
                } else {
                    writeln!(out, "{indent}  on E{e} -> s{t}").unwrap();
                }
            } else if roll < 85 {
                let t = match group.nested {
                    Some(n) => n,
                    None => group.leaves[rng.below(group.leaves.len())],
                };
                writeln!(out, "{indent}  on E{e} -> s{t} {{ notify }}").unwrap();
            } else if roll < 95 {
                writeln!(out, "{indent}  on E{e} {{ n = context.n + event.amount }}").unwrap();
            } else {
                writeln!(out, "{indent}  on E{e} {{ log \"seen\" }}").unwrap();
            }
        }
        if rng.chance(10) {
            let t = group.leaves[rng.below(group.leaves.len())];
            writeln!(out, "{indent}  after 30s -> s{t}").unwrap();
        }
        if rng.chance(5) {
            let t = group.leaves[rng.below(group.leaves.len())];
            writeln!(
                out,
                "{indent}  always -> s{t} if context.n > 100 {{ n = 0 }}"
            )
            .unwrap();
        }
        writeln!(out, "{indent}}}").unwrap();
    };

    writeln!(out, "initial s{}", module_ids[0]).unwrap();
    for module in &modules {
        match module {
            Module::Compound { id, leaves, nested } => {
                writeln!(out, "state s{id} {{").unwrap();
                writeln!(out, "  initial s{}", leaves[0]).unwrap();
                entry_and_module_transitions(&mut rng, &mut out, &module_ids, events);
                for &l in leaves {
                    leaf(&mut rng, &mut out, l, "  ");
                }
                writeln!(out, "  state s{} {{", nested.0).unwrap();
                writeln!(out, "    initial s{}", nested.1[0]).unwrap();
                // Back out of the nested state, to a sibling of it.
                let back = leaves[rng.below(leaves.len())];
                writeln!(out, "    on E{} -> s{back}", rng.below(events)).unwrap();
                for &l in &nested.1 {
                    leaf(&mut rng, &mut out, l, "    ");
                }
                out.push_str("  }\n}\n");
            }
            Module::Parallel { id, regions } => {
                writeln!(out, "parallel s{id} {{").unwrap();
                entry_and_module_transitions(&mut rng, &mut out, &module_ids, events);
                for (region, leaves) in regions {
                    writeln!(out, "  state s{region} {{").unwrap();
                    writeln!(out, "    initial s{}", leaves[0]).unwrap();
                    for &l in leaves {
                        leaf(&mut rng, &mut out, l, "    ");
                    }
                    out.push_str("  }\n");
                }
                out.push_str("}\n");
            }
        }
    }
    out
}

/// Transitions on a module, which apply in all its states.
fn entry_and_module_transitions(rng: &mut Rng, out: &mut String, modules: &[usize], events: usize) {
    if rng.chance(30) {
        out.push_str("  entry lookup\n");
    }
    for _ in 0..2 {
        let e = rng.below(events);
        let m = modules[rng.below(modules.len())];
        writeln!(out, "  on E{e} -> s{m}").unwrap();
    }
}

/// The `regions` machine of about `states` states, as YAML.
pub fn regions(states: usize) -> String {
    let groups = (states / 5).max(1);
    let mut out =
        String::from("machine: regions\ncontext: { n: 0, seen: [], total: 0 }\nevents:\n");
    for k in 0..4 {
        out.push_str(&format!(
            "  E{k}: {{ id: eid, payload: {{ eid: string, amount: number }} }}\n"
        ));
    }
    out.push_str("initial: g0\nstates:\n");
    for g in 0..groups {
        let next = (g + 1) % groups;
        out.push_str(&format!(
            "  g{g}:
    initial: a
    states:
      a:
        on:
          E0: {{ actions: [{{ assign: {{ n: \"context.n + 1\" }} }}] }}
          E1: b
      b:
        on:
          E2: {{ target: c, actions: [{{ assign: {{ seen: \"context.seen + [event.eid]\" }} }}] }}
          E0: {{ guard: \"!(event.eid in context.seen)\", actions: [{{ assign: {{ total: \"context.total + event.amount\" }} }}] }}
      c:
        after:
          30s: d
        on:
          E3: a
      d: {{}}
    on:
      E3: g{next}
"
        ));
    }
    out
}
