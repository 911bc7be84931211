//! The machines in `machines/` load, and keep the idempotency policies their
//! comments promise: every event can be deduplicated, ids are remembered at
//! least as long as any sender may redeliver, every effect whose receiver
//! cannot recognise a repeat has a verification state, and no action is an
//! undeclared host action of unknown idempotency.

use std::path::{Path, PathBuf};

use idemchart::Machine;
use idemchart::model::{Action, Idempotency};
use idemchart::span::SourceFile;
use idemchart::syntax;

fn machine_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("machines");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("machines/")
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| syntax::Syntax::of_path(path).is_some())
        .collect();
    files.sort();
    files
}

fn load(path: &Path) -> Machine {
    let text = std::fs::read_to_string(path).expect("readable machine file");
    let file = SourceFile::new(path.display().to_string(), text);
    idemchart::load::load(&file).unwrap_or_else(|errors| panic!("{}: {errors:#?}", path.display()))
}

fn all_actions(machine: &Machine) -> impl Iterator<Item = &Action> {
    let states = machine
        .states
        .iter()
        .flat_map(|s| s.entry.iter().chain(&s.exit));
    states.chain(machine.transitions.iter().flat_map(|t| &t.actions))
}

#[test]
fn every_machine_loads() {
    let files = machine_files();
    assert!(files.len() >= 5, "{files:?}");
    for path in files {
        load(&path);
    }
}

#[test]
fn the_order_is_the_same_machine_in_both_syntaxes() {
    // `machines/` holds one file per machine (so `serve --machines machines/`
    // serves it); the DSL twin is the specification's copy.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        load(&root.join("machines/pedido.yaml")),
        load(&root.join("tests/data/spec/pedido.chart"))
    );
}

/// The README's tour shows `examples/orders/` in both syntaxes as one machine.
#[test]
fn the_readme_order_is_the_same_machine_in_both_syntaxes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/orders");
    assert_eq!(
        load(&dir.join("order.yaml")),
        load(&dir.join("order.chart"))
    );
}

#[test]
fn every_machine_keeps_its_idempotency_policies() {
    for path in machine_files() {
        let machine = load(&path);
        let name = path.display();
        for (event, decl) in &machine.events {
            assert!(decl.id_field.is_some(), "{name}: {event} has no id");
        }
        if !machine.sources.is_empty() {
            let retention = machine
                .dedup
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: sources but no dedup.retention"))
                .retention;
            for (source, decl) in &machine.sources {
                let horizon = decl
                    .retry_horizon
                    .unwrap_or_else(|| panic!("{name}: {source} has no retry_horizon"));
                assert!(
                    retention >= horizon,
                    "{name}: retention {retention} < {source}'s {horizon}"
                );
            }
        }
        for (effect, decl) in &machine.effects {
            if decl.idempotency == Idempotency::None {
                assert!(
                    decl.verify.is_some(),
                    "{name}: {effect} has no verify state"
                );
            }
        }
        for action in all_actions(&machine) {
            if let Action::Host { name: host, .. } = action {
                panic!("{name}: `{}` is not a declared effect", host.text);
            }
        }
    }
}

/// Drives one machine of `machines/` the way its comments describe, with no
/// deduplication in front of it: what these runs show is what still protects
/// the machine after the runtime has forgotten an event's id.
struct Run {
    actor: idemchart::interp::Actor,
}

impl Run {
    fn new(file: &str) -> Run {
        let machine = load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("machines")
                .join(file),
        );
        let chart = std::sync::Arc::new(idemchart::interp::Chart::new(machine));
        Run {
            actor: idemchart::interp::Actor::new(chart),
        }
    }

    /// Sends an event whose payload `data` holds its id field, and returns the
    /// step's effects; `None` when the machine ignored the event.
    fn send(&mut self, name: &str, data: serde_json::Value) -> Option<Vec<String>> {
        let machine = self.actor.chart().machine();
        let id_field = machine.events[name].id_field.as_ref().expect("an id field");
        let id = data.get(&id_field.text).map(idemchart::expr::Value::from);
        let event = idemchart::expr::Event::new(name, id, idemchart::expr::Value::from(&data));
        let step = self.actor.send(&event);
        assert!(step.errors.is_empty(), "{name}: {:?}", step.errors);
        (!step.ignored).then(|| step.effects.iter().map(|e| e.name.to_string()).collect())
    }

    fn wait(&mut self, delay: &str) -> Vec<String> {
        let delay = idemchart::model::Duration::parse(delay).expect("a duration");
        let now = self.actor.now() + delay.millis;
        let step = self.actor.advance_to(now);
        step.effects.iter().map(|e| e.name.to_string()).collect()
    }

    fn at(&self) -> Vec<String> {
        self.actor.configuration_paths()
    }

    fn context(&self) -> serde_json::Value {
        self.actor.context().to_json()
    }
}

fn effects(names: &[&str]) -> Option<Vec<String>> {
    Some(names.iter().map(|n| n.to_string()).collect())
}

