//! The deliveries a replay synthesizes: an id unique to each, and a
//! payload from the declared types, or from what the handlers read, with
//! the literals their guards compare the fields with first.

use std::collections::HashMap;
use std::rc::Rc;

use super::super::{Cx, analysis};
use super::{Replayer, VARIANTS};
use crate::expr::{Event, Value};
use crate::graph::EventId;
use crate::model::{Action, Completion, PayloadType};

impl<'a, 'm> Replayer<'a, 'm> {
    /// Whether `data` is the payload of one of the variants the replay
    /// synthesizes for delivery `i` of the event.
    pub(super) fn synthesized(&mut self, event: EventId, i: usize, data: &Value) -> bool {
        self.variants(event, i).iter().any(|e| &e.data == data)
    }

    /// The distinct payload variants of delivery `i` of the event (an
    /// event whose payload has only strings has one).
    pub(super) fn variants(&mut self, event: EventId, i: usize) -> Rc<[Event]> {
        if let Some(known) = self.variant_sets.get(&(event, i)) {
            return known.clone();
        }
        let mut out: Vec<Event> = Vec::with_capacity(VARIANTS);
        for variant in 0..VARIANTS {
            let e = self.event(event, i, variant);
            if !out.iter().any(|o| o.data == e.data && o.id == e.id) {
                out.push(e);
            }
        }
        let out: Rc<[Event]> = out.into();
        self.variant_sets.insert((event, i), out.clone());
        out
    }

    /// Delivery `i` of the event, payload variant `variant`.
    pub(super) fn event(&mut self, event: EventId, i: usize, variant: usize) -> Event {
        if let Some(known) = self.events.get(&(event, i, variant)) {
            return known.clone();
        }
        let made = self.make_event(event, i, variant);
        self.events.insert((event, i, variant), made.clone());
        made
    }

    pub(super) fn make_event(&mut self, event: EventId, i: usize, variant: usize) -> Event {
        let name = self.cx.graph.events.name(event).to_string();
        if let Some((completion, _)) = Completion::of_event(&name)
            && self.cx.graph.events.is_completion(event)
        {
            return self.completion_event(event, name, completion, i, variant);
        }
        let decl = self.cx.decl(event);
        let id_field = decl
            .and_then(|d| d.id_field.as_ref())
            .map(|n| n.text.clone());
        let id_type = decl
            .and_then(|d| d.payload.as_ref())
            .zip(id_field.as_ref())
            .and_then(|(p, f)| p.get(f))
            .map(|f| f.ty);
        let id = match id_type {
            Some(PayloadType::Number | PayloadType::Integer) => Value::Int(i as i64 + 1),
            _ => Value::from(format!("{name}-{}", i + 1)),
        };
        let fields = self.fields(event).to_vec();
        let mut data: Vec<(String, Value)> = Vec::new();
        for (field, ty) in fields {
            if Some(&field) == id_field.as_ref() {
                continue;
            }
            let fresh = Value::from(format!("{field}-{}", i + 1));
            // The values the guards compare the field with come first, so
            // that `event.status == "active"` can pass.
            if let Some(value) = self.compared(event, &field).get(variant) {
                data.push((field, value.clone()));
                continue;
            }
            // A field whose own fields the handlers read (`event.line.amount`)
            // is an object of them, each made as an untyped field is, the
            // literals the guards compare it with first.
            let inner = match ty {
                None | Some(PayloadType::Map | PayloadType::Any) => self.nested(event, &field),
                _ => Vec::new(),
            };
            if !inner.is_empty() {
                let mut made = Vec::with_capacity(inner.len());
                for sub in inner {
                    let compared = self.compared(event, &format!("{field}.{sub}"));
                    let value = match (compared.get(variant), variant) {
                        (Some(value), _) => value.clone(),
                        (None, 0) => Value::from(format!("{sub}-{}", i + 1)),
                        (None, 1) => Value::Int(1),
                        (None, _) => Value::Bool(true),
                    };
                    made.push((sub, value));
                }
                data.push((field, Value::map(made)));
                continue;
            }
            let value = match (ty, variant) {
                (Some(PayloadType::String | PayloadType::Any), _) => fresh,
                (Some(PayloadType::Number | PayloadType::Integer), 0) => Value::Int(1),
                (Some(PayloadType::Number | PayloadType::Integer), 1) => Value::Int(0),
                (Some(PayloadType::Number | PayloadType::Integer), _) => Value::Int(1_000_000),
                (Some(PayloadType::Boolean), v) => Value::Bool(v != 1),
                (Some(PayloadType::List), _) => Value::list(Vec::new()),
                (Some(PayloadType::Map), _) => Value::map(Vec::<(String, Value)>::new()),
                (None, 0) => fresh,
                (None, 1) => Value::Int(1),
                (None, _) => Value::Bool(true),
            };
            data.push((field, value));
        }
        if let Some(f) = &id_field {
            data.push((f.clone(), id.clone()));
        }
        let data = if data.is_empty() {
            Value::Null
        } else {
            Value::map(data)
        };
        Event::new(name, Some(id), data)
    }

