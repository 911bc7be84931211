//! The direct JSON codec (`Actor::snapshot_json`, `Actor::restore_json`)
//! against the serde route (`serde_json` over `Snapshot`, then
//! `Actor::restore`): the same bytes out, the same actors in, the same
//! texts refused.

use crate::common;

use std::sync::Arc;

use idemchart::expr::{Event, Value};
use idemchart::interp::{
    Actor, Chart, InvocationSnapshot, Snapshot, SnapshotJsonError, TimerSnapshot,
};
use idemchart::syntax::{Syntax, parse};
use indexmap::IndexMap;
use proptest::prelude::*;

/// A machine with nesting, deep history, a delayed transition, a delayed
/// send with data and an id, and an invocation, so that snapshots carry
/// every field.
const MACHINE: &str = r#"
machine: m
version: 3
context: { n: 0, items: [], label: "x" }
initial: a
states:
  a:
    initial: a1
    on:
      GO: b
      TICK: { actions: [ { assign: { n: "context.n + 1" } } ] }
    states:
      a1:
        on: { GO: a2 }
        after: { 5s: a2 }
        invoke: { src: lookup, input: { n: "context.n" } }
      a2:
        entry:
          - { send: TICK, data: { k: "context.n" }, delay: 1s, id: t1 }
      h: { type: history, history: deep }
  b:
    on: { GO: a.h }
    invoke: [ { src: lookup } ]
"#;

fn chart() -> Arc<Chart> {
    Arc::new(Chart::new(
        parse(MACHINE, Syntax::Yaml).expect("the test machine loads"),
    ))
}

/// What a text gives on either route: an actor's snapshot, a JSON error, or
/// a restore error.
#[derive(Debug)]
enum Outcome {
    Restored(Snapshot),
    Json,
    Restore(idemchart::interp::RestoreError),
}

fn through_serde(chart: &Arc<Chart>, text: &str) -> Outcome {
    match serde_json::from_str::<Snapshot>(text) {
        Err(_) => Outcome::Json,
        Ok(snapshot) => match Actor::restore(Arc::clone(chart), &snapshot) {
            Ok(actor) => Outcome::Restored(actor.snapshot()),
            Err(error) => Outcome::Restore(error),
        },
    }
}

fn through_codec(chart: &Arc<Chart>, text: &str) -> Outcome {
    match Actor::restore_json(Arc::clone(chart), text) {
        Ok(actor) => Outcome::Restored(actor.snapshot()),
        Err(SnapshotJsonError::Syntax { .. }) => Outcome::Json,
        Err(SnapshotJsonError::Restore(error)) => Outcome::Restore(error),
    }
}

/// Whether two JSON values are equal, doubles within a few units in the last
/// place: serde_json (without `float_roundtrip`) may read a long or
/// far-exponent double one unit off, where the codec reads it exactly.
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (a, b) {
        (J::Number(x), J::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x - y).abs() <= 1e-14 * x.abs().max(y.abs())
        }
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| close(a, b))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, a), (l, b))| k == l && close(a, b))
        }
        _ => a == b,
    }
}

#[track_caller]
fn assert_same(chart: &Arc<Chart>, text: &str) {
    let serde = through_serde(chart, text);
    let codec = through_codec(chart, text);
    match (&serde, &codec) {
        (Outcome::Restored(a), Outcome::Restored(b)) => {
            let (a, b) = (
                serde_json::to_value(a).unwrap(),
                serde_json::to_value(b).unwrap(),
            );
            assert!(close(&a, &b), "{text}\nserde: {a}\ncodec: {b}");
        }
        (Outcome::Json, Outcome::Json) => {}
        (Outcome::Restore(a), Outcome::Restore(b)) => assert_eq!(a, b, "{text}"),
        _ => panic!("{text}\nserde: {serde:?}\ncodec: {codec:?}"),
    }
}

// Random actors.

/// Strings with escapes, control characters and non-ASCII text.
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{0,5}",
        "[\"\\\\/\\x00-\\x1f\\x7f a-zé€😀]{0,12}",
        any::<String>(),
    ]
}

/// Doubles that serde_json reads exactly too (short mantissas, exponents
/// within the exact powers of ten), or any double at all.
fn double(any_bits: bool) -> BoxedStrategy<f64> {
    if any_bits {
        any::<f64>().boxed()
    } else {
        prop_oneof![
            (-100_000_000i64..100_000_000, 0u32..7)
                .prop_map(|(m, k)| m as f64 / 10f64.powi(k as i32)),
            Just(-0.0),
            Just(1e300),
            Just(0.1),
        ]
        .boxed()
    }
}

