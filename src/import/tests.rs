//! The SCXML importer on small documents: what it makes of each construct,
//! and the errors, each at its element, for what it cannot convert.

use super::{import, load_scxml};
use crate::syntax::yaml;

/// A document with the SCXML namespace around `body`.
fn scxml(attributes: &str, body: &str) -> String {
    format!("<scxml xmlns=\"http://www.w3.org/2005/07/scxml\" {attributes}>\n{body}\n</scxml>\n")
}

fn yaml_of(text: &str) -> String {
    let machine = load_scxml(text).unwrap_or_else(|e| panic!("{e:#?}"));
    yaml::format(&machine)
}

/// Each error as its message and the text its span covers.
fn errors_of(text: &str) -> Vec<(String, String)> {
    let errors = match load_scxml(text) {
        Ok(_) => panic!("imported without errors:\n{text}"),
        Err(errors) => errors,
    };
    errors
        .into_iter()
        .map(|e| (e.message, text[e.span.range()].to_string()))
        .collect()
}

#[test]
fn converts_states_transitions_actions_and_data() {
    let text = r##"<scxml xmlns="http://www.w3.org/2005/07/scxml" name="door" datamodel="ecmascript">
  <datamodel>
    <data id="count" expr="0"/>
    <data id="tags">["a", "b"]</data>
  </datamodel>
  <state id="closed">
    <onentry><assign location="count" expr="count + 1"/></onentry>
    <transition event="open" cond="count &lt; 3 &amp;&amp; !In('b.1')" target="opened"/>
    <transition event="error *" target="b.1"/>
    <transition event="knock.*" type="internal"/>
  </state>
  <state id="opened" initial="b.1">
    <transition event="again" target="opened"/>
    <transition event="inner" target="b.2"/>
    <transition event="inner2" type="internal" target="b.2"/>
    <state id="b.1">
      <onexit><log label="left" expr="count"/></onexit>
    </state>
    <state id="b.2">
      <onentry>
        <send event="tick" delay="1.5s" id="t"/>
        <send event="now" target="#_internal"/>
        <cancel sendid="t"/>
        <send event="x" type="http://www.w3.org/TR/scxml/#BasicHTTPEventProcessor"/>
        <raise event="never"/>
      </onentry>
      <transition event="done.state.opened" target="closed"/>
    </state>
    <final id="end"/>
  </state>
</scxml>"##;
    assert_eq!(
        yaml_of(text),
        r##"machine: door
context:
  count: 0
  tags: [a, b]
initial: closed
states:
  closed:
    id: closed
    entry:
      - assign: { count: context.count + 1 }
    on:
      open.*:
        target: opened
        guard: context.count < 3 && !in_state("opened.b_1")
      error.* *: '#b.1'
      knock.*: {}
  opened:
    initial: b_1
    on:
      again.*: { target: opened, reenter: true }
      inner.*: { target: .b_2, reenter: true }
      inner2.*: .b_2
    states:
      b_1:
        id: b.1
        exit:
          - log: '{"left": context.count}'
      b_2:
        id: b.2
        entry:
          - send: tick
            delay: 1500ms
            id: t
          - raise: now
          - cancel: t
          - raise: error.execution
        on:
          done.state.opened.*: '#closed'
      end: { type: final }
"##
    );
}

