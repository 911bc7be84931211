//! Snapshots as JSON text, straight from an actor and back into one.
//!
//! `Actor::snapshot_json` writes the bytes `serde_json::to_string(&actor.snapshot())`
//! writes, and `Actor::restore_json` accepts the texts that
//! `serde_json::from_str::<Snapshot>` followed by `Actor::restore` accept,
//! into the same actor. Neither builds a `Snapshot` or a context map on the
//! way: the context is read straight into the chart's layout slots, and
//! state paths are looked up as they are read. Persisting an actor after
//! every event is the hot path of a durable host, and the serde route spent
//! most of its time in visitors and in building and dropping those values.
//!
//! The reader mirrors the serde route's rules, quirks included: keys in any
//! order, unknown fields ignored (a top-level one is only checked for
//! syntax, as serde_json skips it; one inside a timer is read in full, as
//! serde buffers an internally tagged enum's fields), a repeated field an
//! error, `status` also as `{"active": null}`, the snapshot and each timer
//! also as a list of their fields in order (`["after", state, after, due,
//! seq]`). What does not fit the chart is the same `RestoreError`, found in
//! the same order as `Actor::restore` finds it.

use std::borrow::Cow;
use std::sync::Arc;

use indexmap::IndexMap;

use super::actor::{Actor, Due, Status};
use super::bits::StateSet;
use super::chart::Chart;
use super::snapshot::{self, InvocationSnapshot, RestoreError, SNAPSHOT_FORMAT, TimerSnapshot};
use crate::expr::Value;
use crate::expr::json::{self, JsonError, Number, Reader, Writer};
use crate::model::{Semantics, StateId};

/// Why a snapshot's JSON text does not restore.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotJsonError {
    /// The text is not JSON, or not shaped as a snapshot. `line` and
    /// `column` (1-based, the column in bytes) point at the offending byte,
    /// or just past the text when it ends too early.
    #[error("{message} at line {line} column {column}")]
    Syntax {
        message: String,
        line: usize,
        column: usize,
    },
    /// A well-formed snapshot that does not fit the chart.
    #[error(transparent)]
    Restore(#[from] RestoreError),
}

impl Actor {
    /// The actor at rest as snapshot JSON: the same bytes as
    /// `serde_json::to_string(&actor.snapshot())`, without building the
    /// `Snapshot`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::expr::Event;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let text = "machine door\ncontext { opened = 0 }\ninitial closed\n\
    ///             state closed { on OPEN -> opened { opened = context.opened + 1 } }\n\
    ///             state opened";
    /// let mut actor = Actor::new(Arc::new(Chart::new(parse(text, Syntax::Dsl).unwrap())));
    /// actor.send(&Event::named("OPEN"));
    /// let json = actor.snapshot_json();
    /// assert_eq!(
    ///     json,
    ///     r#"{"format":1,"machine":"door","status":"active","configuration":["opened"],"context":{"opened":1},"now":0}"#
    /// );
    /// assert_eq!(json, serde_json::to_string(&actor.snapshot()).unwrap());
    /// ```
    pub fn snapshot_json(&self) -> String {
        let mut out = String::with_capacity(256);
        self.write_snapshot_json(&mut out);
        out
    }

    /// Appends the snapshot JSON of `snapshot_json` to `out`, so that a host
    /// that persists after every event can reuse one buffer.
    pub fn write_snapshot_json(&self, out: &mut String) {
        let out = &mut Writer::new(out);
        let chart = &self.chart;
        let machine = &chart.machine;
        let path = |s: StateId| machine.state(s).path.as_str();
        out.raw(&chart.snapshot_head.text);
        out.raw(match self.core.status {
            Status::Active => "active\",\"configuration\":",
            Status::Done => "done\",\"configuration\":",
        });
        write_paths(out, self.snapshot_leaves().map(path));
        if !self.core.history.is_empty() {
            out.raw(",\"history\":{");
            for (i, (h, states)) in self.core.history.iter().enumerate() {
                if i > 0 {
                    out.raw(",");
                }
                out.str(path(*h));
                out.raw(":");
                write_paths(out, states.iter().map(|s| path(*s)));
            }
            out.raw("}");
        }
        out.raw(",\"context\":{");
        for (i, (field, value)) in chart.layout.fields().zip(&self.core.context).enumerate() {
            if i > 0 {
                out.raw(",");
            }
            out.str(field);
            out.raw(":");
            out.value(value);
        }
        out.raw("}");
        if !self.core.timers.is_empty() {
            out.raw(",\"timers\":[");
            for (i, timer) in self.core.timers.iter().enumerate() {
                if i > 0 {
                    out.raw(",");
                }
                match &timer.what {
                    Due::Transition(transition) => {
                        let (source, after) = snapshot::after_index(chart, *transition);
                        out.raw("{\"kind\":\"after\",\"state\":");
                        out.str(path(source));
                        out.raw(",\"after\":");
                        out.u64(u64::from(after));
                    }
                    Due::Send { event, id } => {
                        out.raw("{\"kind\":\"send\",\"event\":");
                        out.str(&event.name);
                        // As `snapshot` decides: by CEL equality.
                        if event.data != Value::Null {
                            out.raw(",\"data\":");
                            out.value(&event.data);
                        }
                        if let Some(id) = id {
                            out.raw(",\"id\":");
                            out.str(id);
                        }
                    }
                }
                out.raw(",\"due\":");
                out.u64(timer.due);
                out.raw(",\"seq\":");
                out.u64(timer.seq);
                out.raw("}");
            }
            out.raw("]");
        }
        if !self.core.invocations.is_empty() {
            out.raw(",\"invocations\":[");
            for (i, running) in self.core.invocations.iter().enumerate() {
                if i > 0 {
                    out.raw(",");
                }
                let invocation = &chart.state(running.state).invoke[running.index as usize];
                out.raw("{\"state\":");
                out.str(path(running.state));
                out.raw(",\"id\":");
                out.str(&invocation.id);
                if running.input != Value::Null {
                    out.raw(",\"input\":");
                    out.value(&running.input);
                }
                if let Some(key) = &running.key {
                    out.raw(",\"key\":");
                    out.str(key);
                }
                out.raw("}");
            }
            out.raw("]");
        }
        out.raw(",\"now\":");
        out.u64(self.core.now);
        if !machine.semantics.is_default() {
            out.raw(",\"semantics\":");
            out.str(machine.semantics.as_str());
        }
        out.raw("}");
    }

