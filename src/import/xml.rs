//! XML text → a small element tree with byte spans, over quick-xml.
//!
//! The SCXML importer needs every element's place for its errors, and the
//! place of every attribute value for expressions, so the tree keeps both.

use quick_xml::events::{BytesStart, Event};
use quick_xml::reader::Reader;

use crate::diagnostic::{Diagnostic, LoadError};
use crate::span::Span;

/// One element: its local name, attributes, child elements and text.
#[derive(Clone, Debug)]
pub(super) struct Element {
    /// The name without its namespace prefix.
    pub name: String,
    /// The namespace the prefix (or the default namespace) stands for here.
    pub namespace: Option<String>,
    pub attributes: Vec<Attribute>,
    pub children: Vec<Element>,
    /// Text and CDATA directly inside, unescaped and joined.
    pub text: String,
    /// Where the first non-blank text inside starts, if there is any.
    pub text_span: Option<Span>,
    /// The start tag.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub(super) struct Attribute {
    /// The name as written, prefix included (`xmlns:conf`).
    pub name: String,
    /// The value with references resolved and white space normalized.
    pub value: String,
    /// Where the value was written, between the quotes.
    pub span: Span,
}

impl Element {
    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }
}

/// Parses a whole document into its root element.
/// How deeply elements may nest: the importer recurses over the tree, and
/// no honest chart nests states anywhere near this.
const MAX_DEPTH: usize = 200;

pub(super) fn parse(text: &str) -> Result<Element, Box<Diagnostic>> {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let start = reader.buffer_position() as usize;
        let event = reader.read_event().map_err(|e| {
            let at = reader.error_position() as usize;
            syntax(format!("malformed XML: {e}"), Span::new(at, at + 1))
        })?;
        let end = reader.buffer_position() as usize;
        match event {
            Event::Start(tag) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(syntax(
                        format!("the document nests more than {MAX_DEPTH} elements deep"),
                        Span::new(start, end),
                    ));
                }
                let element = element(&tag, text, Span::new(start, end), &stack)?;
                stack.push(element);
            }
            Event::Empty(tag) => {
                let element = element(&tag, text, Span::new(start, end), &stack)?;
                attach(&mut stack, &mut root, element)?;
            }
            Event::End(_) => {
                // quick-xml checks that end tags match their start tags.
                if let Some(element) = stack.pop() {
                    attach(&mut stack, &mut root, element)?;
                }
            }
            Event::Text(t) => add_text(&mut stack, &t.xml10_content(), Span::new(start, end))?,
            Event::CData(t) => add_text(&mut stack, &t.xml10_content(), Span::new(start, end))?,
            Event::GeneralRef(r) => {
                let span = Span::new(start, end);
                let name = r.xml10_content();
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => match quick_xml::escape::resolve_predefined_entity(&name) {
                        Some(s) => s.to_string(),
                        None => {
                            return Err(syntax(format!("unknown entity `&{name};`"), span));
                        }
                    },
                    Err(e) => return Err(syntax(format!("invalid reference: {e}"), span)),
                };
                add_text(&mut stack, &resolved, span)?;
            }
            Event::Eof => break,
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(syntax(
            format!("`<{}>` is never closed", open.name),
            open.span,
        ));
    }
    root.ok_or_else(|| syntax("the document has no root element".into(), Span::new(0, 0)))
}

fn syntax(message: String, span: Span) -> Box<Diagnostic> {
    Box::new(LoadError::Syntax { message }.at(span, []))
}

