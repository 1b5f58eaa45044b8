//! A vCard reader for address-book exports (vCard 2.1, 3.0 — RFC 2426 — and
//! 4.0 — RFC 6350), usable without a database.
//!
//! What it reads from each card: `FN` (display name; `N`, then `ORG`, then the
//! first identifier as fallbacks), every `TEL` and `EMAIL` with its `TYPE`
//! parameters, and `VERSION`. Everything else is ignored.
//!
//! Supported syntax:
//! * line unfolding (RFC 6350 §3.2): a CRLF or LF followed by a space or tab
//!   continues the previous line; vCard 2.1 quoted-printable soft line breaks
//!   (a `QUOTED-PRINTABLE` line ending in `=`) are joined too, and quoted-
//!   printable `FN`/`N` values are decoded as UTF-8;
//! * group prefixes (`item1.TEL:`), property and parameter names in any case;
//! * `TYPE` parameters as `TYPE=cell,voice`, `TYPE=CELL;TYPE=VOICE`,
//!   `TYPE="cell,voice"` and vCard 2.1's bare `;CELL`; a vCard 4.0 `PREF`
//!   parameter adds the type `pref`;
//! * `tel:` URIs (`VALUE=uri:tel:+1-555-…;ext=…`; parameters after `;` are
//!   dropped) and `mailto:` URIs;
//! * text escapes (`\,` `\;` `\\` `\n`) in names.
//!
//! Errors are reported, never fatal (except the size limits): a card with a
//! line that has no `:`, a `BEGIN:VCARD` inside an open card, or a missing
//! `END:VCARD` is skipped and reported with the 1-based line number of the
//! offending line (for a missing `END:VCARD`, the line of its `BEGIN:VCARD`).
//! A `TEL` or `EMAIL` that does not normalise is dropped with a warning on its
//! line and **the rest of the card is kept**. A card left without any usable
//! identifier is skipped and reported on its `BEGIN:VCARD` line. Lines outside
//! any card are reported once per run of such lines. A missing `VERSION` is
//! accepted.
//!
//! The same identifier twice in one card is kept once, with the union of the
//! `TYPE`s (at most [`MAX_TYPES`] per identifier).
//!
//! Limits: files over [`MAX_FILE_BYTES`] and lines (physical or unfolded) over
//! [`MAX_LINE_BYTES`] are refused; at most [`MAX_PROBLEMS`] problems are
//! listed, followed by one that counts the rest.

use std::collections::HashMap;

use serde::Serialize;

use crate::contact::ContactIdentifier;
use crate::error::{Error, Result};
use crate::identifier::{IdentifierKind, NormalizeOptions, normalize_email, normalize_phone};

/// Largest vCard file accepted: 64 MiB.
pub const MAX_FILE_BYTES: usize = 64 * 1024 * 1024;
/// Longest line accepted, before or after unfolding: 1 MiB.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;
/// Most problems listed individually in one parse.
pub const MAX_PROBLEMS: usize = 10_000;
/// Most `TYPE` values kept per identifier; more are ignored.
pub const MAX_TYPES: usize = 16;

/// Something wrong in a vCard file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// 1-based line number in the original (folded) file of the offending line.
    pub line: usize,
    /// What is wrong, for a person to read.
    pub reason: String,
    /// Whether a whole card was skipped (`false`: only one value or some stray
    /// lines were ignored).
    pub skipped_card: bool,
}

/// One card with its normalised identifiers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Card {
    /// Line of the card's `BEGIN:VCARD`.
    pub line: usize,
    /// The `VERSION` property, if the card had one.
    pub version: Option<String>,
    /// `FN`, else a name built from `N`, else `ORG`, else the first identifier.
    pub display_name: String,
    /// The card's phone numbers and e-mail addresses, normalised, in file
    /// order, without duplicates; never empty.
    pub identifiers: Vec<ContactIdentifier>,
}

/// The result of reading a vCard file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VcardParse {
    /// Cards that were read, in file order.
    pub cards: Vec<Card>,
    /// Problems found, in file order.
    pub problems: Vec<Problem>,
}

/// Reads `text` with the default [`NormalizeOptions`] (no default region, so
/// phone numbers need a country code). Never panics; a file over the size
/// limits yields no cards and one problem saying so.
///
/// ```
/// let parse = tacit_store::vcard::parse(
///     "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Alice\r\nTEL;TYPE=CELL:+1 234 567 8901\r\nEND:VCARD\r\n",
/// );
/// assert_eq!(parse.cards[0].identifiers[0].value, "12345678901");
/// assert!(parse.problems.is_empty());
/// ```
pub fn parse(text: &str) -> VcardParse {
    match parse_with(text, &NormalizeOptions::default()) {
        Ok(parse) => parse,
        Err(e) => {
            let line = match e {
                Error::VcardLineTooLong { line, .. } => line,
                _ => 1,
            };
            VcardParse {
                cards: Vec::new(),
                problems: vec![Problem {
                    line,
                    reason: e.to_string(),
                    skipped_card: false,
                }],
            }
        }
    }
}