    /// Continues the snapshot JSON `json` on `chart`: what
    /// `serde_json::from_str::<Snapshot>` and then `Actor::restore` give,
    /// without the intermediate `Snapshot`. A text that is not a snapshot
    /// fails with the line and column of the offending byte.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::interp::{Actor, Chart, SnapshotJsonError};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let text = "machine door\ninitial closed\nstate closed { on OPEN -> opened }\nstate opened";
    /// let chart = Arc::new(Chart::new(parse(text, Syntax::Dsl).unwrap()));
    /// let json = r#"{"format":1,"machine":"door","status":"active",
    ///                "configuration":["opened"],"context":{}}"#;
    /// let actor = Actor::restore_json(Arc::clone(&chart), json).unwrap();
    /// assert_eq!(actor.configuration_paths(), ["opened"]);
    ///
    /// let error = Actor::restore_json(chart, r#"{"format":1 "machine":"door"}"#).unwrap_err();
    /// assert_eq!(error.to_string(), "expected `,` or `}` at line 1 column 13");
    /// assert!(matches!(error, SnapshotJsonError::Syntax { line: 1, column: 13, .. }));
    /// ```
    #[inline]
    pub fn restore_json(chart: Arc<Chart>, json: &str) -> Result<Actor, SnapshotJsonError> {
        // Inlined into the caller, so that the actor (several hundred
        // bytes) is built where the caller keeps it rather than copied there.
        let mut actor = Actor::idle(chart, Vec::new(), 0);
        actor.read_snapshot_json(json)?;
        Ok(actor)
    }

    /// Makes this actor the one `Actor::restore_json` gives for `json` on
    /// the actor's chart, in the memory the actor already has. A host that
    /// applies events to many processes of one machine, each persisted as
    /// snapshot JSON, can keep one actor and reload it for each: the
    /// buffers its steps reuse, its configuration's set, the context's
    /// vector and a list the context alone holds are kept, where a restored
    /// actor allocates them anew and dropping it frees them. Nothing of the
    /// actor's former state shows afterwards.
    ///
    /// On an error the actor is what `Actor::new` gives on its chart.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use idemchart::expr::Event;
    /// use idemchart::interp::{Actor, Chart};
    /// use idemchart::syntax::{Syntax, parse};
    ///
    /// let text = "machine door\ncontext { opened = 0 }\ninitial closed\n\
    ///             state closed { on OPEN -> opened { opened = context.opened + 1 } }\n\
    ///             state opened { on CLOSE -> closed }";
    /// let chart = Arc::new(Chart::new(parse(text, Syntax::Dsl).unwrap()));
    /// let mut actor = Actor::new(Arc::clone(&chart));
    /// let mut persisted = actor.snapshot_json();
    /// for event in ["OPEN", "CLOSE", "OPEN"] {
    ///     actor.reload_json(&persisted).unwrap();
    ///     actor.send(&Event::named(event));
    ///     persisted.clear();
    ///     actor.write_snapshot_json(&mut persisted);
    /// }
    /// let restored = Actor::restore_json(chart, &persisted).unwrap();
    /// assert_eq!(restored.configuration_paths(), ["opened"]);
    /// assert_eq!(persisted, restored.snapshot_json());
    /// assert!(actor.reload_json("{}").is_err());
    /// assert_eq!(actor.configuration_paths(), ["closed"]);
    /// ```
    pub fn reload_json(&mut self, json: &str) -> Result<(), SnapshotJsonError> {
        self.core.reset();
        let read = self.read_snapshot_json(json);
        if read.is_err() {
            *self = Actor::new(Arc::clone(&self.chart));
        }
        read
    }