#[test]
fn writes_every_initial_out() {
    let text = scxml(
        r#"initial="p1 q2""#,
        r#"<state id="top">
  <initial><transition target="deep"><raise event="chosen"/></transition></initial>
  <onentry><raise event="entered"/></onentry>
  <state id="mid"><state id="deep"/></state>
</state>
<parallel id="par">
  <state id="p"><state id="p1"/><state id="p2"/></state>
  <state id="q"><state id="q1"/><state id="q2"/></state>
</parallel>"#,
    );
    let machine = load_scxml(&text).unwrap();
    let initial = |path: &str| -> Vec<String> {
        let state = machine
            .find_path(path)
            .map_or(machine.root(), |s| machine.state(s));
        state.initial.iter().map(|t| t.text.clone()).collect()
    };
    assert_eq!(initial(""), ["#p1", "#q2"]);
    assert_eq!(initial("top"), ["#deep"]);
    assert_eq!(initial("top.mid"), ["deep"]);
    assert_eq!(initial("par.p"), ["p1"]);
    // The actions of `<initial>` run after the state's own entry actions.
    let top = machine.state(machine.find_path("top").unwrap());
    let raised: Vec<String> = top
        .entry
        .iter()
        .map(|a| match a {
            crate::model::Action::Raise { event, .. } => event.text.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(raised, ["entered", "chosen"]);
}

#[test]
fn initial_actions_need_a_state_entered_only_by_default() {
    let text = scxml(
        r#"initial="a""#,
        r#"<state id="a">
  <initial><transition target="a1"><raise event="chosen"/></transition></initial>
  <state id="a1"/><state id="a2"/>
</state>
<state id="b"><transition event="go" target="a2"/></state>"#,
    );
    let errors = errors_of(&text);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].0.contains("entered by default"), "{errors:?}");
    assert!(errors[0].1.starts_with("<transition target=\"a1\">"));
}

#[test]
fn event_descriptors_match_as_in_scxml() {
    let text = scxml(
        "",
        r#"<state id="a">
  <transition event="foo" target="b"/>
</state>
<state id="b">
  <transition event="*" target="a"/>
</state>"#,
    );
    let machine = load_scxml(&text).unwrap();
    let descriptor = |i: usize| match &machine.transitions[i].trigger {
        crate::model::Trigger::Event(d) => d.clone(),
        other => panic!("{other:?}"),
    };
    assert!(descriptor(0).matches("foo"));
    assert!(descriptor(0).matches("foo.bar"));
    assert!(!descriptor(0).matches("foobar"));
    assert!(descriptor(1).matches("anything.at.all"));
}

#[test]
fn keeps_transitions_of_one_descriptor_together_where_that_changes_nothing() {
    let text = scxml(
        "",
        r#"<state id="a">
  <transition event="x" cond="In('b')" target="b"/>
  <transition event="y" target="b"/>
  <transition event="x" target="a"/>
</state>
<state id="b"/>"#,
    );
    let machine = load_scxml(&text).unwrap();
    let order: Vec<String> = machine
        .transitions
        .iter()
        .map(|t| format!("{:?}", t.trigger))
        .collect();
    assert!(order[0].contains("\"x\"") && order[1].contains("\"x\"") && order[2].contains("\"y\""));

    let overtaking = text.replace(r#"event="y""#, r#"event="x.more""#);
    let errors = errors_of(&overtaking);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0]
            .0
            .contains("before the earlier `x.more.*` transition")
    );
    assert_eq!(errors[0].1, r#"<transition event="x" target="a"/>"#);
}

#[test]
fn sends_to_unreachable_targets_become_their_errors() {
    let text = scxml(
        "",
        r##"<state id="a">
  <onentry>
    <send event="e1" target="#_scxml_other"/>
    <send event="e2" target="somewhere"/>
    <raise event="never"/>
  </onentry>
</state>"##,
    );
    let yaml = yaml_of(&text);
    assert!(
        yaml.ends_with(
            "entry:\n      - raise: error.communication\n      - raise: error.execution\n"
        ),
        "{yaml}"
    );
    assert!(!yaml.contains("never"));
}

#[test]
fn reports_what_cannot_be_converted_at_its_element() {
    let text = scxml(
        "",
        r##"<state id="a">
  <onentry>
    <script>x = 1</script>
    <if cond="x"><raise event="e"/></if>
    <send eventexpr="'e'"/>
    <send event="p" target="#_parent"/>
    <log expr="_event.origin"/>
  </onentry>
  <invoke src="other.scxml"/>
  <transition event="go" cond="typeof x" target="nowhere" extra="1"/>
</state>
<final id="f"><donedata><param name="x" expr="1"/></donedata></final>
<other:thing xmlns:other="urn:other"/>"##,
    );
    let errors = errors_of(&text);
    let found: Vec<(&str, &str)> = errors
        .iter()
        .map(|(m, at)| (m.as_str(), at.as_str()))
        .collect();
    let expect = [
        ("`<script>` cannot be imported", "<script>"),
        ("`<if>` cannot be imported", "<if cond=\"x\">"),
        ("the attribute `eventexpr` of `<send>`", "'e'"),
        ("the send target `#_parent`", "#_parent"),
        (
            "`<invoke>` cannot be imported",
            "<invoke src=\"other.scxml\"/>",
        ),
        ("`typeof` cannot be translated", "t"),
        ("unknown target `nowhere`", "nowhere"),
        ("unknown attribute `extra` on `<transition>`", "1"),
        ("`<donedata>` cannot be imported", "<donedata>"),
        (
            "unknown element `<thing>` of the namespace `urn:other`",
            "<other:thing xmlns:other=\"urn:other\"/>",
        ),
    ];
    for (message, at) in expect {
        assert!(
            found.iter().any(|(m, a)| m.contains(message) && *a == at),
            "no error `{message}` at `{at}` in {found:#?}"
        );
    }
    assert_eq!(found.len(), expect.len(), "{found:#?}");
}