/// Reads `text`, normalising identifiers with `opts`.
///
/// Fails only when the input exceeds [`MAX_FILE_BYTES`] or [`MAX_LINE_BYTES`];
/// every other defect is a [`Problem`] in the result.
pub fn parse_with(text: &str, opts: &NormalizeOptions) -> Result<VcardParse> {
    if text.len() > MAX_FILE_BYTES {
        return Err(Error::VcardTooLarge {
            size: text.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let mut parser = Parser::new(opts);
    let mut pending: Option<Logical> = None;
    let mut last_line = 0;
    for (idx, raw) in text.split('\n').enumerate() {
        let line_no = idx + 1;
        last_line = line_no;
        let mut line = raw.strip_suffix('\r').unwrap_or(raw);
        if idx == 0 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        check_line_len(line_no, line.len())?;
        if let Some(p) = pending.as_mut() {
            // RFC 6350 §3.2: CRLF followed by one space or tab is a fold.
            let continuation = if let Some(rest) = line.strip_prefix([' ', '\t']) {
                Some(rest)
            } else if p.text.ends_with('=') && p.is_quoted_printable() {
                // vCard 2.1 quoted-printable soft line break.
                p.text.pop();
                Some(line)
            } else {
                None
            };
            if let Some(rest) = continuation {
                p.text.push_str(rest);
                check_line_len(p.line, p.text.len())?;
                continue;
            }
        }
        if let Some(p) = pending.take() {
            parser.logical_line(p);
        }
        pending = Some(Logical {
            line: line_no,
            text: line.to_owned(),
            quoted_printable: None,
        });
    }
    if let Some(p) = pending.take() {
        parser.logical_line(p);
    }
    Ok(parser.finish(last_line))
}

fn check_line_len(line: usize, len: usize) -> Result<()> {
    if len > MAX_LINE_BYTES {
        return Err(Error::VcardLineTooLong {
            line,
            len,
            limit: MAX_LINE_BYTES,
        });
    }
    Ok(())
}

/// An unfolded line and the number of its first physical line.
struct Logical {
    line: usize,
    text: String,
    /// Whether the parameters say `QUOTED-PRINTABLE`, decided once the `:`
    /// has been seen (so that joining soft line breaks stays linear).
    quoted_printable: Option<bool>,
}

impl Logical {
    fn is_quoted_printable(&mut self) -> bool {
        if let Some(qp) = self.quoted_printable {
            return qp;
        }
        match find_colon(&self.text) {
            Some(i) => {
                let qp = self.text[..i].to_ascii_uppercase().contains("QUOTED-PRINTABLE");
                self.quoted_printable = Some(qp);
                qp
            }
            None => false,
        }
    }
}

/// One content line split into its parts (RFC 6350 §3.3:
/// `[group "."] name *(";" param) ":" value`).
struct Property<'a> {
    /// Upper-cased name without group.
    name: String,
    /// Lower-cased `TYPE` values, in order, without duplicates.
    types: Vec<String>,
    quoted_printable: bool,
    value: &'a str,
}

/// Index of the `:` that ends the name and parameters: the first one outside
/// double quotes, else (unbalanced quotes) the first one at all.
fn find_colon(text: &str) -> Option<usize> {
    let mut in_quotes = false;
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'"' => in_quotes = !in_quotes,
            b':' if !in_quotes => return Some(i),
            _ => {}
        }
    }
    text.find(':')
}