    /// Delivery `i` of an invocation's completion, as the runtime would
    /// deliver the call's answer: its id the invocation's, and its payload
    /// `{output: {..}}` or `{error: {..}}` with the fields the handlers read
    /// there (`event.output.receipt`).
    pub(super) fn completion_event(
        &mut self,
        event: EventId,
        name: String,
        completion: Completion,
        i: usize,
        variant: usize,
    ) -> Event {
        let key = completion.field();
        let cx = self.cx;
        let mut nested: Vec<String> = Vec::new();
        for_each_handler_expr(cx, event, |x| {
            if let crate::expr::ExprKind::Member(base, field) = &x.kind
                && analysis::event_field(base) == Some(key)
                && !nested.contains(field)
            {
                nested.push(field.clone());
            }
        });
        let fields: Vec<(String, Value)> = nested
            .into_iter()
            .map(|field| {
                // The values the guards compare the field with come first,
                // so that `event.error.reason == "unknown-outcome"` can pass.
                let compared = self.compared(event, &format!("{key}.{field}"));
                let value = match (compared.get(variant), variant) {
                    (Some(value), _) => value.clone(),
                    (None, 0) => Value::from(format!("{field}-{}", i + 1)),
                    (None, 1) => Value::Int(1),
                    (None, _) => Value::Bool(true),
                };
                (field, value)
            })
            .collect();
        let data = Value::map([(key, Value::map(fields))]);
        Event::new(
            name.as_str(),
            Some(Value::from(format!("{name}-{}", i + 1))),
            data,
        )
    }

    /// The literals that the guards of the event's handlers compare the
    /// payload field with (`event.f == "x"`, `event.f in ["a", "b"]`), in
    /// document order, each once.
    pub(super) fn compared(&mut self, event: EventId, field: &str) -> Vec<Value> {
        let cx = self.cx;
        // Built for every event in one pass over the transitions: one pass
        // per event would cost events × transitions on a large machine.
        let table = self.compared.get_or_insert_with(|| {
            let mut table: HashMap<EventId, ComparedLiterals> = HashMap::new();
            for (index, t) in cx.machine.transitions.iter().enumerate() {
                let Some(guard) = &t.guard else {
                    continue;
                };
                let mut found = Vec::new();
                guard.walk(&mut |e| found.extend(compared_literals(e)));
                if found.is_empty() {
                    continue;
                }
                let tid = crate::model::TransitionId(index as u32);
                for &event in cx.graph.trigger_events(tid) {
                    let by_field = table.entry(event).or_default();
                    for (f, value) in &found {
                        match by_field.iter_mut().find(|(g, _)| g == f) {
                            Some((_, values)) if !values.contains(value) => {
                                values.push(value.clone())
                            }
                            Some(_) => {}
                            None => by_field.push((f.clone(), vec![value.clone()])),
                        }
                    }
                }
            }
            table
        });
        table
            .get(&event)
            .and_then(|by_field| by_field.iter().find(|(f, _)| f == field))
            .map(|(_, values)| values.clone())
            .unwrap_or_default()
    }

    /// The fields of the payload field `field` that the event's handlers
    /// read (`event.line.amount`: `amount`), in document order.
    fn nested(&self, event: EventId, field: &str) -> Vec<String> {
        let mut nested: Vec<String> = Vec::new();
        for_each_handler_expr(self.cx, event, |x| {
            if let crate::expr::ExprKind::Member(base, sub) = &x.kind
                && analysis::event_field(base) == Some(field)
                && !nested.contains(sub)
            {
                nested.push(sub.clone());
            }
        });
        nested
    }