    /// The work of `restore_json`, on an idle actor (or one `Core::reset`
    /// made idle, whose context's values the reader may reuse).
    fn read_snapshot_json(&mut self, json: &str) -> Result<(), SnapshotJsonError> {
        let Actor { chart, core } = self;
        let mut decoder = Decoder {
            reader: Reader::new(json),
            chart,
            slots: std::mem::take(&mut core.context),
        };
        let read = decoder
            .snapshot((&mut core.active, &mut core.entry_order))
            .map_err(|error| syntax(json, error))?;
        // What does not fit the chart, in the order `Actor::restore` checks it.
        snapshot::check_version(chart, read.version)?;
        snapshot::check_semantics(chart, read.semantics)?;
        snapshot::check_header(chart, read.format, &read.machine)?;
        core.context = match read.context {
            Context::Slots(slots) => slots,
            Context::Misfit { start, depth } => {
                let value = Reader::at(json, start, depth)
                    .value()
                    .map_err(|error| syntax(json, error))?;
                chart
                    .layout
                    .from_map(&value)
                    .map_err(RestoreError::Context)?
            }
        };
        if let Some(path) = read.unknown_state {
            return Err(RestoreError::UnknownState(path).into());
        }
        core.active.insert(StateId::ROOT);
        core.irregular = chart.xstate && !core.regular(chart);
        // The idle actor has neither history nor timers: most snapshots
        // have none to restore either.
        if let Some(history) = &read.history
            && !history.is_empty()
        {
            core.history = snapshot::restore_history(chart, history)?;
        }
        if let Some(timers) = &read.timers
            && !timers.is_empty()
        {
            core.timers = timers
                .iter()
                .map(|timer| snapshot::restore_timer(chart, timer))
                .collect::<Result<_, _>>()?;
            core.next_seq = snapshot::next_seq(&core.timers);
        }
        if let Some(invocations) = &read.invocations
            && !invocations.is_empty()
        {
            core.invocations = invocations
                .iter()
                .map(|invocation| snapshot::restore_invocation(chart, invocation))
                .collect::<Result<_, _>>()?;
        }
        core.status = read.status;
        core.now = read.now;
        Ok(())
    }
}

/// The start of a chart's snapshot JSON, the same for all its actors, up
/// to the opening quote of the status: `{"format":1,"machine":NAME`, then
/// `,"version":V` when the machine has a version, then `,"status":"`.
#[derive(Debug)]
pub(crate) struct Head {
    text: String,
    /// Where the machine's name is in `text`, when JSON writes it without
    /// escapes: a snapshot that starts with `text` then holds the header's
    /// fields as the chart has them, and the reader takes them whole.
    name: Option<std::ops::Range<usize>>,
}

impl Head {
    pub(crate) fn new(machine: &crate::model::Machine) -> Head {
        const KEY: &str = ",\"machine\":";
        let mut text = String::new();
        {
            // The writer hands the text back when dropped.
            let out = &mut Writer::new(&mut text);
            out.raw("{\"format\":");
            out.u64(u64::from(SNAPSHOT_FORMAT));
            out.raw(KEY);
            out.str(&machine.name);
            if let Some(version) = machine.version {
                out.raw(",\"version\":");
                out.u64(version);
            }
            out.raw(",\"status\":\"");
        }
        // A plain name is written as it is, in quotes, right after the key
        // (only the format's number comes before it).
        let name = text
            .find(KEY)
            .filter(|_| json::plain(&machine.name))
            .map(|at| at + KEY.len() + 1)
            .map(|start| start..start + machine.name.len());
        Head { text, name }
    }
}

fn write_paths<'p>(out: &mut Writer<'_>, paths: impl Iterator<Item = &'p str>) {
    out.raw("[");
    for (i, path) in paths.enumerate() {
        if i > 0 {
            out.raw(",");
        }
        out.str(path);
    }
    out.raw("]");
}

fn syntax(text: &str, error: JsonError) -> SnapshotJsonError {
    let (line, column) = json::line_col(text, error.offset);
    SnapshotJsonError::Syntax {
        message: error.message,
        line,
        column,
    }
}

/// The snapshot's fields in declaration order, which is also the order of
/// the list form.
const FIELDS: [&str; 11] = [
    "format",
    "machine",
    "version",
    "status",
    "configuration",
    "history",
    "context",
    "timers",
    "invocations",
    "now",
    "semantics",
];

