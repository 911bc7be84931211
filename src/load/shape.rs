//! The shape of a machine file, seen without parsing it: the keys at the top
//! level of a YAML or JSON text. A repository holds many YAML and JSON files
//! that are no machine (lock files, compose files, OpenAPI specs, CI
//! workflows); only those whose top level holds `machine` or `states` are
//! read as machines. The look is a scan of the text, not a parse, so that a
//! machine file with a syntax error still shows its shape (and gets its
//! errors), while a broken file of some other kind is passed over.

/// The keys that make a top level a machine's: our format's `machine:`, and
/// the `states` of every statechart config (ours, XState's JSON).
const MACHINE_KEYS: [&str; 2] = ["machine", "states"];

/// Whether a YAML text's top level holds a `machine` or `states` key: in a
/// block mapping, a key at the indentation of the first line with content;
/// in a flow mapping (`{machine: m, ...}`), a key at its first level.
pub fn yaml_has_machine_shape(text: &str) -> bool {
    let mut top: Option<usize> = None;
    for line in text.lines() {
        let content = line.trim_start_matches([' ', '\t']);
        // A document marker may carry the document's first content.
        let content = match content.strip_prefix("---") {
            Some(rest) if rest.is_empty() || rest.starts_with([' ', '\t']) => {
                rest.trim_start_matches([' ', '\t'])
            }
            _ => content,
        };
        if content.is_empty()
            || content.starts_with('#')
            || content.starts_with('%')
            || content == "..."
        {
            continue;
        }
        let indent = line.len() - line.trim_start_matches([' ', '\t']).len();
        match top {
            None => {
                if content.starts_with('{') {
                    return flow_keys(&text[offset_of(text, content)..], true)
                        .iter()
                        .any(|k| MACHINE_KEYS.contains(&k.as_str()));
                }
                top = Some(indent);
            }
            Some(top) if indent != top => continue,
            Some(_) => {}
        }
        if block_key(content).is_some_and(|k| MACHINE_KEYS.contains(&k)) {
            return true;
        }
    }
    false
}

/// Whether a JSON text is an object whose first level holds a `states` or
/// `machine` key.
pub fn json_has_machine_shape(text: &str) -> bool {
    let body = text.trim_start_matches('\u{feff}').trim_start();
    body.starts_with('{')
        && flow_keys(body, false)
            .iter()
            .any(|k| MACHINE_KEYS.contains(&k.as_str()))
}

/// The byte offset of `part`, a slice of `text`, in `text`.
fn offset_of(text: &str, part: &str) -> usize {
    part.as_ptr() as usize - text.as_ptr() as usize
}

/// The key of a block mapping entry (`key:`, `"key":`, `'key':`), if the
/// line starts one.
fn block_key(content: &str) -> Option<&str> {
    let (key, rest) = match content.chars().next()? {
        quote @ ('"' | '\'') => {
            let end = content[1..].find(quote)? + 1;
            (&content[1..end], &content[end + 1..])
        }
        _ => {
            let colon = content.find(':')?;
            (content[..colon].trim_end(), &content[colon..])
        }
    };
    let rest = rest.trim_start_matches([' ', '\t']);
    let after = rest.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some(key)
}

/// The keys at the first level of the flow mapping (or JSON object) that
/// `text` starts with, read up to its end or where the text breaks off.
/// `yaml` allows plain keys and `#` comments.
fn flow_keys(text: &str, yaml: bool) -> Vec<String> {
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut expecting_key = false;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' if c == '"' || yaml => {
                let mut value = String::new();
                while let Some((_, d)) = chars.next() {
                    match d {
                        '\\' if c == '"' => {
                            if let Some((_, escaped)) = chars.next() {
                                value.push(escaped);
                            }
                        }
                        '\'' if c == '\'' && chars.peek().is_some_and(|&(_, n)| n == '\'') => {
                            chars.next();
                            value.push('\'');
                        }
                        d if d == c => break,
                        d => value.push(d),
                    }
                }
                if depth == 1 && expecting_key {
                    keys.push(value);
                    expecting_key = false;
                }
            }
            '{' | '[' => {
                depth += 1;
                expecting_key = depth == 1 && c == '{';
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expecting_key = true,
            '#' if yaml && text[..at].ends_with([' ', '\t', '\n', '{', ',']) => {
                while chars.next_if(|&(_, d)| d != '\n').is_some() {}
            }
            c if c.is_whitespace() => {}
            _ if yaml && depth == 1 && expecting_key => {
                // A plain key runs to the `:` that ends it.
                let rest = &text[at..];
                let end = rest.find([':', ',', '}', '\n']).unwrap_or(rest.len());
                keys.push(rest[..end].trim_end().to_string());
                expecting_key = false;
                while chars.next_if(|&(i, _)| i < at + end).is_some() {}
            }
            _ => {}
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_yaml_machine_has_machine_or_states_at_its_top_level() {
        assert!(yaml_has_machine_shape(
            "# orders\nmachine: order\ninitial: a\n"
        ));
        assert!(yaml_has_machine_shape("---\nstates:\n  a: {}\n"));
        assert!(yaml_has_machine_shape("\"machine\": order\n"));
        assert!(yaml_has_machine_shape(
            "  machine: indented\n  states: {}\n"
        ));
        assert!(yaml_has_machine_shape(
            "{ machine: order, states: { a: {} } }"
        ));
        assert!(yaml_has_machine_shape("{\n  \"states\": {}\n}\n"));
        // Broken past the key: the shape still shows, the load reports the rest.
        assert!(yaml_has_machine_shape("machine: order\nstates:\n\t- [\n"));
    }

    #[test]
    fn other_yaml_has_not() {
        let compose = "services:\n  db:\n    image: postgres:16\n    states: ignored\n";
        assert!(!yaml_has_machine_shape(compose));
        let lock = "lockfileVersion: '9.0'\n\nimporters:\n  .:\n    dependencies:\n      xstate:\n        specifier: 5.33.3\n";
        assert!(!yaml_has_machine_shape(lock));
        assert!(!yaml_has_machine_shape("- machine: a list item\n"));
        assert!(!yaml_has_machine_shape(
            "description: |\n  machine: in a block scalar\nname: x\n"
        ));
        assert!(!yaml_has_machine_shape("{ services: { states: 1 } }"));
        assert!(!yaml_has_machine_shape(""));
        assert!(!yaml_has_machine_shape("   \n\n"));
        // Does not parse, and is no machine either.
        assert!(!yaml_has_machine_shape("key: [unclosed\n  other: {\n"));
        assert!(!yaml_has_machine_shape(
            "machinery: x\nstates_of_matter: y\n"
        ));
    }

    #[test]
    fn a_json_config_has_states_at_its_first_level() {
        assert!(json_has_machine_shape(
            "{\"id\": \"order\", \"initial\": \"a\", \"states\": {\"a\": {}}}"
        ));
        assert!(json_has_machine_shape("\u{feff}{ \"machine\": \"m\" }"));
        assert!(json_has_machine_shape("{ \"states\": { \"a\": "));
        assert!(!json_has_machine_shape(
            "{ \"name\": \"web\", \"config\": { \"states\": {} } }"
        ));
        assert!(!json_has_machine_shape("{ \"key\\\"states\": 1 }"));
        assert!(!json_has_machine_shape("[{ \"states\": {} }]"));
        assert!(!json_has_machine_shape(
            "{ \"compilerOptions\": { \"strict\": true } // states\n}"
        ));
    }
}