    /// The payload fields of an event: as declared, else those that the
    /// guards and actions of its handlers read.
    pub(super) fn fields(&mut self, event: EventId) -> &[(String, Option<PayloadType>)] {
        let cx = self.cx;
        self.fields.entry(event).or_insert_with(|| {
            if let Some(payload) = cx.decl(event).and_then(|d| d.payload.as_ref()) {
                return payload
                    .iter()
                    .map(|(f, p)| (f.clone(), Some(p.ty)))
                    .collect();
            }
            let mut read: Vec<String> = Vec::new();
            for_each_handler_expr(cx, event, |x| {
                if let Some(f) = analysis::event_field(x)
                    && f != "id"
                    && f != "type"
                    && !read.iter().any(|r| r == f)
                {
                    read.push(f.to_string());
                }
            });
            read.into_iter().map(|f| (f, None)).collect()
        })
    }
}

/// Payload fields and the literals guards compare them with.
pub(super) type ComparedLiterals = Vec<(String, Vec<Value>)>;

/// `f` for `event.f`, and `f.g` for `event.f.g` (a completion's
/// `event.error.reason`): the payload field an expression reads.
pub(super) fn event_path(expr: &crate::expr::Expr) -> Option<String> {
    if let Some(field) = analysis::event_field(expr) {
        return Some(field.to_string());
    }
    match &expr.kind {
        crate::expr::ExprKind::Member(base, field) => {
            analysis::event_field(base).map(|outer| format!("{outer}.{field}"))
        }
        _ => None,
    }
}

/// The payload fields an expression compares with a literal, and the
/// literal: `event.f == "x"` (either way round, any comparison) and
/// `event.f in ["a", "b"]`.
pub(super) fn compared_literals(expr: &crate::expr::Expr) -> Vec<(String, Value)> {
    use crate::expr::{BinaryOp, ExprKind};
    let literal = |e: &crate::expr::Expr| match &e.kind {
        ExprKind::String(s) => Some(Value::from(s.clone())),
        ExprKind::Int(i) => Some(Value::Int(*i)),
        ExprKind::Bool(b) => Some(Value::Bool(*b)),
        _ => None,
    };
    let ExprKind::Binary(op, a, b) = &expr.kind else {
        return Vec::new();
    };
    match op {
        BinaryOp::In => match (event_path(a), &b.kind) {
            (Some(f), ExprKind::List(items)) => items
                .iter()
                .filter_map(|i| literal(i).map(|v| (f.clone(), v)))
                .collect(),
            _ => Vec::new(),
        },
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            match (event_path(a), literal(b), event_path(b), literal(a)) {
                (Some(f), Some(v), _, _) | (_, _, Some(f), Some(v)) => vec![(f, v)],
                _ => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}

/// Every subexpression of the guards and actions of the transitions the
/// event triggers.
pub(super) fn for_each_handler_expr(
    cx: &Cx,
    event: EventId,
    mut f: impl FnMut(&crate::expr::Expr),
) {
    for (index, t) in cx.machine.transitions.iter().enumerate() {
        let tid = crate::model::TransitionId(index as u32);
        if !cx.graph.trigger_events(tid).contains(&event) {
            continue;
        }
        let mut visit = |e: &crate::expr::Expr| e.walk(&mut f);
        if let Some(g) = &t.guard {
            visit(g);
        }
        for action in &t.actions {
            for_each_expr(action, &mut visit);
        }
    }
}

pub(super) fn for_each_expr(action: &Action, f: &mut impl FnMut(&crate::expr::Expr)) {
    match action {
        Action::Assign { fields, .. } => fields.values().for_each(|a| f(&a.expr)),
        Action::Raise { data, .. } | Action::Send { data, .. } => {
            data.values().for_each(|a| f(&a.expr))
        }
        Action::Effect { args, .. } => args.values().for_each(|a| f(&a.expr)),
        Action::Log { expr, .. } => f(expr),
        Action::Cancel { .. } | Action::Host { .. } => {}
    }
}