/// Splits `s` at `sep` bytes that are outside double quotes.
fn split_outside_quotes(s: &str, sep: u8) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut in_quotes = false;
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        if b == b'"' {
            in_quotes = !in_quotes;
        } else if b == sep && !in_quotes {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

fn parse_property(text: &str) -> Result<Property<'_>, &'static str> {
    let colon = find_colon(text).ok_or("the line has no ':' between property name and value")?;
    let head = &text[..colon];
    let value = &text[colon + 1..];
    let mut segments = split_outside_quotes(head, b';').into_iter();
    let full_name = segments.next().unwrap_or("").trim();
    let name = match full_name.rsplit_once('.') {
        Some((group, name)) => {
            if group.is_empty() || !group.chars().all(|c| is_name_char(c) || c == '.') {
                return Err("the line's group prefix is not a valid vCard group name");
            }
            name
        }
        None => full_name,
    };
    if name.is_empty() {
        return Err("the line has no property name before ':'");
    }
    if !name.chars().all(is_name_char) {
        return Err("the text before ':' is not a vCard property name");
    }
    let mut prop = Property {
        name: name.to_ascii_uppercase(),
        types: Vec::new(),
        quoted_printable: false,
        value,
    };
    for segment in segments {
        let segment = segment.trim();
        if segment.is_empty() {
            continue;
        }
        match segment.split_once('=') {
            Some((pname, pvalue)) => {
                let pname = pname.trim();
                if pname.eq_ignore_ascii_case("TYPE") {
                    prop.add_type(pvalue);
                } else if pname.eq_ignore_ascii_case("ENCODING") {
                    if unquote(pvalue).eq_ignore_ascii_case("QUOTED-PRINTABLE") {
                        prop.quoted_printable = true;
                    }
                } else if pname.eq_ignore_ascii_case("PREF") {
                    prop.add_type("pref");
                }
            }
            None => {
                // vCard 2.1 bare parameters: `;CELL`, `;QUOTED-PRINTABLE`.
                if segment.eq_ignore_ascii_case("QUOTED-PRINTABLE") {
                    prop.quoted_printable = true;
                } else if !["BASE64", "B", "7BIT", "8BIT"]
                    .iter()
                    .any(|e| segment.eq_ignore_ascii_case(e))
                {
                    prop.add_type(segment);
                }
            }
        }
    }
    Ok(prop)
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
        .trim()
}

impl Property<'_> {
    fn add_type(&mut self, raw: &str) {
        for t in unquote(raw).split(',') {
            if self.types.len() >= MAX_TYPES {
                return;
            }
            let t = unquote(t).to_lowercase();
            if !t.is_empty() && !self.types.contains(&t) {
                self.types.push(t);
            }
        }
    }

    /// The value as text: quoted-printable decoded if so marked, escapes
    /// (`\,` `\;` `\\` `\n`) kept for the caller.
    fn raw_text(&self) -> String {
        if self.quoted_printable {
            decode_quoted_printable(self.value)
        } else {
            self.value.to_owned()
        }
    }
}

/// Decodes quoted-printable (RFC 2045 §6.7) as UTF-8, replacing invalid
/// sequences; a malformed `=` escape is kept literally.
fn decode_quoted_printable(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Undoes vCard text escaping; an escaped newline becomes a space, since
/// the values read here are names.
fn unescape_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'N') => out.push(' '),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits at `sep` characters that are not escaped by a backslash.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + sep.len_utf8();
        }
    }
    parts.push(&s[start..]);
    parts
}

