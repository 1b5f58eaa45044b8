//! Text that came from a peer, made safe to store and to print.
//!
//! A peer-chosen string (a device name, a file name, a refusal reason) can carry
//! control characters and raw escape sequences that drive the user's terminal, and
//! invisible or bidirectional format characters that make one string look like
//! another ("Bob" followed by a right-to-left override). tacit never prints such a
//! string as it came: [`escape_for_display`] shows every such character as a visible
//! `\u{…}` escape, and [`strip_unsafe`] removes them where a clean name is wanted
//! (file names on disk).

use std::borrow::Cow;

/// Characters that are invisible or reorder text: zero-width spaces and joiners,
/// bidirectional embeddings, overrides and isolates, word joiners, variation
/// selectors, the byte-order mark and interlinear annotations.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// Whether `c` must not reach a terminal as it is: control characters (escape
/// sequences start with one) and invisible or bidirectional format characters.
pub fn is_unsafe_for_display(c: char) -> bool {
    c.is_control() || is_invisible_format(c)
}

/// `s` with every character that is unsafe to display written as `\u{XXXX}`, and
/// backslashes doubled so an escape cannot be faked. Borrowed when nothing changes.
pub fn escape_for_display(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| is_unsafe_for_display(c) || c == '\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\\' {
            out.push_str("\\\\");
        } else if is_unsafe_for_display(c) {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` without the characters that are unsafe to display.
pub fn strip_unsafe(s: &str) -> String {
    s.chars().filter(|c| !is_unsafe_for_display(*c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_would_obey_or_hide() {
        assert_eq!(escape_for_display("Bob"), "Bob");
        assert!(matches!(escape_for_display("Bob"), Cow::Borrowed(_)));
        assert_eq!(escape_for_display("Bob\u{202E}txt.exe"), "Bob\\u{202E}txt.exe");
        assert_eq!(escape_for_display("a\u{1b}[2Jb"), "a\\u{001B}[2Jb");
        assert_eq!(escape_for_display("zero\u{200B}width"), "zero\\u{200B}width");
        // a literal backslash-u in the input cannot pass for an escape
        assert_eq!(escape_for_display("\\u{202E}"), "\\\\u{202E}");
        assert_eq!(strip_unsafe("re\u{202E}port\u{7}.pdf\u{FEFF}"), "report.pdf");
    }
}
