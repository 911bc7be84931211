//! The translation of the JavaScript idioms assigns are made of, JS text
//! to CEL text, each in a small machine (whole fixtures, with their
//! findings and XState's own run of them, are in `tests/xstate.rs`).

use crate::import::xstate::{Settings, extract};
use crate::span::SourceFile;
use crate::syntax::tree::ActionDoc;

/// The machine's helpers and context, and the assign `assign` in the
/// actions of `GO`: each field it writes and its expression, or the notes
/// where it stays opaque.
fn assign(helpers: &str, assign: &str) -> Result<Vec<(String, String)>, Vec<String>> {
    let text = format!(
        "import {{ assign, createMachine }} from 'xstate';\n\
         {helpers}\n\
         export const m = createMachine({{\n\
           id: 'm',\n\
           initial: 'a',\n\
           context: {{ n: 0, list: [], ids: [], lines: [], form: {{}}, address: {{}}, billing: {{}}, email: '', phone: '' }},\n\
           states: {{ a: {{ on: {{ GO: {{ actions: {assign} }} }} }} }},\n\
         }});\n"
    );
    let mut extracted = extract(SourceFile::new("m.js", text), &Settings::default());
    assert!(extracted.errors.is_empty(), "{:?}", extracted.errors);
    let (_, _, doc, notes) = extracted.machines.remove(0);
    match &doc.root.states[0].on[0].actions[..] {
        [ActionDoc::Assign { fields, .. }] => Ok(fields
            .iter()
            .map(|(name, e)| (name.text.clone(), e.text.clone()))
            .collect()),
        _ => Err(notes.iter().map(|n| n.message.clone()).collect()),
    }
}

fn one(helpers: &str, js: &str) -> Vec<(String, String)> {
    assign(helpers, js).unwrap_or_else(|notes| panic!("{js}: {notes:#?}"))
}

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(f, e)| (f.to_string(), e.to_string()))
        .collect()
}