#[test]
fn resolves_ifs_whose_conditions_are_known_where_they_run() {
    let text = scxml(
        r#"initial="s""#,
        r#"<state id="s">
  <onentry>
    <if cond="In('s1')"><raise event="child"/>
    <elseif cond="In('s') &amp;&amp; !In('s2')"/><raise event="itself"/><send event="x" type="nowhere"/>
    <else/><raise event="otherwise"/>
    </if>
    <raise event="never"/>
  </onentry>
  <onexit><if cond="In('s1')"><raise event="no"/><else/><raise event="gone"/></if></onexit>
  <state id="s1"/><state id="s2"/>
  <transition event="e"><if cond="In('s1')"><raise event="maybe"/></if></transition>
</state>"#,
    );
    let errors = errors_of(&text);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0]
            .0
            .contains("the condition is not known where the block runs")
    );
    assert_eq!(errors[0].1, r#"<if cond="In('s1')">"#);
    let span = load_scxml(&text).unwrap_err()[0].span;
    assert!(span.start as usize > text.find("<transition").unwrap());

    let without = text.replace(r#"<if cond="In('s1')"><raise event="maybe"/></if>"#, "");
    let yaml = yaml_of(&without);
    assert!(
        yaml.contains("entry:\n      - raise: itself\n      - raise: error.execution\n    exit:\n      - raise: gone\n"),
        "{yaml}"
    );
}

#[test]
fn checks_the_data_model() {
    let text = scxml(
        "",
        r#"<datamodel>
  <data expr="1"/>
  <data id="a" expr="1">2</data>
  <data id="b" expr="other"/>
  <data id="c" src="c.json"/>
  <other id="d"/>
</datamodel>
<state id="s"><onentry><assign location="e" expr="1"/></onentry></state>"#,
    );
    let errors = errors_of(&text);
    let expect = [
        ("`<data>` needs the attribute `id`", r#"<data expr="1"/>"#),
        ("`expr` or content, not both", "1"),
        ("an initial value must be a literal", "o"),
        ("the attribute `src` of `<data>`", "c.json"),
        (
            "unexpected `<other>` inside `<datamodel>`",
            r#"<other id="d"/>"#,
        ),
        ("unknown context field `e`", "e"),
    ];
    for (message, at) in expect {
        assert!(
            errors.iter().any(|(m, a)| m.contains(message) && a == at),
            "no error `{message}` at `{at}` in {errors:#?}"
        );
    }
    assert_eq!(errors.len(), expect.len(), "{errors:#?}");
}

#[test]
fn an_untranslatable_log_logs_its_text() {
    let text = scxml(
        "",
        r#"<state id="a"><onentry><log label="L" expr="_sessionid"/></onentry></state>"#,
    );
    assert!(yaml_of(&text).contains(r#"log: '{"L": "untranslated: _sessionid"}'"#));
}

#[test]
fn rejects_documents_that_are_not_scxml() {
    for (text, wanted) in [
        ("<machine/>", "starts with `<scxml>`"),
        ("<scxml xmlns=\"urn:other\"/>", "starts with `<scxml>`"),
        ("<scxml><state id=\"a\"></scxml>", "malformed XML"),
    ] {
        let errors = import(text).unwrap_err();
        assert!(errors[0].message.contains(wanted), "{text}: {errors:?}");
    }
}