/// A display name from the structured `N` property (RFC 6350 §6.2.2:
/// family; given; additional; prefixes; suffixes), written in the order
/// prefixes, given, additional, family, suffixes.
fn name_from_n(value: &str) -> String {
    let parts = split_unescaped(value, ';');
    let component = |i: usize| -> String {
        parts
            .get(i)
            .map(|p| {
                split_unescaped(p, ',')
                    .into_iter()
                    .map(|v| unescape_text(v).trim().to_owned())
                    .filter(|v| !v.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    [3, 1, 2, 0, 4]
        .into_iter()
        .map(component)
        .filter(|c| !c.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A card being read.
struct CardBuilder {
    line: usize,
    version: Option<String>,
    formatted_name: Option<String>,
    structured_name: Option<String>,
    org: Option<String>,
    identifiers: Vec<ContactIdentifier>,
    /// Position of each value in `identifiers`.
    index: HashMap<String, usize>,
}

impl CardBuilder {
    fn new(line: usize) -> Self {
        CardBuilder {
            line,
            version: None,
            formatted_name: None,
            structured_name: None,
            org: None,
            identifiers: Vec::new(),
            index: HashMap::new(),
        }
    }

    fn add_identifier(&mut self, kind: IdentifierKind, value: String, types: Vec<String>) {
        match self.index.get(&value) {
            Some(&i) => {
                let existing = &mut self.identifiers[i].types;
                for t in types {
                    if existing.len() < MAX_TYPES && !existing.contains(&t) {
                        existing.push(t);
                    }
                }
            }
            None => {
                self.index.insert(value.clone(), self.identifiers.len());
                self.identifiers.push(ContactIdentifier { kind, value, types });
            }
        }
    }
}

enum State {
    /// Between cards; `stray` is the first line and count of a run of lines
    /// that belong to no card.
    Outside {
        stray: Option<(usize, usize)>,
    },
    InCard(Box<CardBuilder>),
    /// Inside a card already reported as malformed: read up to its end.
    Skipping,
}

struct Parser<'o> {
    opts: &'o NormalizeOptions,
    state: State,
    out: VcardParse,
    /// Problems beyond [`MAX_PROBLEMS`]: first line and count.
    suppressed: Option<(usize, usize)>,
}

impl<'o> Parser<'o> {
    fn new(opts: &'o NormalizeOptions) -> Self {
        Parser {
            opts,
            state: State::Outside { stray: None },
            out: VcardParse::default(),
            suppressed: None,
        }
    }

    fn problem(&mut self, line: usize, reason: String, skipped_card: bool) {
        if self.out.problems.len() < MAX_PROBLEMS {
            self.out.problems.push(Problem {
                line,
                reason,
                skipped_card,
            });
        } else {
            let s = self.suppressed.get_or_insert((line, 0));
            s.1 += 1;
        }
    }

    fn flush_stray(&mut self) {
        if let State::Outside { stray } = &mut self.state
            && let Some((line, count)) = stray.take()
        {
            let reason = if count == 1 {
                "a line outside any BEGIN:VCARD … END:VCARD block was ignored".to_owned()
            } else {
                format!(
                    "{count} lines outside any BEGIN:VCARD … END:VCARD block were ignored, \
                         starting here"
                )
            };
            self.problem(line, reason, false);
        }
    }

    fn logical_line(&mut self, logical: Logical) {
        let Logical { line, text, .. } = logical;
        if text.trim().is_empty() {
            return;
        }
        let prop = parse_property(&text);
        let (is_begin, is_end) = match &prop {
            Ok(p) => {
                let is_vcard = p.value.trim().eq_ignore_ascii_case("VCARD");
                (p.name == "BEGIN" && is_vcard, p.name == "END" && is_vcard)
            }
            Err(_) => (false, false),
        };

        if is_begin {
            match std::mem::replace(&mut self.state, State::Skipping) {
                State::Outside { stray } => {
                    self.state = State::Outside { stray };
                    self.flush_stray();
                }
                State::InCard(open) => self.problem(
                    line,
                    format!(
                        "BEGIN:VCARD inside the card begun on line {} (its END:VCARD is \
                         missing); that card was skipped",
                        open.line
                    ),
                    true,
                ),
                State::Skipping => {}
            }
            self.state = State::InCard(Box::new(CardBuilder::new(line)));
            return;
        }

        if is_end {
            match std::mem::replace(&mut self.state, State::Outside { stray: None }) {
                State::InCard(card) => self.finish_card(*card),
                State::Skipping => {}
                State::Outside { stray } => {
                    self.state = State::Outside { stray };
                    self.flush_stray();
                    self.problem(
                        line,
                        "END:VCARD without a matching BEGIN:VCARD was ignored".to_owned(),
                        false,
                    );
                }
            }
            return;
        }

        match &mut self.state {
            State::Outside { stray } => match stray {
                Some((_, count)) => *count += 1,
                None => *stray = Some((line, 1)),
            },
            State::Skipping => {}
            State::InCard(card) => match prop {
                Err(reason) => {
                    let begun = card.line;
                    self.state = State::Skipping;
                    self.problem(
                        line,
                        format!("{reason}; the card begun on line {begun} was skipped"),
                        true,
                    );
                }
                Ok(prop) => self.card_property(line, prop),
            },
        }
    }

    fn card_property(&mut self, line: usize, prop: Property<'_>) {
        let State::InCard(card) = &mut self.state else {
            return;
        };
        let text = || prop.raw_text();
        match prop.name.as_str() {
            "VERSION" => card.version = Some(prop.value.trim().to_owned()),
            "FN" => {
                let name = unescape_text(&text()).trim().to_owned();
                if !name.is_empty() {
                    card.formatted_name = Some(name);
                }
            }
            "N" => {
                let name = name_from_n(&text());
                if !name.is_empty() {
                    card.structured_name = Some(name);
                }
            }
            "ORG" => {
                let org = split_unescaped(&text(), ';')
                    .into_iter()
                    .map(|p| unescape_text(p).trim().to_owned())
                    .find(|p| !p.is_empty());
                if org.is_some() {
                    card.org = org;
                }
            }
            "TEL" | "EMAIL" => {
                let raw = prop.value.trim();
                if raw.is_empty() {
                    return;
                }
                let (kind, normalised) = if prop.name == "TEL" {
                    (IdentifierKind::Phone, normalize_phone(raw, self.opts))
                } else {
                    (IdentifierKind::Email, normalize_email(raw))
                };
                match normalised {
                    Ok(value) => card.add_identifier(kind, value, prop.types),
                    Err(e) => {
                        let what = if kind == IdentifierKind::Phone {
                            "number"
                        } else {
                            "address"
                        };
                        self.problem(
                            line,
                            format!("{e}; this {what} was skipped, the rest of the card was kept"),
                            false,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn finish_card(&mut self, card: CardBuilder) {
        let CardBuilder {
            line,
            version,
            formatted_name,
            structured_name,
            org,
            identifiers,
            index: _,
        } = card;
        let name = formatted_name.or(structured_name).or(org);
        if identifiers.is_empty() {
            let reason = match &name {
                Some(n) => format!(
                    "the card for {n:?} has no usable phone number or e-mail address; it was \
                     skipped"
                ),
                None => "the card has no usable phone number or e-mail address; it was skipped".to_owned(),
            };
            self.problem(line, reason, true);
            return;
        }
        let display_name = name.unwrap_or_else(|| identifiers[0].value.clone());
        self.out.cards.push(Card {
            line,
            version,
            display_name,
            identifiers,
        });
    }

    fn finish(mut self, last_line: usize) -> VcardParse {
        match std::mem::replace(&mut self.state, State::Outside { stray: None }) {
            State::Outside { stray } => {
                self.state = State::Outside { stray };
                self.flush_stray();
            }
            State::InCard(card) => self.problem(
                card.line,
                format!(
                    "the card begun here has no END:VCARD before the end of the file (line {last_line}); \
                     it was skipped"
                ),
                true,
            ),
            State::Skipping => {}
        }
        if let Some((line, count)) = self.suppressed {
            self.out.problems.push(Problem {
                line,
                reason: format!("{count} further problems, starting here, are not listed"),
                skipped_card: false,
            });
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const APPLE: &str = include_str!("../tests/data/apple-3.0.vcf");
    const GOOGLE: &str = include_str!("../tests/data/google-3.0.vcf");
    const RFC6350: &str = include_str!("../tests/data/rfc6350-4.0.vcf");
    const ANDROID: &str = include_str!("../tests/data/android-2.1.vcf");
    const MALFORMED: &str = include_str!("../tests/data/malformed.vcf");

    fn us() -> NormalizeOptions {
        NormalizeOptions::with_default_region("US").unwrap()
    }

    /// 1-based number of the only line of `text` that contains `needle`.
    fn line_of(text: &str, needle: &str) -> usize {
        let hits: Vec<usize> = text
            .split('\n')
            .enumerate()
            .filter(|(_, l)| l.contains(needle))
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(hits.len(), 1, "{needle:?} occurs {} times", hits.len());
        hits[0]
    }

    /// (value, types) pairs of a card.
    fn idents(card: &Card) -> Vec<(&str, Vec<&str>)> {
        card.identifiers
            .iter()
            .map(|i| (i.value.as_str(), i.types.iter().map(String::as_str).collect()))
            .collect()
    }

    #[test]
    fn apple_contacts_export_3_0() {
        let parse = parse_with(APPLE, &us()).unwrap();
        assert_eq!(parse.problems, vec![]);
        assert_eq!(parse.cards.len(), 3);

        let johnny = &parse.cards[0];
        assert_eq!(johnny.line, 1);
        assert_eq!(johnny.version.as_deref(), Some("3.0"));
        assert_eq!(johnny.display_name, "Johnny Appleseed");
        assert_eq!(
            idents(johnny),
            vec![
                ("johnny.appleseed@me.com", vec!["internet", "home", "pref"]),
                ("j.appleseed@apple.example", vec!["internet", "work"]),
                ("14155550101", vec!["cell", "voice", "pref"]),
                ("14155550102", vec!["home", "voice"]),
                ("14085550103", vec![]),
            ]
        );
        assert_eq!(johnny.identifiers[0].kind, IdentifierKind::Email);
        assert_eq!(johnny.identifiers[2].kind, IdentifierKind::Phone);

        let anna = &parse.cards[1];
        assert_eq!(anna.line, line_of(APPLE, "N:Müller") - 3);
        assert_eq!(anna.display_name, "Dr. Anna Maria Müller");
        assert_eq!(
            idents(anna),
            vec![
                ("4915123456789", vec!["cell", "voice", "pref"]),
                ("493045050", vec!["work", "voice"]),
                ("anna.mueller@charite.example", vec!["internet", "work", "pref"]),
                ("anna.m@posteo.example", vec!["internet"]),
            ]
        );

        let pizza = &parse.cards[2];
        assert_eq!(pizza.display_name, "Pizza Napoli");
        assert_eq!(idents(pizza), vec![("12125550147", vec!["work", "voice", "pref"])]);
    }

    #[test]
    fn national_numbers_need_a_default_region() {
        let parse = parse(APPLE);
        let got: Vec<(usize, bool)> = parse.problems.iter().map(|p| (p.line, p.skipped_card)).collect();
        assert_eq!(
            got,
            vec![
                (line_of(APPLE, "(415) 555-0102"), false),
                (line_of(APPLE, "(212) 555-0147"), false),
                // Pizza Napoli lost its only number: skipped, on its BEGIN line.
                (line_of(APPLE, "FN:Pizza Napoli") - 4, true),
            ]
        );
        assert!(parse.problems[0].reason.contains("(415) 555-0102"));
        assert!(parse.problems[0].reason.contains("no default region"));
        assert!(parse.problems[2].reason.contains("Pizza Napoli"));
        assert_eq!(parse.cards.len(), 2);
    }

    #[test]
    fn google_contacts_export_with_lf_endings() {
        let parse = parse(GOOGLE);
        assert_eq!(parse.problems, vec![]);
        let names: Vec<&str> = parse.cards.iter().map(|c| c.display_name.as_str()).collect();
        // Ngozi's FN is empty: the name comes from N.
        assert_eq!(names, ["Carlos Gómez", "Ngozi Okafor", "Priya Raman"]);
        assert_eq!(
            idents(&parse.cards[0]),
            vec![
                ("carlos.gomez@gmail.example", vec!["internet", "home"]),
                ("cgomez@example.com", vec!["internet", "work"]),
                ("34612345678", vec!["cell"]),
                ("34912345678", vec!["home"]),
                ("16465550134", vec![]),
            ]
        );
        assert_eq!(
            idents(&parse.cards[1]),
            vec![
                ("447400123456", vec!["cell"]),
                ("442079460958", vec!["work"]),
                ("ngozi.okafor@example.co.uk", vec!["internet"]),
            ]
        );
        // The same address twice (different case) is kept once.
        assert_eq!(
            idents(&parse.cards[2]),
            vec![
                ("priya.raman@example.in", vec!["internet"]),
                ("p.raman@work.example", vec!["internet"]),
            ]
        );
    }

    #[test]
    fn vcard_4_0_tel_uris_quoted_types_and_tab_folding() {
        let parse = parse(RFC6350);
        assert_eq!(parse.problems, vec![]);
        assert_eq!(parse.cards.len(), 2);
        let simon = &parse.cards[0];
        assert_eq!(simon.version.as_deref(), Some("4.0"));
        assert_eq!(simon.display_name, "Simon Perreault");
        assert_eq!(
            idents(simon),
            vec![
                ("14186569254", vec!["work", "voice", "pref"]),
                ("14182626501", vec!["work", "cell", "voice", "video", "text"]),
                ("simon.perreault@viagenie.example", vec!["work"]),
            ]
        );
        let jane = &parse.cards[1];
        assert_eq!(jane.display_name, "Jane Doe");
        assert_eq!(
            idents(jane),
            vec![
                ("12025550173", vec!["cell"]),
                ("12025550174", vec!["home"]),
                ("jane.doe@example.net", vec!["home"]),
                ("jdoe@work.example", vec!["pref"]),
            ]
        );
    }

    #[test]
    fn vcard_2_1_bare_types_and_quoted_printable_names() {
        let parse = parse(ANDROID);
        assert_eq!(parse.problems, vec![]);
        assert_eq!(parse.cards.len(), 2);
        assert_eq!(parse.cards[0].display_name, "Ayşe Öztürk (Work)");
        assert_eq!(
            idents(&parse.cards[0]),
            vec![
                ("905321234567", vec!["cell", "pref"]),
                ("902125551234", vec!["work"]),
                ("ayse.ozturk@example.com.tr", vec!["home"]),
            ]
        );
        assert_eq!(parse.cards[1].display_name, "Bob Smith");
        assert_eq!(idents(&parse.cards[1]), vec![("13125550188", vec!["cell", "voice"])]);
    }

    #[test]
    fn malformed_cards_are_reported_by_line_and_the_rest_imported() {
        let parse = parse(MALFORMED);
        let names: Vec<&str> = parse.cards.iter().map(|c| c.display_name.as_str()).collect();
        assert_eq!(names, ["Good Before", "Half Valid", "Good After"]);
        assert_eq!(
            idents(&parse.cards[1]),
            vec![
                ("14155550113", vec!["cell"]),
                ("half.valid@example.com", vec!["internet"]),
            ]
        );
        assert_eq!(parse.cards[2].line, line_of(MALFORMED, "FN:Good After") - 1);

        let got: Vec<(usize, bool)> = parse.problems.iter().map(|p| (p.line, p.skipped_card)).collect();
        let m = |needle| line_of(MALFORMED, needle);
        let expected = vec![
            (1, false),                           // two lines of preamble
            (m("HAS NO COLON"), true),            // card "Broken Line" skipped
            (m("not a number"), false),           // one TEL dropped
            (m("+1 555 555 5555"), false),        // invalid in the numbering plan
            (m("half@@valid"), false),            // bad EMAIL dropped
            (m("TEL:12"), false),                 // too short
            (m("EMAIL:nobody"), false),           // no '@'
            (m("FN:No Usable") - 2, true),        // card left empty, on its BEGIN
            (m("FN:Good After") - 1, true),       // BEGIN inside "Never Closed"
            (m("FN:Good After") + 3, false),      // END without BEGIN
            (m("FN:Last Without End") - 2, true), // no END before EOF
        ];
        assert_eq!(got, expected, "{:#?}", parse.problems);

        let reasons: Vec<&str> = parse.problems.iter().map(|p| p.reason.as_str()).collect();
        assert!(reasons[0].contains("2 lines outside"), "{}", reasons[0]);
        assert!(reasons[1].contains("no ':'"), "{}", reasons[1]);
        assert!(reasons[1].contains(&format!("line {}", m("FN:Broken") - 2)));
        assert!(reasons[2].contains("\"not a number\""), "{}", reasons[2]);
        assert!(reasons[2].contains("rest of the card was kept"));
        assert!(reasons[4].contains("more than one '@'"), "{}", reasons[4]);
        assert!(reasons[7].contains("No Usable Identifier"), "{}", reasons[7]);
        assert!(reasons[8].contains("END:VCARD is missing"), "{}", reasons[8]);
        assert!(reasons[10].contains("no END:VCARD"), "{}", reasons[10]);
    }

    #[test]
    fn crlf_and_lf_give_the_same_cards() {
        let lf = APPLE.replace("\r\n", "\n");
        assert_eq!(parse_with(&lf, &us()).unwrap(), parse_with(APPLE, &us()).unwrap());
    }

    #[test]
    fn syntax_variants() {
        let text = "\u{feff}begin:vcard\n\
                    fn:lower\\, case\n\
                    tel;type=CELL;TYPE=voice,Pref:+1 415 555 0121\n\
                    item7.Tel;Type=\"Home\":+1 415 555 0122\n\
                    X-FOO;LABEL=\"a:b;c\":ignored\n\
                    TEL;TYPE=cell:\n\
                    END:vcard\n";
        let parse = parse(text);
        assert_eq!(parse.problems, vec![]);
        assert_eq!(parse.cards[0].version, None);
        assert_eq!(parse.cards[0].display_name, "lower, case");
        assert_eq!(
            idents(&parse.cards[0]),
            vec![
                ("14155550121", vec!["cell", "voice", "pref"]),
                ("14155550122", vec!["home"]),
            ]
        );
    }

    #[test]
    fn display_name_fallbacks() {
        let card = |body: &str| {
            let p = parse(&format!("BEGIN:VCARD\n{body}\nEND:VCARD\n"));
            assert_eq!(p.problems, vec![]);
            p.cards[0].display_name.clone()
        };
        assert_eq!(
            card("N:Doe;John;Quincy,Q.;Mr.;Jr.\nTEL:+1 415 555 0131"),
            "Mr. John Quincy Q. Doe Jr."
        );
        assert_eq!(card("ORG:ACME\\; Inc.;Sales\nTEL:+1 415 555 0131"), "ACME; Inc.");
        assert_eq!(card("FN: \nN:;;;;\nEMAIL:X@Y.Z"), "x@y.z");
    }

    #[test]
    fn empty_and_blank_input() {
        assert_eq!(parse(""), VcardParse::default());
        assert_eq!(parse("\r\n\n  \n"), VcardParse::default());
    }

    #[test]
    fn bad_names_make_the_card_malformed() {
        let text = "BEGIN:VCARD\nFN:A\nTEL:+1 415 555 0141\n:no name\nEND:VCARD\n\
                    BEGIN:VCARD\nFN:B\nTEL:+1 415 555 0142\nnot a property: value\nEND:VCARD\n";
        let parse = parse(text);
        assert!(parse.cards.is_empty());
        let lines: Vec<(usize, bool)> = parse.problems.iter().map(|p| (p.line, p.skipped_card)).collect();
        assert_eq!(lines, vec![(4, true), (9, true)]);
    }

    #[test]
    fn size_limits() {
        let big = "x".repeat(MAX_FILE_BYTES + 1);
        let err = parse_with(&big, &NormalizeOptions::new()).unwrap_err();
        assert!(matches!(err, Error::VcardTooLarge { .. }));
        assert!(err.to_string().contains("limit is 67108864 bytes"), "{err}");
        let p = parse(&big);
        assert!(p.cards.is_empty());
        assert_eq!(p.problems.len(), 1);

        let long_line = format!("BEGIN:VCARD\nNOTE:{}\nEND:VCARD\n", "y".repeat(MAX_LINE_BYTES));
        let err = parse_with(&long_line, &NormalizeOptions::new()).unwrap_err();
        assert!(matches!(err, Error::VcardLineTooLong { line: 2, .. }), "{err}");
        assert_eq!(parse(&long_line).problems[0].line, 2);

        // Folding cannot be used to get around the line limit.
        let chunk = "z".repeat(1000);
        let mut folded = String::from("BEGIN:VCARD\nFN:a\nNOTE:");
        for _ in 0..(MAX_LINE_BYTES / 1000 + 2) {
            folded.push_str(&chunk);
            folded.push_str("\r\n ");
        }
        folded.push_str("\nEND:VCARD\n");
        let err = parse_with(&folded, &NormalizeOptions::new()).unwrap_err();
        assert!(matches!(err, Error::VcardLineTooLong { line: 3, .. }), "{err}");

        // Just under the limits is fine.
        let ok = format!(
            "BEGIN:VCARD\nNOTE:{}\nTEL:+1 415 555 0151\nEND:VCARD\n",
            "y".repeat(MAX_LINE_BYTES - 5)
        );
        assert_eq!(parse(&ok).cards.len(), 1);
    }

    #[test]
    fn problem_list_is_capped() {
        let text = "BEGIN:VCARD\nEND:VCARD\n".repeat(MAX_PROBLEMS + 5);
        let parse = parse(&text);
        assert_eq!(parse.problems.len(), MAX_PROBLEMS + 1);
        let last = &parse.problems[MAX_PROBLEMS];
        assert_eq!(last.line, 2 * MAX_PROBLEMS + 1);
        assert!(last.reason.starts_with("5 further problems"), "{}", last.reason);
    }

    /// Inputs that would take quadratic time with a naive reader; they must
    /// finish at once (nothing here measures time: a regression shows as a
    /// test that hangs).
    #[test]
    fn hostile_shapes_stay_linear() {
        // 200 000 quoted-printable soft line breaks behind an unbalanced quote.
        let mut qp = String::from("BEGIN:VCARD\nFN;\"ENCODING=QUOTED-PRINTABLE:=\n");
        qp.push_str(&"x=\n".repeat(200_000));
        qp.push_str("y\nEMAIL:qp@example.com\nEND:VCARD\n");
        let parsed = parse(&qp);
        assert_eq!(parsed.cards.len(), 1);
        assert_eq!(parsed.cards[0].display_name.len(), 200_001);

        // One card with 50 000 distinct addresses, each twice.
        let mut many = String::from("BEGIN:VCARD\nFN:Many\n");
        for round in 0..2 {
            for i in 0..50_000 {
                many.push_str(&format!("EMAIL;TYPE=t{round}:u{i}@example.com\n"));
            }
        }
        many.push_str("END:VCARD\n");
        let parsed = parse(&many);
        assert_eq!(parsed.cards[0].identifiers.len(), 50_000);
        assert_eq!(parsed.cards[0].identifiers[9].types, ["t0", "t1"]);

        // A TYPE list of 100 000 values keeps the first MAX_TYPES.
        let types: Vec<String> = (0..100_000).map(|i| format!("t{i}")).collect();
        let text = format!("BEGIN:VCARD\nTEL;TYPE={}:+1 415 555 0191\nEND:VCARD\n", types.join(","));
        let parsed = parse(&text);
        assert_eq!(parsed.cards[0].identifiers[0].types.len(), MAX_TYPES);
    }

    #[test]
    fn quoted_printable_decoding() {
        assert_eq!(decode_quoted_printable("=C3=A9t=C3=A9"), "été");
        assert_eq!(decode_quoted_printable("a=3Db=ZZ="), "a=b=ZZ=");
        assert_eq!(decode_quoted_printable("=FF"), "\u{fffd}");
    }

    /// Lines that look like vCard content, to steer random input into the
    /// parser's interesting states.
    fn vcardish_line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("BEGIN:VCARD".to_owned()),
            Just("END:VCARD".to_owned()),
            Just("VERSION:4.0".to_owned()),
            Just(String::new()),
            "[A-Za-z.]{0,8}(;[A-Za-z=\",]{0,10}){0,3}:[ -~]{0,30}",
            "(TEL|EMAIL|tel|item1.TEL)(;TYPE=[a-z,]{0,10})?:(tel:|mailto:)?[+0-9 ()@a-z;=-]{0,24}",
            "(FN|N|ORG)(;ENCODING=QUOTED-PRINTABLE)?:[^\r\n]{0,20}",
            "[ \t][^\r\n]{0,20}",
            "\\PC{0,40}",
        ]
    }

    fn check_invariants(text: &str, parse: &VcardParse) {
        let lines = text.split('\n').count();
        for p in &parse.problems {
            assert!(p.line >= 1 && p.line <= lines, "{p:?} outside 1..={lines}");
            assert!(!p.reason.is_empty());
        }
        for card in &parse.cards {
            assert!(card.line >= 1 && card.line <= lines);
            assert!(!card.identifiers.is_empty());
            for id in &card.identifiers {
                match id.kind {
                    IdentifierKind::Email => {
                        assert_eq!(normalize_email(&id.value).unwrap(), id.value)
                    }
                    IdentifierKind::Phone => assert_eq!(
                        normalize_phone(&format!("+{}", id.value), &NormalizeOptions::new()).unwrap(),
                        id.value
                    ),
                }
            }
        }
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
            let parse = parse(&text);
            check_invariants(&text, &parse);
        }

        #[test]
        fn never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            let parse = parse(&text);
            check_invariants(&text, &parse);
        }

        #[test]
        fn never_panics_on_vcard_like_input(
            lines in proptest::collection::vec(vcardish_line(), 0..40),
            crlf in any::<bool>(),
        ) {
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            let parse = parse_with(&text, &us()).unwrap();
            check_invariants(&text, &parse);
        }
    }
}