/// Consumes the key `FIELDS[index]` when the text at the position is
/// exactly that (see `Reader::plain_key`). Each name is a constant in its
/// arm, so that it is compared as a few integers rather than by a call to
/// `memcmp`.
#[inline(always)]
fn field_key(reader: &mut Reader<'_>, index: usize) -> bool {
    macro_rules! by_index {
        ($($i:literal)*) => {
            match index {
                $($i => reader.plain_key(FIELDS[$i]),)*
                _ => false,
            }
        };
    }
    by_index!(0 1 2 3 4 5 6 7 8 9 10)
}

/// The fields with `#[serde(default)]`: version, history, timers,
/// invocations, now, semantics.
const OPTIONAL: [bool; 11] = [
    false, false, true, false, false, true, false, true, true, true, true,
];

/// The other fields, by bit `1 << index`.
const REQUIRED: u16 = {
    let mut bits = 0;
    let mut i = 0;
    while i < OPTIONAL.len() {
        if !OPTIONAL[i] {
            bits |= 1 << i;
        }
        i += 1;
    }
    bits
};

/// The fields as read, before they are checked against the chart.
#[derive(Default)]
struct Fields<'a> {
    /// The fields read so far, by bit `1 << index`.
    read: u16,
    format: Option<u32>,
    machine: Option<Cow<'a, str>>,
    version: Option<Option<u64>>,
    status: Option<Status>,
    /// `Some` once read: the first path that names no state, if any.
    configuration: Option<Option<String>>,
    history: Option<IndexMap<String, Vec<String>>>,
    context: Option<Context>,
    timers: Option<Vec<TimerSnapshot>>,
    invocations: Option<Vec<InvocationSnapshot>>,
    now: Option<u64>,
    semantics: Option<Semantics>,
}

impl Fields<'_> {
    fn has(&self, index: usize) -> bool {
        self.read & 1 << index != 0
    }
}

/// Every field of a snapshot, defaults filled in; the collections a
/// snapshot mostly has none of stay `None` when absent, which costs nothing
/// to make and drop.
struct Read<'a> {
    format: u32,
    machine: Cow<'a, str>,
    version: Option<u64>,
    status: Status,
    unknown_state: Option<String>,
    history: Option<IndexMap<String, Vec<String>>>,
    context: Context,
    timers: Option<Vec<TimerSnapshot>>,
    invocations: Option<Vec<InvocationSnapshot>>,
    now: u64,
    semantics: Semantics,
}

enum Context {
    /// Every field of the layout, in slot order.
    Slots(Vec<Value>),
    /// Not a map of exactly the layout's fields: read again from `start` as
    /// a value, for `Layout::from_map` to say what is wrong.
    Misfit { start: usize, depth: u32 },
}

/// The two kinds of timer, by their `kind` tag.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    After,
    Send,
}

impl Kind {
    fn fields(self) -> &'static [&'static str] {
        match self {
            Kind::After => &["state", "after", "due", "seq"],
            Kind::Send => &["event", "data", "id", "due", "seq"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::After => "TimerSnapshot::After",
            Kind::Send => "TimerSnapshot::Send",
        }
    }
}

/// The active set a snapshot's configuration is read into, with the order
/// of its atomic states (`snapshot::activate`).
type Configuration<'x> = (&'x mut StateSet, &'x mut Vec<StateId>);

struct Decoder<'a, 'c> {
    reader: Reader<'a>,
    chart: &'c Chart,
    /// The vector the context is read into, with the values it held
    /// before (none for a new actor), which the reader overwrites.
    slots: Vec<Value>,
}