fn value(any_bits: bool) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-5i64..5).prop_map(Value::Int),
        double(any_bits).prop_map(Value::Double),
        string().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
            prop::collection::vec((string(), inner), 0..5).prop_map(|entries| {
                // Keys are made unique, as a map holds them.
                let mut map = IndexMap::new();
                for (k, v) in entries {
                    map.insert(k, v);
                }
                Value::map(map)
            }),
        ]
    })
}

/// A snapshot of the test machine, as `Actor::restore` accepts it (not
/// necessarily a configuration the machine could reach: the codec does not
/// care).
fn snapshot(any_bits: bool) -> impl Strategy<Value = Snapshot> {
    let leaves = prop::sample::subsequence(vec!["a.a1", "a.a2", "b"], 0..=2);
    let history = prop::option::of(prop::sample::subsequence(vec!["a.a1", "a.a2"], 0..=2));
    let timer = prop_oneof![
        (any::<u64>(), any::<u64>()).prop_map(|(due, seq)| TimerSnapshot::After {
            state: "a.a1".into(),
            after: 0,
            due,
            seq: seq % (u64::MAX - 1),
        }),
        (
            string(),
            prop::option::of(value(any_bits)),
            prop::option::of(string()),
            any::<u64>(),
            0u64..1000
        )
            .prop_map(|(event, data, id, due, seq)| TimerSnapshot::Send {
                event,
                // `None` and a null payload are the same pending event.
                data: data.filter(|d| *d != Value::Null),
                id,
                due,
                seq
            }),
    ];
    let invocation = (
        prop::sample::select(vec!["a.a1", "b"]),
        prop::option::of(value(any_bits)),
        prop::option::of(string()),
    )
        .prop_map(|(state, input, key)| InvocationSnapshot {
            state: state.into(),
            id: "lookup".into(),
            // `None` and a null input are the same invocation.
            input: input.filter(|i| *i != Value::Null),
            key,
        });
    (
        leaves,
        history,
        (value(any_bits), value(any_bits), value(any_bits)),
        (
            prop::collection::vec(timer, 0..3),
            prop::collection::vec(invocation, 0..2),
        ),
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(
            |(leaves, history, (n, items, label), (timers, invocations), now, done)| Snapshot {
                format: 1,
                machine: "m".into(),
                version: Some(3),
                status: if done {
                    idemchart::interp::Status::Done
                } else {
                    idemchart::interp::Status::Active
                },
                configuration: leaves.into_iter().map(String::from).collect(),
                history: history
                    .map(|paths| {
                        [(
                            "a.h".to_string(),
                            paths.into_iter().map(String::from).collect(),
                        )]
                        .into_iter()
                        .collect()
                    })
                    .unwrap_or_default(),
                context: Value::map([("n", n), ("items", items), ("label", label)]),
                timers,
                invocations,
                now,
                semantics: idemchart::model::Semantics::Scxml,
            },
        )
}

/// An actor of a random machine after random events, its context fields
/// set to random values first (the machines only compare, append to and log
/// them, so any value may fail an expression but never breaks a step).
fn random_actor(seed: u64, events: &[(usize, u8)], label: Value, seen: Vec<Value>) -> Actor {
    let chart = Arc::new(Chart::new(common::machine(seed)).with_microstep_limit(200));
    let context = Value::map([("label", label), ("seen", Value::list(seen))]);
    let mut actor = Actor::with_context(chart, &context, 0).expect("the fields exist");
    for (i, (e, k)) in events.iter().enumerate() {
        if i % 3 == 2 {
            actor.advance_to(actor.now() + 700 * u64::from(*k));
        } else {
            let key = Value::from(format!("k{k}"));
            let data = Value::map([("k", key.clone()), ("v", Value::Int(i64::from(*k)))]);
            actor.send(&Event::new(common::EVENTS[*e], Some(key), data));
        }
    }
    actor
}

fn events() -> impl Strategy<Value = Vec<(usize, u8)>> {
    prop::collection::vec((0..common::EVENTS.len(), 0u8..4), 0..16)
}

/// The top-level keys in reverse order, and each timer's too.
fn reordered(text: &str) -> String {
    fn reverse(
        map: &serde_json::Map<String, serde_json::Value>,
    ) -> serde_json::Map<String, serde_json::Value> {
        map.iter()
            .rev()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
    let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
    if let Some(timers) = json.get_mut("timers").and_then(|t| t.as_array_mut()) {
        for timer in timers.iter_mut() {
            if let Some(map) = timer.as_object() {
                *timer = serde_json::Value::Object(reverse(map));
            }
        }
    }
    let map = json.as_object().unwrap();
    serde_json::to_string(&serde_json::Value::Object(reverse(map))).unwrap()
}

/// Cuts, changes, drops or adds one byte of `text`, keeping it UTF-8.
fn mutate(text: &str, how: u8, at: usize, byte: u8) -> Option<String> {
    let mut bytes = text.as_bytes().to_vec();
    let at = at % (bytes.len() + 1);
    match how % 4 {
        0 => bytes.truncate(at),
        1 if at < bytes.len() => bytes[at] = byte,
        2 if at < bytes.len() => {
            bytes.remove(at);
        }
        _ => bytes.insert(at, byte),
    }
    String::from_utf8(bytes).ok()
}

/// Bytes that matter to JSON, mostly, and now and then any.
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        prop::sample::select(b"{}[]\",:0123456789-+.eEtrufalsn\\ \n/xu".to_vec()),
        any::<u8>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn writes_the_bytes_serde_writes(snapshot in snapshot(true)) {
        let chart = chart();
        let actor = Actor::restore(Arc::clone(&chart), &snapshot).unwrap();
        let text = actor.snapshot_json();
        prop_assert_eq!(&text, &serde_json::to_string(&actor.snapshot()).unwrap());
        // The codec reads its own text back exactly, every double bit for bit.
        let again = Actor::restore_json(chart, &text).unwrap();
        prop_assert_eq!(again.snapshot_json(), text);
    }

    #[test]
    fn writes_random_actors_as_serde_does(
        seed in any::<u64>(),
        events in events(),
        label in value(true),
        seen in prop::collection::vec(value(true), 0..4),
    ) {
        let actor = random_actor(seed, &events, label, seen);
        let text = actor.snapshot_json();
        prop_assert_eq!(&text, &serde_json::to_string(&actor.snapshot()).unwrap());
        let mut buffer = String::from("kept:");
        actor.write_snapshot_json(&mut buffer);
        prop_assert_eq!(&buffer[5..], &text[..]);
        let again = Actor::restore_json(Arc::clone(actor.chart()), &text).unwrap();
        prop_assert_eq!(again.snapshot_json(), text);
    }

    #[test]
    fn restores_what_serde_restores(snapshot in snapshot(false)) {
        let chart = chart();
        let compact = serde_json::to_string(&snapshot).unwrap();
        for text in [
            compact.clone(),
            serde_json::to_string_pretty(&snapshot).unwrap(),
            reordered(&compact),
        ] {
            let serde = through_serde(&chart, &text);
            prop_assert!(matches!(serde, Outcome::Restored(_)), "{}: {:?}", text, serde);
            assert_same(&chart, &text);
        }
    }

    #[test]
    fn restores_random_actors_as_serde_does(
        seed in any::<u64>(),
        events in events(),
        label in value(false),
        seen in prop::collection::vec(value(false), 0..4),
    ) {
        let actor = random_actor(seed, &events, label, seen);
        let chart = Arc::clone(actor.chart());
        let compact = actor.snapshot_json();
        let pretty = serde_json::to_string_pretty(&actor.snapshot()).unwrap();
        for text in [reordered(&compact), pretty, compact] {
            assert_same(&chart, &text);
            let restored = Actor::restore_json(Arc::clone(&chart), &text).unwrap();
            prop_assert_eq!(restored.snapshot(), actor.snapshot());
        }
    }

    /// An actor reloaded with another's snapshot is the restored actor:
    /// the same snapshot, and the same steps and snapshots after the same
    /// events, whatever it held before (history, timers, a list whose
    /// memory the reader reuses). A text that does not restore fails
    /// alike and leaves a new actor.
    #[test]
    fn reloads_as_it_restores(
        seed in any::<u64>(),
        before in events(),
        events in events(),
        after in events(),
        label in value(false),
        seen in prop::collection::vec(value(false), 0..4),
        cut in prop::option::of((any::<u8>(), any::<usize>(), byte())),
    ) {
        let mut reloaded = random_actor(seed, &before, label.clone(), seen.clone());
        let other = random_actor(seed, &events, label, seen);
        let chart = Arc::clone(other.chart());
        let mut text = other.snapshot_json();
        if let Some((how, at, byte)) = cut
            && let Some(mutated) = mutate(&text, how, at, byte)
        {
            text = mutated;
        }
        let restored = Actor::restore_json(Arc::clone(&chart), &text);
        let reload = reloaded.reload_json(&text);
        let mut restored = match (restored, reload) {
            (Ok(restored), Ok(())) => restored,
            (Err(a), Err(b)) => {
                prop_assert_eq!(a, b);
                Actor::new(Arc::clone(&chart))
            }
            (a, b) => return Err(TestCaseError::fail(format!("{text}: {a:?} against {b:?}"))),
        };
        prop_assert_eq!(reloaded.snapshot_json(), restored.snapshot_json());
        prop_assert_eq!(reloaded.fingerprint(), restored.fingerprint());
        for (i, (e, k)) in after.iter().enumerate() {
            if i % 3 == 2 {
                let now = restored.now() + 700 * u64::from(*k);
                prop_assert_eq!(reloaded.advance_to(now), restored.advance_to(now));
            } else {
                let key = Value::from(format!("k{k}"));
                let data = Value::map([("k", key.clone()), ("v", Value::Int(i64::from(*k)))]);
                let event = Event::new(common::EVENTS[*e], Some(key), data);
                prop_assert_eq!(reloaded.send(&event), restored.send(&event));
            }
            prop_assert_eq!(reloaded.snapshot_json(), restored.snapshot_json());
        }
    }

    #[test]
    fn refuses_what_serde_refuses(
        snapshot in snapshot(false),
        pretty in any::<bool>(),
        cuts in prop::collection::vec((any::<u8>(), any::<usize>(), byte()), 1..3),
    ) {
        let chart = chart();
        let mut text = if pretty {
            serde_json::to_string_pretty(&snapshot).unwrap()
        } else {
            serde_json::to_string(&snapshot).unwrap()
        };
        for (how, at, byte) in cuts {
            if let Some(mutated) = mutate(&text, how, at, byte) {
                text = mutated;
            }
        }
        assert_same(&chart, &text);
    }
}

/// Texts that take serde's less travelled paths: each gives the same on
/// both routes.
#[test]
fn agrees_with_serde_on_odd_texts() {
    let chart = chart();
    let base = r#""format":1,"machine":"m","version":3,"status":"active","configuration":["a.a1"],"context":{"n":0,"items":[],"label":"x"}"#;
    let with = |extra: &str| format!("{{{base}{extra}}}");
    let send = |fields: &str| with(&format!(r#","timers":[{{{fields}}}]"#));
    let cases = [
        with(""),
        with(" "),
        format!(" \n\t{{ {base} }} \r\n"),
        // The list form of the snapshot and of a timer.
        r#"[1,"m",3,"active",["a.a1"],{},{"n":0,"items":[],"label":"x"}]"#.to_string(),
        r#"[1,"m",3,"active",["a.a1"],{},{"n":0,"items":[],"label":"x"},[],7]"#.to_string(),
        r#"[1,"m",3,"active",["a.a1"],{},{"n":0,"items":[],"label":"x"},[],7,8]"#.to_string(),
        r#"[1,"m"]"#.to_string(),
        r#"[]"#.to_string(),
        with(r#","timers":[["after","a.a1",0,1,2]]"#),
        with(r#","timers":[["send","E",{"a":1},"i",1,2]]"#),
        with(r#","timers":[["send","E",null,null,1,2,3]]"#),
        with(r#","timers":[["send","E"]]"#),
        with(r#","timers":[[]]"#),
        // `status` as a map to null.
        format!(
            r#"{{"status":{{"done":null}},{}}}"#,
            &base[..base.len()].replace(r#""status":"active","#, "")
        ),
        format!(
            r#"{{"status":{{"done":1}},{}}}"#,
            base.replace(r#""status":"active","#, "")
        ),
        format!(
            r#"{{"status":{{}},{}}}"#,
            base.replace(r#""status":"active","#, "")
        ),
        format!(
            r#"{{"status":"Active",{}}}"#,
            base.replace(r#""status":"active","#, "")
        ),
        // Unknown fields: skipped at the top, read in full inside a timer.
        with(r#","zz":{"a":1e999,"a":"\ud800","b":[[[]]]}"#),
        send(r#""kind":"send","event":"E","due":1,"seq":2,"zz":{"k":1,"k":2}"#),
        send(r#""kind":"send","event":"E","due":1,"seq":2,"zz":1e999"#),
        send(r#""kind":"send","event":"E","due":1,"seq":2,"zz":"\ud800""#),
        send(r#""event":"E","due":1,"seq":2,"kind":"send""#),
        send(r#""kind":"after","state":"a.a1","after":0,"due":1,"seq":2,"data":5"#),
        send(r#""kind":"after","state":"a.a1","after":1,"due":1,"seq":2"#),
        send(r#""kind":"after","state":"a.zz","after":0,"due":1,"seq":2"#),
        send(r#""kind":"send","event":"E","data":null,"id":null,"due":1,"seq":2"#),
        send(r#""kind":"send","event":"E","data":{"a":1,"a":2},"due":1,"seq":2"#),
        send(r#""kind":"send","event":"E","due":1.0,"seq":2"#),
        send(r#""kind":"send","event":"E","due":1,"seq":2,"due":3"#),
        send(r#""kind":"send","kind":"send","event":"E","due":1,"seq":2"#),
        send(r#""kind":0,"event":"E","due":1,"seq":2"#),
        send(r#""kind":"Send","event":"E","due":1,"seq":2"#),
        send(r#""event":"E","due":1,"seq":2"#),
        send(r#""kind":"send","event":"E","seq":2"#),
        send(r#""kind":"send","event":null,"due":1,"seq":2"#),
        send(r#""kind":"send","event":"E","id":5,"due":1,"seq":2"#),
        send(r#""k\u0069nd":"send","event":"\u00e9\ud83d\ude00","id":"\n","due":1,"seq":2"#),
        // Repeated and missing fields, wrong types, defaults.
        with(r#","format":1"#),
        with(r#","history":{"a.h":["a.a1"],"a.h":["a.a2"]}"#),
        with(r#","history":{"a.h":["a.zz"]}"#),
        with(r#","history":{"a.zz":[]}"#),
        with(r#","history":null"#),
        with(r#","timers":null"#),
        with(r#","now":null"#),
        with(r#","now":-0"#),
        with(r#","now":-1"#),
        with(r#","now":1e2"#),
        with(r#","now":18446744073709551615"#),
        with(r#","now":18446744073709551616"#),
        format!(r#"{{{}}}"#, base.replace(r#","version":3"#, "")),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""version":3"#, r#""version":null"#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""version":3"#, r#""version":2"#)
        ),
        format!(r#"{{{}}}"#, base.replace(r#""format":1"#, r#""format":2"#)),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""format":1"#, r#""format":4294967296"#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""machine":"m""#, r#""machine":"\u006d""#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""machine":"m""#, r#""machine":"n""#)
        ),
        format!(r#"{{{}}}"#, base.replace(r#""a.a1""#, r#""a.zz""#)),
        format!(r#"{{{}}}"#, base.replace(r#"["a.a1"]"#, r#"["a.a1",]"#)),
        format!(
            r#"{{{}}}"#,
            base.replace(r#","context":{"n":0,"items":[],"label":"x"}"#, "")
        ),
        // Contexts that do not fit, or are not maps.
        format!(r#"{{{}}}"#, base.replace(r#""n":0,"#, "")),
        format!(r#"{{{}}}"#, base.replace(r#""n":0,"#, r#""n":0,"zz":1,"#)),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""n":0,"#, r#""zz":1,"zz":2,"n":0,"#)
        ),
        format!(r#"{{{}}}"#, base.replace(r#""n":0,"#, r#""n":0,"n":1,"#)),
        format!(
            r#"{{{}}}"#,
            base.replace(r#"{"n":0,"items":[],"label":"x"}"#, "[1]")
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#"{"n":0,"items":[],"label":"x"}"#, "null")
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":{"a":[1,{"b":-0}],"a":2}"#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":"\ud800""#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":"\udc00""#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":"\ud800\u0041""#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":-9223372036854775809"#)
        ),
        format!(
            r#"{{{}}}"#,
            base.replace(r#""label":"x""#, r#""label":1E400"#)
        ),
        // Not a snapshot at all.
        String::new(),
        "null".to_string(),
        "{".to_string(),
        with("x"),
        format!("{}x", with("")),
        format!("{} {{}}", with("")),
    ];
    for text in &cases {
        assert_same(&chart, text);
    }
    // Both routes accept the list forms and the map form of a status.
    assert!(Actor::restore_json(Arc::clone(&chart), &cases[3]).is_ok());
    assert!(Actor::restore_json(Arc::clone(&chart), &cases[8]).is_ok());
    assert!(Actor::restore_json(Arc::clone(&chart), &cases[13]).is_ok());
}

/// The depth limit is serde_json's: 127 lists and maps open at once,
/// counting the snapshot's object and its context.
#[test]
fn limits_depth_as_serde_does() {
    let chart = chart();
    let nested = |n: usize| {
        format!(
            r#"{{"format":1,"machine":"m","version":3,"status":"active","configuration":[],"context":{{"n":0,"items":{}{},"label":"x"}}}}"#,
            "[".repeat(n),
            "]".repeat(n)
        )
    };
    assert!(Actor::restore_json(Arc::clone(&chart), &nested(125)).is_ok());
    let error = Actor::restore_json(Arc::clone(&chart), &nested(126)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "recursion limit exceeded at line 1 column 226"
    );
    assert_same(&chart, &nested(125));
    assert_same(&chart, &nested(126));
    // Hostile depth is an error, not a stack overflow.
    assert!(Actor::restore_json(chart, &nested(1_000_000)).is_err());
}

#[test]
fn says_where_the_text_goes_wrong() {
    let chart = chart();
    let error = |text: &str| {
        Actor::restore_json(Arc::clone(&chart), text)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(r#"{"format":1 "machine":"m"}"#),
        "expected `,` or `}` at line 1 column 13"
    );
    assert_eq!(
        error("{\n  \"format\": 1,\n  \"machine\": m\n}"),
        "invalid type: expected a string at line 3 column 14"
    );
    assert_eq!(
        error(r#"{"format":1,"machine":"m","format":1}"#),
        "duplicate field `format` at line 1 column 27"
    );
    assert_eq!(
        error(r#"{"format":1}"#),
        "missing field `machine` at line 1 column 12"
    );
    assert_eq!(
        error(r#"{"format":1.5}"#),
        "invalid type: floating point `1.5`, expected u32 at line 1 column 11"
    );
    assert_eq!(
        error(r#"{"format":1"#),
        "EOF while reading a map at line 1 column 12"
    );
    assert_eq!(
        error("{\"format\":1,\"machine\":\"m\u{1}\"}"),
        "control character (\\u0000-\\u001F) found while parsing a string at line 1 column 25"
    );
    // A snapshot that does not fit the chart is a restore error, as on the
    // serde route.
    let text = r#"{"format":1,"machine":"m","version":3,"status":"active","configuration":["a.zz"],"context":{"n":0,"items":[],"label":"x"}}"#;
    assert_eq!(
        Actor::restore_json(Arc::clone(&chart), text).unwrap_err(),
        SnapshotJsonError::Restore(idemchart::interp::RestoreError::UnknownState("a.zz".into()))
    );
}

/// Context fields whose names JSON escapes are written escaped and read
/// back, and their raw bytes are never taken for the name.
#[test]
fn handles_field_names_that_need_escapes() {
    let machine =
        "machine: q\ncontext: { \"a\\\"b\": 1, \"c\\\\d\": 2 }\ninitial: s\nstates:\n  s: {}\n";
    let chart = Arc::new(Chart::new(
        parse(machine, Syntax::Yaml).expect("the machine loads"),
    ));
    let actor = Actor::new(Arc::clone(&chart));
    let text = actor.snapshot_json();
    assert_eq!(text, serde_json::to_string(&actor.snapshot()).unwrap());
    assert!(text.contains(r#""context":{"a\"b":1,"c\\d":2}"#), "{text}");
    assert_same(&chart, &text);
    let restored = Actor::restore_json(Arc::clone(&chart), &text).unwrap();
    assert_eq!(restored.snapshot(), actor.snapshot());
    for (from, to) in [(r#""a\"b""#, r#""a"b""#), (r#""c\\d""#, r#""c\d""#)] {
        let broken = text.replace(from, to);
        assert!(
            Actor::restore_json(Arc::clone(&chart), &broken).is_err(),
            "{broken}"
        );
        assert_same(&chart, &broken);
    }
}

/// Strings of every length around the writer's and reader's short and
/// plain paths (ids in a list, and single strings), ASCII or not, with an
/// escape or without, are written as serde_json writes them and read back.
#[test]
fn writes_and_reads_strings_of_every_length() {
    let chart = chart();
    let pieces = ["a", "é", "€", "😀", "\"", "\\", "\n", "\u{1}", "\u{7f}"];
    let mut items = Vec::new();
    for len in 0..48 {
        for piece in pieces {
            // `len` bytes of `a`, then the piece, then `b`s: the piece at
            // every place of the eight-byte words and the stack buffer.
            let text = "a".repeat(len) + piece;
            items.push(Value::from(text.clone()));
            items.push(Value::from(text.clone() + "bbbbbbbbb"));
        }
        items.push(Value::from("é".repeat(len)));
    }
    // Each as a single string too (every fifth, to keep the test short).
    for label in items.iter().step_by(5).cloned() {
        let context = Value::map([
            ("n", Value::Int(0)),
            ("items", Value::list(items.clone())),
            ("label", label),
        ]);
        let actor = Actor::with_context(Arc::clone(&chart), &context, 0).unwrap();
        let text = actor.snapshot_json();
        assert_eq!(text, serde_json::to_string(&actor.snapshot()).unwrap());
        let mut buffer = String::from("é");
        actor.write_snapshot_json(&mut buffer);
        assert_eq!(buffer, format!("é{text}"));
        let restored = Actor::restore_json(Arc::clone(&chart), &text).unwrap();
        assert_eq!(restored.snapshot(), actor.snapshot());
        assert_same(&chart, &text);
    }
}

/// Integers and separators right at the position (compact JSON, read by a
/// shortcut) and after whitespace (the general path) give the same
/// outcome and the same message.
#[test]
fn reads_compact_and_spaced_text_alike() {
    let chart = chart();
    for format in [
        "1",
        "0",
        "01",
        "4294967296",
        "4294967295",
        "1.0",
        "-1",
        "1e0",
        "x",
    ] {
        for now in [
            "0",
            "7",
            "18446744073709551615",
            "18446744073709551616",
            "-0",
        ] {
            let compact = format!(
                r#"{{"format":{format},"machine":"m","version":3,"status":"active","configuration":["b"],"context":{{"n":0,"items":["a","b",1],"label":"x"}},"now":{now}}}"#
            );
            // Trailing commas, in a list, the context and the snapshot.
            let trailing = [
                compact.replace(r#"["b"]"#, r#"["b",]"#),
                compact.replace(r#""x"}"#, r#""x",}"#),
                compact.replace(&format!("{now}}}"), &format!("{now},}}")),
            ];
            for text in std::iter::once(&compact).chain(&trailing) {
                same_compact_or_spaced(&chart, text);
            }
        }
    }
}

/// The outcome of `compact`, and of it with spaces around `:` and `,`:
/// equal, and equal to serde's.
fn same_compact_or_spaced(chart: &Arc<Chart>, compact: &str) {
    let spaced = compact.replace(':', ": ").replace(',', " , ");
    let outcomes: Vec<_> = [compact, &spaced]
        .into_iter()
        .map(|text| {
            assert_same(chart, text);
            match Actor::restore_json(Arc::clone(chart), text) {
                Ok(actor) => Ok(actor.snapshot()),
                Err(SnapshotJsonError::Syntax { message, .. }) => Err(message),
                Err(error) => Err(error.to_string()),
            }
        })
        .collect();
    assert_eq!(outcomes[0], outcomes[1], "{compact}");
}

/// Keys that are a field's name cut short, run on, or escaped are not taken
/// for the field by the reader's by-bytes match of expected keys.
#[test]
fn matches_field_names_only_whole() {
    let chart = chart();
    let base = r#"{"format":1,"machine":"m","version":3,"status":"active","configuration":["b"],"context":{"n":0,"items":[],"label":"x"},"now":5}"#;
    for name in [
        "format",
        "machine",
        "version",
        "status",
        "configuration",
        "context",
        "now",
    ] {
        let key = format!("\"{name}\":");
        let escaped = format!(
            "\"\\u{:04x}{}\":",
            u32::from(name.as_bytes()[0]),
            &name[1..]
        );
        for other in [
            format!("\"{}\":", &name[..name.len() - 1]),
            format!("\"{name}s\":"),
            escaped,
            format!("\"{}\":", name.to_uppercase()),
        ] {
            let text = base.replace(&key, &other);
            assert_same(&chart, &text);
            // With the field also present, under its own name, first.
            let both = base.replacen(&key, &format!("{key}null,{other}"), 1);
            assert_same(&chart, &both);
        }
    }
}

/// A text that starts as the chart's snapshots do (`{"format":1,"machine":"m",
/// "version":3,"status":"`), which the reader takes whole, reads as serde
/// reads it whatever follows: either status, a repeated field, a status or
/// header field cut or run on.
#[test]
fn reads_the_usual_head_as_serde_does() {
    let chart = chart();
    let head = r#"{"format":1,"machine":"m","version":3,"status":""#;
    let rest = r#","configuration":["b"],"context":{"n":0,"items":[],"label":"x"},"now":5}"#;
    for status in [
        "active\"",
        "done\"",
        "activ\"",
        "actived\"",
        "don\"",
        "\"",
        "active",
        "\\u0061ctive\"",
    ] {
        for extra in [
            "",
            r#","format":1"#,
            r#","machine":"m""#,
            r#","version":3"#,
            r#","status":"active""#,
            r#","version":null"#,
        ] {
            let text = format!("{head}{status}{extra}{rest}");
            assert_same(&chart, &text);
            let text = format!("{head}{status}{rest}");
            assert_same(
                &chart,
                &text.replacen(
                    ",\"configuration\"",
                    &format!("{extra},\"configuration\""),
                    1,
                ),
            );
        }
    }
    // The head cut anywhere, or with a byte changed.
    let full = format!("{head}active\"{rest}");
    for at in 0..head.len() + 8 {
        assert_same(&chart, &full[..at]);
        for byte in [b' ', b'x', b'"', b'1'] {
            let mut bytes = full.clone().into_bytes();
            bytes[at] = byte;
            assert_same(&chart, std::str::from_utf8(&bytes).unwrap());
        }
    }
    // A machine without a version, whose head has none: a version in the
    // text is read as serde reads it.
    let text = "machine door\ninitial closed\nstate closed { on OPEN -> opened }\nstate opened";
    let door = Arc::new(Chart::new(parse(text, Syntax::Dsl).unwrap()));
    let actor = Actor::new(Arc::clone(&door));
    let json = actor.snapshot_json();
    assert_eq!(json, serde_json::to_string(&actor.snapshot()).unwrap());
    assert_same(&door, &json);
    for version in [r#","version":1"#, r#","version":null"#] {
        let text = json.replacen(r#","status""#, &format!("{version},\"status\""), 1);
        assert_same(&door, &text);
    }
}

/// A snapshot records the machine's semantics, and continues only under the
/// same: both routes refuse one taken under the other, and read the
/// profile in every form serde reads it.
#[test]
fn a_snapshot_continues_only_under_its_semantics() {
    let chart = chart();
    let base = r#"{"format":1,"machine":"m","version":3,"status":"active","configuration":[],"context":{"n":0,"items":[],"label":""},"now":0"#;
    for tail in [
        r#","semantics":"xstate"}"#,
        r#","semantics":{"xstate":null}}"#,
        r#","semantics":"scxml"}"#,
        r#","semantics":"xstat"}"#,
        r#"}"#,
    ] {
        assert_same(&chart, &format!("{base}{tail}"));
    }
    // The list form, where the profile is the tenth element.
    for list in [
        r#"[1,"m",3,"active",[],{},{"n":0,"items":[],"label":""},[],0,"scxml"]"#,
        r#"[1,"m",3,"active",[],{},{"n":0,"items":[],"label":""},[],0,"xstate"]"#,
        r#"[1,"m",3,"active",[],{},{"n":0,"items":[],"label":""},[],0,"scxml",1]"#,
    ] {
        assert_same(&chart, list);
    }
    let error = Actor::restore_json(
        Arc::clone(&chart),
        &format!("{base},\"semantics\":\"xstate\"}}"),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        error,
        "the snapshot of `m` was taken under `semantics: xstate`, but the machine now runs by `scxml`"
    );
    let xstate = Arc::new(Chart::new(
        idemchart::syntax::parse(
            "machine: m\nsemantics: xstate\ninitial: a\nstates:\n  a: {}\n",
            idemchart::syntax::Syntax::Yaml,
        )
        .unwrap(),
    ));
    let text = Actor::new(xstate).snapshot_json();
    assert!(
        text.ends_with(r#","now":0,"semantics":"xstate"}"#),
        "{text}"
    );
}