#[test]
fn object_spreads_merge_with_the_right_winning() {
    for (js, want) in [
        (
            "assign({ form: ({ context, event }) => ({ ...context.form, [event.name]: event.value }) })",
            vec![("form", "merge(context.form, {event.name: event.value})")],
        ),
        (
            "assign({ address: ({ context, event }) => ({ ...context.address, ...event.address }) })",
            vec![("address", "merge(context.address, event.address)")],
        ),
        (
            "assign({ form: ({ context, event }) => ({ a: 1, ...context.form, a: event.a, b: 2 }) })",
            vec![(
                "form",
                r#"merge(merge({"a": 1}, context.form), {"a": event.a, "b": 2})"#,
            )],
        ),
        (
            "assign({ billing: ({ context }) => Object.assign({}, context.billing, context.address) })",
            vec![("billing", "merge(context.billing, context.address)")],
        ),
        (
            "assign({ form: ({ event }) => ({ ...event.data }) })",
            vec![("form", "merge({}, event.data)")],
        ),
        (
            "assign({ form: ({ event }) => ({ ...{ a: 1, b: 2 }, b: event.b }) })",
            vec![("form", r#"{"a": 1, "b": event.b}"#)],
        ),
    ] {
        assert_eq!(one("", js), fields(&want), "{js}");
    }
}

#[test]
fn a_returned_partial_context_writes_only_its_fields() {
    // `{...context, ...event.data}`: every field of the context may come
    // from the event's data.
    let got = one(
        "",
        "assign(({ context, event }) => ({ ...context, ...event.data, n: context.n + 1 }))",
    );
    assert_eq!(got[0], ("n".into(), "context.n + 1".into()));
    assert_eq!(
        got[1],
        (
            "list".into(),
            "has(event.data.list) ? event.data.list : context.list".into()
        )
    );
    assert_eq!(got.len(), 9, "{got:#?}");
    // A key written before `...context` is put back.
    assert_eq!(
        one(
            "",
            "assign(({ context, event }) => ({ email: event.v, ...context, phone: event.p }))"
        ),
        fields(&[("phone", "event.p")])
    );
    // A computed key may name any field.
    let got = one(
        "",
        "assign(({ event }) => ({ [event.field]: event.value }))",
    );
    assert_eq!(
        got[0],
        (
            "n".into(),
            r#"event.field == "n" ? event.value : context.n"#.into()
        )
    );
}

#[test]
fn sets_are_distinct_lists() {
    for (js, want) in [
        (
            "assign({ ids: ({ context, event }) => [...new Set([...context.ids, event.id])] })",
            "distinct(context.ids + [event.id])",
        ),
        (
            "assign({ ids: ({ context, event }) => Array.from(new Set(context.ids).add(event.id)) })",
            "distinct(context.ids + [event.id])",
        ),
        (
            "assign({ ids: ({ context, event }) => new Set(context.ids).add(event.a).add(event.b) })",
            "distinct(context.ids + [event.a] + [event.b])",
        ),
        (
            "assign({ ids: ({ context, event }) => { const s = new Set(context.ids); s.add(event.id); s.delete(event.old); return [...s]; } })",
            "without(distinct(context.ids + [event.id]), event.old)",
        ),
    ] {
        assert_eq!(one("", js), fields(&[("ids", want)]), "{js}");
    }
}

#[test]
fn appends_concatenate() {
    for (js, want) in [
        (
            "assign({ list: ({ context, event }) => [...context.list, event.error] })",
            "context.list + [event.error]",
        ),
        (
            "assign({ list: ({ context, event }) => context.list.concat([event.code]) })",
            "context.list + [event.code]",
        ),
        (
            "assign({ list: ({ context, event }) => context.list.concat('x', [event.a]) })",
            r#"context.list + ["x"] + [event.a]"#,
        ),
        (
            "assign({ list: ({ context, event }) => { const next = [...context.list]; next.push(event.note); return next; } })",
            "context.list + [event.note]",
        ),
        (
            "assign({ list: ({ context, event }) => { const next = context.list.slice(); if (event.x) { next.push(event.x); } return next; } })",
            "event.x ? context.list + [event.x] : context.list",
        ),
        (
            "assign({ n: ({ context }) => context.n + 1 })",
            "context.n + 1",
        ),
    ] {
        let field = if js.contains("n:") { "n" } else { "list" };
        assert_eq!(one("", js), fields(&[(field, want)]), "{js}");
    }
}

#[test]
fn filters_removing_by_a_key_or_a_value_are_removals() {
    for (js, want) in [
        (
            "context.lines.filter((line) => line.id !== event.id)",
            r#"without_by(context.lines, "id", event.id)"#,
        ),
        (
            "context.lines.filter((line) => event.sku != line.sku)",
            r#"without_by(context.lines, "sku", event.sku)"#,
        ),
        (
            "context.lines.filter(({ sku }) => sku !== event.sku)",
            r#"without_by(context.lines, "sku", event.sku)"#,
        ),
        (
            "context.ids.filter((x) => x !== event.value)",
            "without(context.ids, event.value)",
        ),
        (
            "context.ids.filter(function (x) { return x !== event.value; })",
            "without(context.ids, event.value)",
        ),
    ] {
        let field = if js.contains("lines") { "lines" } else { "ids" };
        let js = format!("assign({{ {field}: ({{ context, event }}) => {js} }})");
        assert_eq!(one("", &js), fields(&[(field, want)]), "{js}");
    }
}

#[test]
fn branches_on_the_event_are_conditionals() {
    assert_eq!(
        one(
            "",
            "assign(({ event }) => { if (event.field === 'email') { return { email: event.value }; } return { phone: event.value }; })"
        ),
        fields(&[
            (
                "email",
                r#"event.field == "email" ? event.value : context.email"#
            ),
            (
                "phone",
                r#"event.field == "email" ? context.phone : event.value"#
            ),
        ])
    );
    assert_eq!(
        one(
            "",
            "assign({ n: ({ context, event }) => { if (event.reset) return 0; else if (event.by) return context.n + event.by; return context.n; } })"
        ),
        fields(&[(
            "n",
            "event.reset ? 0 : event.by ? context.n + event.by : context.n"
        )])
    );
    assert_eq!(
        one(
            "",
            "assign({ email: ({ context, event }) => event.email ? event.email : context.email })"
        ),
        fields(&[("email", "event.email ? event.email : context.email")])
    );
    assert_eq!(
        one(
            "",
            "assign({ n: ({ context, event }) => { let step = 1; if (event.big) { step = 10; } return context.n + step; } })"
        ),
        fields(&[("n", "context.n + (event.big ? 10 : 1)")])
    );
}

#[test]
fn pure_helpers_are_inlined() {
    let helpers = "const withId = (ids, id) => [...new Set([...ids, id])];\n\
                   function removeLine(lines, sku) { return lines.filter((l) => l.sku !== sku); }\n\
                   function pick(result) { const { city, region } = result; return { city, region }; }\n\
                   const bump = (n, by = 1) => n + by;";
    for (js, field, want) in [
        (
            "assign({ ids: ({ context, event }) => withId(context.ids, event.id) })",
            "ids",
            "distinct(context.ids + [event.id])",
        ),
        (
            "assign({ lines: ({ context, event }) => removeLine(context.lines, event.sku) })",
            "lines",
            r#"without_by(context.lines, "sku", event.sku)"#,
        ),
        (
            "assign({ address: ({ context, event }) => ({ ...context.address, ...pick(event.result) }) })",
            "address",
            r#"merge(context.address, {"city": event.result.city, "region": event.result.region})"#,
        ),
        (
            "assign({ n: ({ context }) => bump(context.n) })",
            "n",
            "context.n + 1",
        ),
    ] {
        assert_eq!(one(helpers, js), fields(&[(field, want)]), "{js}");
    }
}

#[test]
fn what_is_not_exact_stays_opaque() {
    let helpers = "function tidy(s) { return s.trim(); }\n\
                   function grow(list, x) { list.push(x); return list; }";
    for (js, why) in [
        // A helper whose body is not read: named at the call.
        (
            "assign({ email: ({ event }) => tidy(event.value) })",
            "it calls `tidy`, whose body cannot be translated",
        ),
        // A change of what the body did not copy.
        (
            "assign({ list: ({ context, event }) => grow(context.list, event.x) })",
            "which is not a list or set it made",
        ),
        (
            "assign({ list: ({ context, event }) => { context.list.push(event.x); return context.list; } })",
            "it changes what is not a list or set it made",
        ),
        // A copy read before it is changed may be held elsewhere.
        (
            "assign({ list: ({ context, event }) => { const a = [...context.list]; const b = a; b.push(1); return a; } })",
            "which is not a list or set it made",
        ),
        // `concat` of a value that may or may not be a list.
        (
            "assign({ list: ({ context, event }) => context.list.concat(event.x) })",
            "not known to be either",
        ),
        // A filter that is no removal by a key.
        (
            "assign({ lines: ({ context, event }) => context.lines.filter((l) => l.sku.toLowerCase() !== event.sku) })",
            "`.filter` is translated where",
        ),
        // Objects are compared by reference in JavaScript.
        (
            "assign({ ids: ({ context, event }) => [...new Set(context.ids).add({ id: event.id })] })",
            "by reference",
        ),
        (
            "assign({ ids: ({ context, event }) => [...new Set([...context.ids, [event.a]])] })",
            "by reference",
        ),
        // `+` of lists joins texts.
        (
            "assign({ list: ({ context, event }) => context.list + [event.x] })",
            "joins their texts",
        ),
        // A path that returns nothing.
        (
            "assign(({ event }) => { if (event.x) { return { n: 1 }; } })",
            "returns nothing on one of its paths",
        ),
    ] {
        let notes = assign(helpers, js).expect_err(js);
        assert!(notes.iter().any(|n| n.contains(why)), "{js}: {notes:#?}");
    }
}