impl<'a> Decoder<'a, '_> {
    fn snapshot(&mut self, active: Configuration<'_>) -> Result<Read<'a>, JsonError> {
        let (set, order) = active;
        let mut fields = Fields::default();
        let end = match self.reader.peek() {
            Some(b'{') => {
                let head = self.known_head();
                self.reader.open()?;
                let mut first = true;
                // Fields mostly come in the order the writer puts them, so
                // the search for a key starts after the previous one.
                let mut expected = 0;
                if let Some((status, machine, len)) = head {
                    // The fields before the configuration, as the chart has
                    // them: what the loop would read from the same bytes.
                    self.reader.skip(len - 1);
                    fields.read = 1 << 0 | 1 << 1 | 1 << 3;
                    fields.format = Some(SNAPSHOT_FORMAT);
                    fields.machine = Some(Cow::Borrowed(machine));
                    if let Some(version) = self.chart.machine.version {
                        fields.read |= 1 << 2;
                        fields.version = Some(Some(version));
                    }
                    fields.status = Some(status);
                    first = false;
                    expected = 4;
                }
                while self.reader.has_next(b'}', &mut first)? {
                    let at = self.reader.pos();
                    // The key expected, then those after it: the first is
                    // tried on its own, as most keys are the one expected.
                    let next = (expected < FIELDS.len() && field_key(&mut self.reader, expected))
                        .then_some(expected);
                    let found = match next.or_else(|| {
                        (expected + 1..FIELDS.len()).find(|&i| field_key(&mut self.reader, i))
                    }) {
                        Some(index) => {
                            self.reader.expect(b':', "`:`")?;
                            Some(index)
                        }
                        None => {
                            let key = self.reader.key()?;
                            FIELDS.iter().position(|f| **f == *key)
                        }
                    };
                    if let Some(index) = found {
                        expected = index + 1;
                    }
                    match found {
                        Some(index) if fields.has(index) => {
                            return Err(self
                                .reader
                                .error(at, format!("duplicate field `{}`", FIELDS[index])));
                        }
                        Some(index) => self.field(index, &mut fields, (&mut *set, &mut *order))?,
                        None => self.reader.ignore()?,
                    }
                }
                let end = self.reader.pos() - 1;
                if fields.read & REQUIRED != REQUIRED
                    && let Some(index) = (0..FIELDS.len()).find(|&i| !OPTIONAL[i] && !fields.has(i))
                {
                    let message = format!("missing field `{}`", FIELDS[index]);
                    return Err(self.reader.error(end, message));
                }
                end
            }
            Some(b'[') => {
                self.reader.open()?;
                let mut first = true;
                let mut count = 0;
                while count < FIELDS.len() && self.reader.has_next(b']', &mut first)? {
                    self.field(count, &mut fields, (&mut *set, &mut *order))?;
                    count += 1;
                }
                if count == FIELDS.len() && self.reader.has_next(b']', &mut first)? {
                    return Err(self.reader.here("trailing characters"));
                }
                let end = self.reader.pos() - 1;
                if let Some(index) = (count..FIELDS.len()).find(|&i| !OPTIONAL[i]) {
                    let message = format!(
                        "invalid length {index}, expected struct Snapshot with 11 elements"
                    );
                    return Err(self.reader.error(end, message));
                }
                end
            }
            Some(_) => return Err(self.reader.here("invalid type: expected struct Snapshot")),
            None => return Err(self.reader.here("EOF while reading a value")),
        };
        self.reader.end()?;
        let missing = || self.reader.error(end, "missing field");
        Ok(Read {
            format: fields.format.ok_or_else(missing)?,
            machine: fields.machine.ok_or_else(missing)?,
            version: fields.version.unwrap_or_default(),
            status: fields.status.ok_or_else(missing)?,
            unknown_state: fields.configuration.ok_or_else(missing)?,
            history: fields.history,
            context: fields.context.ok_or_else(missing)?,
            timers: fields.timers,
            invocations: fields.invocations,
            now: fields.now.unwrap_or_default(),
            semantics: fields.semantics.unwrap_or_default(),
        })
    }

    /// When the text at the reader's `{` starts with the chart's head
    /// (`Head`) and a status in its usual form: the status, the machine's
    /// name in the text, and how many bytes they take from the `{` to the
    /// status's closing quote.
    #[inline]
    fn known_head(&self) -> Option<(Status, &'a str, usize)> {
        let head = &self.chart.snapshot_head;
        let name = head.name.clone()?;
        let text = self.reader.rest();
        let after = text.strip_prefix(head.text.as_str())?;
        let (status, len) = if after.starts_with("active\"") {
            (Status::Active, "active\"".len())
        } else if after.starts_with("done\"") {
            (Status::Done, "done\"".len())
        } else {
            return None;
        };
        Some((status, &text[name], head.text.len() + len))
    }

    /// Reads the field `FIELDS[index]`.
    fn field(
        &mut self,
        index: usize,
        fields: &mut Fields<'a>,
        active: Configuration<'_>,
    ) -> Result<(), JsonError> {
        fields.read |= 1 << index;
        let reader = &mut self.reader;
        match index {
            0 => fields.format = Some(unsigned(reader, u32::MAX.into(), "u32")? as u32),
            1 => fields.machine = Some(string(reader)?),
            2 => fields.version = Some(optional(reader, |r| unsigned(r, u64::MAX, "u64"))?),
            3 => fields.status = Some(status(reader)?),
            4 => fields.configuration = Some(self.configuration(active)?),
            5 => fields.history = Some(history(reader)?),
            6 => fields.context = Some(self.context()?),
            7 => fields.timers = Some(self.timers()?),
            8 => fields.invocations = Some(invocations(reader)?),
            9 => fields.now = Some(unsigned(reader, u64::MAX, "u64")?),
            _ => fields.semantics = Some(semantics(reader)?),
        }
        Ok(())
    }

    /// Marks each path's state and its ancestors active as it is read; the
    /// first path that names no state is returned for the error.
    fn configuration(&mut self, active: Configuration<'_>) -> Result<Option<String>, JsonError> {
        let (set, order) = active;
        let mut unknown = None;
        let reader = &mut self.reader;
        list(reader, |reader| {
            let path = string(reader)?;
            match self.chart.state_by_path(&path) {
                Some(leaf) => snapshot::activate(self.chart, (&mut *set, &mut *order), leaf),
                None if unknown.is_none() => unknown = Some(path.into_owned()),
                None => {}
            }
            Ok(())
        })?;
        Ok(unknown)
    }

    /// The context, straight into the layout's slots.
    fn context(&mut self) -> Result<Context, JsonError> {
        let layout = &self.chart.layout;
        let reader = &mut self.reader;
        let peek = reader.peek();
        let (start, depth) = (reader.pos(), reader.depth());
        if peek != Some(b'{') {
            reader.value()?;
            return Ok(Context::Misfit { start, depth });
        }
        reader.open()?;
        // Every slot is overwritten before the slots are taken (they are
        // only when each field was read), so the values they hold before
        // do not show; a list among them lends its memory to the one read.
        // Nulls made in place: `vec![Value::Null; n]` clones one, a call
        // per slot.
        let mut slots = std::mem::take(&mut self.slots);
        slots.truncate(layout.len());
        slots.resize_with(layout.len(), || Value::Null);
        let mut filled = Filled::new(layout.len());
        // Keys that are no field: an error once the text is read, but a
        // repeated one is a syntax error first, as for any map.
        let mut unknown: Vec<Cow<'a, str>> = Vec::new();
        let mut first = true;
        // Fields mostly come in slot order, as the writer puts them, and
        // are then recognised by their bytes (when they need no escapes).
        let mut expected = 0;
        let plain_names = layout.plain_names();
        while reader.has_next(b'}', &mut first)? {
            let at = reader.pos();
            if plain_names
                && let Some(field) = layout.field(expected)
                && reader.plain_key(field)
            {
                reader.expect(b':', "`:`")?;
                if !filled.insert(expected as usize) {
                    return Err(reader.error(at, format!("duplicate key `{field}`")));
                }
                reader.value_into(&mut slots[expected as usize])?;
                expected += 1;
                continue;
            }
            let key = reader.key()?;
            let slot = layout.slot(&key);
            let fresh = match slot {
                Some(slot) => filled.insert(slot as usize),
                None if unknown.contains(&key) => false,
                None => {
                    unknown.push(key.clone());
                    true
                }
            };
            if !fresh {
                return Err(reader.error(at, format!("duplicate key `{key}`")));
            }
            match slot {
                Some(slot) => reader.value_into(&mut slots[slot as usize])?,
                None => drop(reader.value()?),
            }
        }
        Ok(if unknown.is_empty() && filled.count == layout.len() {
            Context::Slots(slots)
        } else {
            Context::Misfit { start, depth }
        })
    }

    fn timers(&mut self) -> Result<Vec<TimerSnapshot>, JsonError> {
        let mut timers = Vec::new();
        list(&mut self.reader, |reader| {
            timers.push(timer(reader)?);
            Ok(())
        })?;
        Ok(timers)
    }
}