fn element(
    tag: &BytesStart,
    text: &str,
    span: Span,
    open: &[Element],
) -> Result<Element, Box<Diagnostic>> {
    let qname = tag.name();
    let full: &str = qname.as_ref();
    let (prefix, name) = match full.split_once(':') {
        Some((p, n)) => (Some(p.to_string()), n.to_string()),
        None => (None, full.to_string()),
    };
    let mut attributes = Vec::new();
    for attribute in tag.attributes() {
        let attribute = attribute.map_err(|e| syntax(format!("malformed attribute: {e}"), span))?;
        let raw: &str = attribute.value.as_ref();
        let value_span = offset_in(text, raw)
            .map(|at| Span::new(at, at + raw.len()))
            .unwrap_or(span);
        let value = attribute
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| syntax(format!("malformed attribute value: {e}"), value_span))?;
        attributes.push(Attribute {
            name: attribute.key.as_ref().to_string(),
            value: value.into_owned(),
            span: value_span,
        });
    }
    let declaration = match &prefix {
        Some(p) => format!("xmlns:{p}"),
        None => "xmlns".to_string(),
    };
    let namespace = std::iter::once(&attributes)
        .chain(open.iter().rev().map(|e| &e.attributes))
        .find_map(|attributes| attributes.iter().find(|a| a.name == declaration))
        .map(|a| a.value.clone())
        .filter(|uri| !uri.is_empty());
    if let (Some(p), None) = (&prefix, &namespace) {
        return Err(syntax(format!("the prefix `{p}` is not declared"), span));
    }
    Ok(Element {
        name,
        namespace,
        attributes,
        children: Vec::new(),
        text: String::new(),
        text_span: None,
        span,
    })
}

/// The byte offset of `part` in `text`, when `part` is a slice of it.
fn offset_in(text: &str, part: &str) -> Option<usize> {
    let start = text.as_ptr() as usize;
    let at = (part.as_ptr() as usize).checked_sub(start)?;
    (at + part.len() <= text.len()).then_some(at)
}

fn attach(
    stack: &mut [Element],
    root: &mut Option<Element>,
    element: Element,
) -> Result<(), Box<Diagnostic>> {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None if root.is_none() => *root = Some(element),
        None => {
            return Err(syntax(
                "a second root element: an XML document has one".into(),
                element.span,
            ));
        }
    }
    Ok(())
}

fn add_text(stack: &mut [Element], text: &str, span: Span) -> Result<(), Box<Diagnostic>> {
    match stack.last_mut() {
        Some(parent) => {
            if parent.text_span.is_none() && !text.trim().is_empty() {
                parent.text_span = Some(span);
            }
            parent.text.push_str(text);
            Ok(())
        }
        None if text.trim().is_empty() => Ok(()),
        None => Err(syntax(
            "text outside the root element".into(),
            Span::new(span.start as usize, span.end as usize),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_places_of_elements_and_attribute_values() {
        let text = r#"<?xml version="1.0"?>
<!-- a comment -->
<a x="1 &amp; 2"><b y='z'/><c>t &lt; <![CDATA[<u>]]></c></a>"#;
        let root = parse(text).unwrap();
        assert_eq!(root.name, "a");
        let x = root.attribute("x").unwrap();
        assert_eq!(x.value, "1 & 2");
        assert_eq!(&text[x.span.range()], "1 &amp; 2");
        let b = &root.children[0];
        assert_eq!(&text[b.span.range()], "<b y='z'/>");
        assert_eq!(&text[b.attribute("y").unwrap().span.range()], "z");
        assert_eq!(root.children[1].text, "t < <u>");
    }

    #[test]
    fn resolves_namespaces_in_scope() {
        let root = parse(r#"<n:a xmlns:n="urn:x" xmlns="urn:d"><b/><n:c xmlns:n="urn:y"/></n:a>"#)
            .unwrap();
        assert_eq!(root.namespace.as_deref(), Some("urn:x"));
        assert_eq!(root.children[0].namespace.as_deref(), Some("urn:d"));
        assert_eq!(root.children[1].namespace.as_deref(), Some("urn:y"));
        assert_eq!(parse("<a/>").unwrap().namespace, None);
        assert_eq!(parse("<q:a/>").unwrap_err().code, "E001");
    }

    #[test]
    fn reports_malformed_documents_with_a_place() {
        for bad in [
            "<a><b></a>",
            "<a>",
            "",
            "<a/><b/>",
            "<a x=1/>",
            "<a>&nope;</a>",
        ] {
            let error = parse(bad).unwrap_err();
            assert_eq!(error.code, "E001", "{bad}: {}", error.message);
            assert!(error.span.start as usize <= bad.len(), "{bad}");
        }
    }
}