#[test]
fn the_charge_asks_before_it_retries_and_ignores_an_old_no() {
    use serde_json::json;
    let mut run = Run::new("cobro.yaml");
    let order = json!({ "pedidoId": "p1", "importe": 30 });
    assert_eq!(run.send("COBRAR", order.clone()), effects(&["cobrar"]));
    assert_eq!(run.send("COBRAR", order), None);
    // No answer: verify, do not charge.
    assert_eq!(run.wait("30s"), ["consultarCobro"]);
    assert_eq!(run.at(), ["verificando"]);
    assert_eq!(
        run.send("NO_EXISTE", json!({ "consultaId": "q1" })),
        effects(&["cobrar"])
    );
    assert_eq!(run.wait("30s"), ["consultarCobro"]);
    // The first "no" again, during the second verification: no third charge.
    assert_eq!(run.send("NO_EXISTE", json!({ "consultaId": "q1" })), None);
    assert_eq!(run.at(), ["verificando"]);
    assert_eq!(
        run.send("NO_EXISTE", json!({ "consultaId": "q2" })),
        effects(&["cobrar"])
    );
    assert_eq!(run.wait("30s"), ["consultarCobro"]);
    // Two retries at most.
    assert_eq!(
        run.send("NO_EXISTE", json!({ "consultaId": "q3" })),
        effects(&[])
    );
    assert_eq!(run.at(), ["fallido"]);
    let late = json!({ "cobroId": "c1", "referencia": "r" });
    assert_eq!(run.send("COBRO_OK", late), None);
}

#[test]
fn the_charge_takes_the_late_answer_during_verification() {
    use serde_json::json;
    let mut run = Run::new("cobro.yaml");
    run.send("COBRAR", json!({ "pedidoId": "p1", "importe": 30 }));
    run.wait("30s");
    let ok = json!({ "cobroId": "c1", "referencia": "ref-1" });
    assert_eq!(run.send("COBRO_OK", ok.clone()), effects(&[]));
    assert_eq!(run.at(), ["cobrado"]);
    assert_eq!(run.context()["referencia"], "ref-1");
    assert_eq!(run.send("COBRO_OK", ok), None);
}

#[test]
fn the_subscription_counts_each_renewal_once() {
    use serde_json::json;
    let mut run = Run::new("suscripcion.yaml");
    let alta = json!({ "altaId": "a1", "plan": "pro" });
    assert_eq!(run.send("ALTA", alta), effects(&["enviarBienvenida"]));
    let r1 = json!({ "renovacionId": "r1", "importe": 10 });
    assert_eq!(run.send("RENOVADA", r1.clone()), effects(&["enviarRecibo"]));
    let after_first = run.context();
    assert_eq!(run.send("RENOVADA", r1.clone()), None);
    assert_eq!(run.context(), after_first);
    let f1 = json!({ "intentoId": "f1" });
    assert_eq!(
        run.send("PAGO_FALLIDO", f1.clone()),
        effects(&["avisarImpago"])
    );
    // A further failure in the grace period: recorded, no second notice.
    let f2 = json!({ "intentoId": "f2" });
    assert_eq!(run.send("PAGO_FALLIDO", f2), effects(&[]));
    assert_eq!(run.at(), ["vigente.impagada"]);
    let r2 = json!({ "renovacionId": "r2", "importe": 15 });
    assert_eq!(run.send("RENOVADA", r2), effects(&["enviarRecibo"]));
    // An old failure, redelivered late, does not move a paying customer back.
    assert_eq!(run.send("PAGO_FALLIDO", f1), None);
    assert_eq!(run.send("RENOVADA", r1), None);
    assert_eq!(run.at(), ["vigente.activa"]);
    assert_eq!(run.context()["periodosPagados"], 2);
    assert_eq!(run.context()["importeCobrado"], 25);
}

#[test]
fn the_subscription_ends_after_the_grace_period() {
    use serde_json::json;
    let mut run = Run::new("suscripcion.yaml");
    run.send("ALTA", json!({ "altaId": "a1", "plan": "pro" }));
    run.send("PAGO_FALLIDO", json!({ "intentoId": "f1" }));
    assert_eq!(run.wait("14d"), ["revocarAcceso"]);
    assert_eq!(run.at(), ["cancelada"]);
    assert_eq!(
        run.send("RENOVADA", json!({ "renovacionId": "r1", "importe": 10 })),
        None
    );
}

#[test]
fn the_shipment_ignores_yesterdays_out_for_delivery() {
    use serde_json::json;
    let mut run = Run::new("envio.yaml");
    let order = json!({ "pedidoId": "p1", "direccion": { "calle": "Mayor 1" } });
    assert_eq!(
        run.send("PREPARAR", order.clone()),
        effects(&["comprarEtiqueta"])
    );
    assert_eq!(run.send("PREPARAR", order), None);
    let label = json!({ "etiquetaId": "l1", "seguimiento": "TRK1" });
    assert_eq!(run.send("ETIQUETA_LISTA", label.clone()), effects(&[]));
    assert_eq!(run.send("ETIQUETA_LISTA", label), None);
    assert_eq!(
        run.send("RECOGIDO", json!({ "eventoId": "e1" })),
        effects(&[])
    );
    let out = json!({ "eventoId": "e2" });
    assert_eq!(
        run.send("EN_REPARTO", out.clone()),
        effects(&["avisarCliente"])
    );
    let failed = json!({ "eventoId": "e3", "motivo": "ausente" });
    assert_eq!(
        run.send("INTENTO_FALLIDO", failed.clone()),
        effects(&["avisarCliente"])
    );
    assert_eq!(run.at(), ["enCamino.enTransito"]);
    // Yesterday's webhooks, redelivered: no notice, no move.
    assert_eq!(run.send("EN_REPARTO", out), None);
    assert_eq!(run.send("INTENTO_FALLIDO", failed), None);
    assert_eq!(run.at(), ["enCamino.enTransito"]);
    let out_again = json!({ "eventoId": "e4" });
    assert_eq!(
        run.send("EN_REPARTO", out_again),
        effects(&["avisarCliente"])
    );
    let delivered = json!({ "eventoId": "e5" });
    assert_eq!(
        run.send("ENTREGADO", delivered.clone()),
        effects(&["avisarCliente"])
    );
    assert_eq!(run.at(), ["entregado"]);
    assert_eq!(run.send("ENTREGADO", delivered), None);
}