/// Which slots of the context were read: bits of a word for the usual few
/// fields, a vector beyond.
struct Filled {
    small: u64,
    large: Vec<bool>,
    count: usize,
}

impl Filled {
    fn new(len: usize) -> Filled {
        Filled {
            small: 0,
            large: if len > 64 {
                vec![false; len]
            } else {
                Vec::new()
            },
            count: 0,
        }
    }

    /// Marks `slot` read; false when it already was.
    fn insert(&mut self, slot: usize) -> bool {
        let fresh = match self.large.get_mut(slot) {
            Some(seen) => !std::mem::replace(seen, true),
            None => {
                let bit = 1u64 << (slot % 64);
                let fresh = self.small & bit == 0;
                self.small |= bit;
                fresh
            }
        };
        self.count += usize::from(fresh);
        fresh
    }
}

/// Reads a list's items with `item`.
fn list<'a>(
    reader: &mut Reader<'a>,
    mut item: impl FnMut(&mut Reader<'a>) -> Result<(), JsonError>,
) -> Result<(), JsonError> {
    match reader.peek() {
        Some(b'[') => reader.open()?,
        Some(_) => return Err(reader.here("invalid type: expected a list")),
        None => return Err(reader.here("EOF while reading a value")),
    }
    let mut first = true;
    while reader.has_next(b']', &mut first)? {
        item(reader)?;
    }
    Ok(())
}

fn string<'a>(reader: &mut Reader<'a>) -> Result<Cow<'a, str>, JsonError> {
    match reader.peek() {
        Some(b'"') => reader.string(),
        Some(_) => Err(reader.here("invalid type: expected a string")),
        None => Err(reader.here("EOF while reading a value")),
    }
}

/// `null` as `None`, else what `read` reads.
fn optional<'a, T>(
    reader: &mut Reader<'a>,
    read: impl FnOnce(&mut Reader<'a>) -> Result<T, JsonError>,
) -> Result<Option<T>, JsonError> {
    if reader.peek() == Some(b'n') {
        reader.null()?;
        return Ok(None);
    }
    read(reader).map(Some)
}

/// A non-negative integer up to `max`, written without fraction or exponent
/// (serde_json reads `1.0` and `1e2` as doubles, which no integer field takes).
fn unsigned(reader: &mut Reader<'_>, max: u64, type_name: &str) -> Result<u64, JsonError> {
    // The usual integer, right at the position (compact JSON).
    let at = reader.pos();
    if let Some(n) = reader.short_unsigned() {
        return match n <= max {
            true => Ok(n),
            false => Err(not_unsigned(reader, at, Number::U64(n), type_name)),
        };
    }
    match reader.peek() {
        Some(b'-' | b'0'..=b'9') => {}
        Some(_) => return Err(reader.here(format!("invalid type: expected {type_name}"))),
        None => return Err(reader.here("EOF while reading a value")),
    }
    let at = reader.pos();
    match reader.number()? {
        Number::U64(n) if n <= max => Ok(n),
        other => Err(not_unsigned(reader, at, other, type_name)),
    }
}

#[cold]
fn not_unsigned(reader: &Reader<'_>, at: usize, number: Number, type_name: &str) -> JsonError {
    let message = match number {
        Number::U64(n) => format!("invalid value: integer `{n}`, expected {type_name}"),
        Number::I64(n) => format!("invalid value: integer `{n}`, expected {type_name}"),
        Number::F64(d) => format!("invalid type: floating point `{d:?}`, expected {type_name}"),
    };
    reader.error(at, message)
}

/// `"active"` or `"done"`, or the same variant as a map to null.
fn status(reader: &mut Reader<'_>) -> Result<Status, JsonError> {
    // The usual text, recognised without reading a string.
    reader.peek();
    if reader.plain_key("active") {
        return Ok(Status::Active);
    }
    unit_variant(reader, [("active", Status::Active), ("done", Status::Done)])
}

fn semantics(reader: &mut Reader<'_>) -> Result<Semantics, JsonError> {
    unit_variant(
        reader,
        [("scxml", Semantics::Scxml), ("xstate", Semantics::Xstate)],
    )
}

/// One of two unit variants of an enum, in the forms serde accepts: its
/// name as a string, or a map of its name to `null`.
fn unit_variant<T: Copy>(
    reader: &mut Reader<'_>,
    variants: [(&str, T); 2],
) -> Result<T, JsonError> {
    let [(first_name, first), (second_name, second)] = variants;
    let variant = |reader: &mut Reader<'_>| {
        let at = reader.pos();
        match &*string(reader)? {
            name if name == first_name => Ok(first),
            name if name == second_name => Ok(second),
            other => Err(reader.error(
                at,
                format!("unknown variant `{other}`, expected `{first_name}` or `{second_name}`"),
            )),
        }
    };
    match reader.peek() {
        Some(b'{') => {
            reader.open()?;
            let mut first = true;
            if !reader.has_next(b'}', &mut first)? {
                return Err(reader.here("invalid type: expected a variant"));
            }
            let found = variant(reader)?;
            reader.expect(b':', "`:`")?;
            reader.null()?;
            if reader.has_next(b'}', &mut first)? {
                return Err(reader.here("expected `}`"));
            }
            Ok(found)
        }
        _ => variant(reader),
    }
}

fn history(reader: &mut Reader<'_>) -> Result<IndexMap<String, Vec<String>>, JsonError> {
    match reader.peek() {
        Some(b'{') => reader.open()?,
        Some(_) => return Err(reader.here("invalid type: expected a map")),
        None => return Err(reader.here("EOF while reading a value")),
    }
    let mut history = IndexMap::new();
    let mut first = true;
    while reader.has_next(b'}', &mut first)? {
        let key = reader.key()?.into_owned();
        let mut paths = Vec::new();
        list(reader, |reader| {
            paths.push(string(reader)?.into_owned());
            Ok(())
        })?;
        // A repeated key keeps its place and takes the later paths, as
        // `IndexMap`'s own deserializer does.
        history.insert(key, paths);
    }
    Ok(history)
}

/// A timer's `kind` tag.
fn kind(reader: &mut Reader<'_>) -> Result<Kind, JsonError> {
    if reader.peek() != Some(b'"') {
        return Err(reader.here("invalid type: expected variant identifier"));
    }
    let at = reader.pos();
    match &*reader.string()? {
        "after" => Ok(Kind::After),
        "send" => Ok(Kind::Send),
        other => Err(reader.error(
            at,
            format!("unknown variant `{other}`, expected `after` or `send`"),
        )),
    }
}

/// The invocations in flight. They are rare and small, so their text is
/// checked in place (depth included) and then read by serde itself, which
/// accepts exactly what the serde route accepts.
fn invocations(reader: &mut Reader<'_>) -> Result<Vec<InvocationSnapshot>, JsonError> {
    reader.peek();
    let start = reader.pos();
    reader.value_checking(false)?;
    let text = &reader.text()[start..reader.pos()];
    serde_json::from_str(text).map_err(|error| {
        let (line, column) = (error.line(), error.column());
        // The error's place in the whole text, for the message's position.
        let offset = text
            .split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum::<usize>()
            + column.saturating_sub(1);
        let message = error.to_string();
        let message = message
            .rsplit_once(" at line ")
            .map_or(message.as_str(), |(m, _)| m)
            .to_string();
        reader.error(start + offset, message)
    })
}

/// A timer, as a map tagged by `kind` or as a list starting with the tag.
/// As serde does for an internally tagged enum, the whole timer is read
/// first (every value in full, repeated keys allowed apart from `kind`),
/// then its variant's fields are taken from where they start in the text.
fn timer<'a>(reader: &mut Reader<'a>) -> Result<TimerSnapshot, JsonError> {
    let text = reader.text();
    let as_map = match reader.peek() {
        Some(b'{') => true,
        Some(b'[') => false,
        Some(_) => {
            return Err(reader.here("invalid type: expected internally tagged enum TimerSnapshot"));
        }
        None => return Err(reader.here("EOF while reading a value")),
    };
    reader.open()?;
    let depth = reader.depth();
    let close = if as_map { b'}' } else { b']' };
    let mut kind_tag = None;
    let mut entries: Vec<(Cow<'a, str>, usize, usize)> = Vec::new();
    let mut first = true;
    while reader.has_next(close, &mut first)? {
        let at = reader.pos();
        let key = if as_map {
            reader.key()?
        } else if kind_tag.is_none() {
            kind_tag = Some(kind(reader)?);
            continue;
        } else {
            Cow::Borrowed("")
        };
        if as_map && key == "kind" {
            if kind_tag.is_some() {
                return Err(reader.error(at, "duplicate field `kind`"));
            }
            kind_tag = Some(kind(reader)?);
            continue;
        }
        reader.peek();
        let start = reader.pos();
        reader.value_checking(false)?;
        entries.push((key, at, start));
    }
    let end = reader.pos() - 1;
    let Some(kind_tag) = kind_tag else {
        return Err(reader.error(
            end,
            if as_map {
                "missing field `kind`"
            } else {
                "invalid length 0, expected internally tagged enum TimerSnapshot"
            },
        ));
    };
    let names = kind_tag.fields();
    let mut values: Vec<Option<usize>> = vec![None; names.len()];
    if as_map {
        for (key, at, start) in &entries {
            if let Some(index) = names.iter().position(|n| *n == key) {
                if values[index].is_some() {
                    return Err(reader.error(*at, format!("duplicate field `{}`", names[index])));
                }
                values[index] = Some(*start);
            }
        }
    } else {
        if entries.len() > names.len() {
            return Err(reader.error(
                end,
                format!(
                    "invalid length {}, expected {} elements in sequence",
                    entries.len(),
                    names.len()
                ),
            ));
        }
        for (index, (_, _, start)) in entries.iter().enumerate() {
            values[index] = Some(*start);
        }
    }
    // Each field again from its place in the text, with its type.
    let field = |name: &str| -> Option<Reader<'a>> {
        let index = names.iter().position(|n| *n == name)?;
        values[index].map(|start| Reader::at(text, start, depth))
    };
    let missing = |name: &str| {
        let message = if as_map {
            format!("missing field `{name}`")
        } else {
            let index = names.iter().position(|n| *n == name).unwrap_or(0);
            format!(
                "invalid length {index}, expected struct variant {} with {} elements",
                kind_tag.name(),
                names.len()
            )
        };
        reader.error(end, message)
    };
    let required_u64 = |name: &str, max: u64, type_name: &str| match field(name) {
        Some(mut at) => unsigned(&mut at, max, type_name),
        None => Err(missing(name)),
    };
    let required_string = |name: &str| match field(name) {
        Some(mut at) => string(&mut at).map(Cow::into_owned),
        None => Err(missing(name)),
    };
    Ok(match kind_tag {
        Kind::After => {
            let state = required_string("state")?;
            let after = required_u64("after", u32::MAX.into(), "u32")? as u32;
            TimerSnapshot::After {
                state,
                after,
                due: required_u64("due", u64::MAX, "u64")?,
                seq: required_u64("seq", u64::MAX, "u64")?,
            }
        }
        Kind::Send => {
            let event = required_string("event")?;
            let data = match field("data") {
                Some(mut at) => optional(&mut at, |r| r.value())?,
                None => None,
            };
            let id = match field("id") {
                Some(mut at) => optional(&mut at, |r| string(r).map(Cow::into_owned))?,
                None => None,
            };
            TimerSnapshot::Send {
                event,
                data,
                id,
                due: required_u64("due", u64::MAX, "u64")?,
                seq: required_u64("seq", u64::MAX, "u64")?,
            }
        }
    })
}
