//! Contact identifiers and their normalisation.
//!
//! PSI only finds a contact in common when both sides encode the identifier
//! byte for byte the same way, so every identifier is normalised before it is
//! stored or used:
//!
//! * **Phone numbers** become E.164 digits *without* the leading `+`. The
//!   PrivateDrop paper (Heinrich et al., USENIX Security 2021, §4 and its
//!   implementation) hashes `"+1 (234) 567-8901"` as `"12345678901"`; tacit
//!   does the same. Parsing and validation use the `phonenumber` crate (a port
//!   of Google's libphonenumber metadata). A number written without a country
//!   code is read in the caller's default region ([`NormalizeOptions`]).
//! * **E-mail addresses** are trimmed and lower-cased and must contain exactly
//!   one `@` with a non-empty local part and domain.
//!
//! Normalisation is idempotent: for an e-mail address `normalize_email(v) == v`
//! for every normalised `v`; for a phone number, whose normalised form drops
//! the `+`, `normalize_phone("+" + v) == v` (a bare digit string is read as a
//! *national* number, so the `+` must be put back first).

use std::fmt;
use std::str::FromStr;

use phonenumber::country::Id as RegionId;
use serde::Serialize;

use crate::error::{Error, Result};

/// Most digits a phone number may have before it reaches the parser: E.164
/// allows 15, plus room for an international dialling prefix such as `011`.
const MAX_PHONE_DIGITS: usize = 20;

/// Longest raw identifier accepted, in bytes; anything longer is refused
/// before it is parsed.
const MAX_RAW_LEN: usize = 1024;

/// Whether an identifier is a phone number or an e-mail address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentifierKind {
    /// A phone number, normalised to E.164 digits without `+`.
    Phone,
    /// An e-mail address, normalised to lower case.
    Email,
}

impl IdentifierKind {
    /// `"phone"` or `"email"`, the spelling used in the database and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            IdentifierKind::Phone => "phone",
            IdentifierKind::Email => "email",
        }
    }

    /// Reads the spelling produced by [`IdentifierKind::as_str`].
    pub(crate) fn from_db(s: &str) -> Result<Self> {
        match s {
            "phone" => Ok(IdentifierKind::Phone),
            "email" => Ok(IdentifierKind::Email),
            other => Err(Error::Corrupt(format!("unknown identifier kind {other:?}"))),
        }
    }
}

impl fmt::Display for IdentifierKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How identifiers are normalised.
///
/// The only setting is the default region used for phone numbers written
/// without a country code (`"(415) 555-0100"` in the US, `"030 1234567"` in
/// Germany). Without a default region such numbers are refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NormalizeOptions {
    default_region: Option<RegionId>,
}

impl NormalizeOptions {
    /// Options without a default region: every phone number must carry a
    /// country code (`+…`).
    pub fn new() -> Self {
        Self::default()
    }

    /// Options whose default region is the two-letter code `region`
    /// (ISO 3166-1 alpha-2 as used by libphonenumber, e.g. `"US"`, `"DE"`;
    /// case-insensitive).
    ///
    /// ```
    /// use tacit_store::NormalizeOptions;
    /// assert_eq!(NormalizeOptions::with_default_region("de")?.default_region(), Some("DE"));
    /// assert!(NormalizeOptions::with_default_region("Germany").is_err());
    /// # Ok::<(), tacit_store::Error>(())
    /// ```
    pub fn with_default_region(region: &str) -> Result<Self> {
        let upper = region.trim().to_ascii_uppercase();
        let id = RegionId::from_str(&upper).map_err(|_| Error::UnknownRegion(region.to_owned()))?;
        // The parser looks the region up and would panic on a region without
        // metadata, so only regions the database knows are accepted.
        if phonenumber::metadata::DATABASE.by_id(id.as_ref()).is_none() {
            return Err(Error::UnknownRegion(region.to_owned()));
        }
        Ok(Self {
            default_region: Some(id),
        })
    }

    /// The default region's two-letter code, if one is set.
    pub fn default_region(&self) -> Option<&str> {
        self.default_region.as_ref().map(|id| id.as_ref())
    }
}

/// A contact identifier in normalised form: the unit the PSI protocols
/// compare (the elements of the PrivateDrop paper's address book `AB` and
/// identifier set `ID`, §4.1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Identifier {
    /// Phone number or e-mail address.
    pub kind: IdentifierKind,
    /// The normalised value: E.164 digits without `+`, or a lower-case
    /// e-mail address.
    pub value: String,
}

impl Identifier {
    /// Normalises `raw`, deciding its kind by its form: a `tel:` prefix means
    /// a phone number, a `mailto:` prefix or an `@` an e-mail address, anything
    /// else a phone number.
    ///
    /// ```
    /// use tacit_store::{Identifier, IdentifierKind, NormalizeOptions};
    /// let opts = NormalizeOptions::new();
    /// let phone = Identifier::parse("+1 (234) 567-8901", &opts)?;
    /// assert_eq!(phone.kind, IdentifierKind::Phone);
    /// assert_eq!(phone.to_string(), "12345678901");
    /// let mail = Identifier::parse(" Alice@Example.ORG ", &opts)?;
    /// assert_eq!(mail.to_string(), "alice@example.org");
    /// # Ok::<(), tacit_store::Error>(())
    /// ```
    pub fn parse(raw: &str, opts: &NormalizeOptions) -> Result<Identifier> {
        let trimmed = raw.trim();
        if strip_prefix_ci(trimmed, "tel:").is_some() {
            Self::phone(raw, opts)
        } else if strip_prefix_ci(trimmed, "mailto:").is_some() || trimmed.contains('@') {
            Self::email(raw)
        } else {
            Self::phone(raw, opts)
        }
    }

    /// Normalises `raw` as a phone number (see [`normalize_phone`]).
    pub fn phone(raw: &str, opts: &NormalizeOptions) -> Result<Identifier> {
        Ok(Identifier {
            kind: IdentifierKind::Phone,
            value: normalize_phone(raw, opts)?,
        })
    }

    /// Normalises `raw` as an e-mail address (see [`normalize_email`]).
    pub fn email(raw: &str) -> Result<Identifier> {
        Ok(Identifier {
            kind: IdentifierKind::Email,
            value: normalize_email(raw)?,
        })
    }
}

impl fmt::Display for Identifier {
    /// Prints the normalised value (no `+` for phone numbers).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

/// Most characters of a raw value quoted in an error message.
const MAX_QUOTED_CHARS: usize = 80;

/// `raw`, cut to [`MAX_QUOTED_CHARS`] characters (with `…`) for messages.
fn shorten(raw: &str) -> String {
    match raw.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((i, _)) => format!("{}…", &raw[..i]),
        None => raw.to_owned(),
    }
}

/// ASCII-case-insensitive `strip_prefix`.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
}

/// Normalises a phone number to E.164 digits without the `+`.
///
/// Accepted forms: `+1 (234) 567-8901`, `+49 (0)30 1234567`, `0049 30 1234567`
/// and `030 1234567` (the last two need a default region), RFC 3966 URIs such
/// as `tel:+1-234-567-8901;ext=12`. Parameters after `;` or `,`, and an
/// extension introduced by `ext`, `x` or `#` are dropped. Separators (spaces,
/// `-`, `.`, `/`, parentheses) are ignored; letters and other characters are
/// refused, as are numbers libphonenumber's metadata calls invalid.
///
/// ```
/// use tacit_store::{normalize_phone, NormalizeOptions};
/// let us = NormalizeOptions::with_default_region("US")?;
/// assert_eq!(normalize_phone("(234) 567-8901", &us)?, "12345678901");
/// assert_eq!(normalize_phone("tel:+49-30-1234567;ext=5", &us)?, "49301234567");
/// assert!(normalize_phone("(234) 567-8901", &NormalizeOptions::new()).is_err());
/// # Ok::<(), tacit_store::Error>(())
/// ```
pub fn normalize_phone(raw: &str, opts: &NormalizeOptions) -> Result<String> {
    let fail = |reason: &str| Error::InvalidPhoneNumber {
        raw: shorten(raw),
        reason: reason.to_owned(),
    };
    if raw.len() > MAX_RAW_LEN {
        return Err(fail("it is far too long"));
    }
    let mut s = raw.trim();
    if let Some(rest) = strip_prefix_ci(s, "tel:") {
        s = rest.trim();
    }
    // RFC 3966 parameters (`;ext=`, `;phone-context=`) and dial-string pauses.
    if let Some(i) = s.find([';', ',', '#']) {
        s = &s[..i];
    }
    // Extensions written out: "… ext. 12", "… x12".
    if let Some(i) = s.find(|c: char| c.is_alphabetic()) {
        let tail = s[i..].to_lowercase();
        if tail.starts_with("ext") || tail.starts_with('x') {
            s = &s[..i];
        } else {
            return Err(fail("it contains letters"));
        }
    }

    let international = s.trim_start().starts_with('+');
    // "+44 (0)20 …": the national trunk prefix in parentheses is not dialled
    // from abroad and must go.
    let without_trunk;
    if international && s.contains("(0)") {
        without_trunk = s.replace("(0)", "");
        s = &without_trunk;
    }

    let mut cleaned = String::with_capacity(s.len());
    for (i, c) in s.trim().char_indices() {
        match c {
            '0'..='9' => cleaned.push(c),
            '+' if i == 0 => cleaned.push('+'),
            '+' => return Err(fail("'+' may only stand at the start")),
            ' ' | '-' | '.' | '/' | '(' | ')' | '[' | ']' => {}
            c if c.is_whitespace() => {}
            // Unicode hyphens and dashes.
            '\u{2010}'..='\u{2015}' | '\u{2212}' => {}
            _ => return Err(fail(&format!("it contains the character {c:?}"))),
        }
    }
    let digits = cleaned.trim_start_matches('+').len();
    if digits == 0 {
        return Err(fail("it contains no digits"));
    }
    if digits < 3 {
        return Err(fail("it has too few digits"));
    }
    if digits > MAX_PHONE_DIGITS {
        return Err(fail("it has too many digits"));
    }
    if !international && opts.default_region.is_none() {
        return Err(fail("it has no country code (+…) and no default region was given"));
    }
    let region = if international { None } else { opts.default_region };

    // The input is now '+'? followed by 3–20 ASCII digits. phonenumber has had
    // panics on odd inputs (whisperfish/rust-phonenumber#43); the cleaning
    // above keeps such inputs away from it, and `catch_unwind` is a last line of
    // defence so that one bad contact cannot abort an import. (Fuzzing builds
    // use panic=abort, where a panic here is still reported as a crash.)
    let parsed = std::panic::catch_unwind(|| phonenumber::parse(region, &cleaned))
        .map_err(|_| fail("the phone-number parser failed on it"))?
        .map_err(|e| fail(&e.to_string()))?;
    if !phonenumber::is_valid(&parsed) {
        return Err(fail("it is not a valid number in its country's numbering plan"));
    }
    let e164 = parsed.format().mode(phonenumber::Mode::E164).to_string();
    let value = e164.trim_start_matches('+');
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail("it could not be written in E.164 form"));
    }
    Ok(value.to_owned())
}

/// Normalises an e-mail address: strips a `mailto:` prefix (and any `?query`),
/// trims surrounding white space and lower-cases it. It must then contain
/// exactly one `@`, with a non-empty local part and domain, and no white space
/// or control characters.
///
/// Lower-casing the local part is not what RFC 5321 promises, but it is what
/// every large provider does and what both PSI parties can agree on.
///
/// ```
/// use tacit_store::normalize_email;
/// assert_eq!(normalize_email("mailto:Bob@Example.com")?, "bob@example.com");
/// assert!(normalize_email("bob@@example.com").is_err());
/// # Ok::<(), tacit_store::Error>(())
/// ```
pub fn normalize_email(raw: &str) -> Result<String> {
    let fail = |reason: &str| Error::InvalidEmail {
        raw: shorten(raw),
        reason: reason.to_owned(),
    };
    if raw.len() > MAX_RAW_LEN {
        return Err(fail("it is far too long"));
    }
    let mut s = raw.trim();
    if let Some(rest) = strip_prefix_ci(s, "mailto:") {
        s = rest;
        if let Some(i) = s.find('?') {
            s = &s[..i];
        }
        s = s.trim();
    }
    let value = s.to_lowercase();
    let mut parts = value.split('@');
    let (local, domain) = match (parts.next(), parts.next(), parts.next()) {
        (Some(l), Some(d), None) => (l, d),
        (_, None, _) => return Err(fail("it has no '@'")),
        _ => return Err(fail("it has more than one '@'")),
    };
    if local.is_empty() {
        return Err(fail("nothing stands before the '@'"));
    }
    if domain.is_empty() {
        return Err(fail("nothing stands after the '@'"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail("it contains white space or control characters"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn region(r: &str) -> NormalizeOptions {
        NormalizeOptions::with_default_region(r).unwrap()
    }

    fn phone_err(raw: &str, opts: &NormalizeOptions) -> String {
        let err = normalize_phone(raw, opts).unwrap_err();
        assert!(matches!(err, Error::InvalidPhoneNumber { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("{raw:?}")), "{msg} lacks the raw value");
        msg
    }

    #[test]
    fn privatedrop_example_number() {
        // The PrivateDrop paper hashes "+1 (234) 567-8901" as "12345678901".
        let none = NormalizeOptions::new();
        assert_eq!(normalize_phone("+1 (234) 567-8901", &none).unwrap(), "12345678901");
    }

    #[test]
    fn us_numbers() {
        let us = region("US");
        for raw in [
            "+1 (415) 555-0100",
            "(415) 555-0100",
            "415.555.0100",
            "415/555 0100",
            "1-415-555-0100",
            "+1\u{a0}415\u{2011}555\u{2011}0100",
            "tel:+1-415-555-0100",
            "TEL:+1-415-555-0100;ext=123",
            "+1 415 555 0100 ext. 7",
            "+1 415 555 0100 x7",
            "+1 415 555 0100,,1234",
            "  +14155550100  ",
        ] {
            assert_eq!(normalize_phone(raw, &us).unwrap(), "14155550100", "{raw}");
        }
        // The international dialling prefix from the US.
        assert_eq!(normalize_phone("011 49 30 1234567", &us).unwrap(), "49301234567");
    }

    #[test]
    fn german_numbers() {
        let de = region("DE");
        let none = NormalizeOptions::new();
        for (raw, opts) in [
            ("+49 30 1234567", &none),
            ("+49 (0)30 1234567", &none),
            ("+49 (0) 30 / 123 45 67", &none),
            ("030 1234567", &de),
            ("030/1234567", &de),
            ("0049 30 1234567", &de),
            ("+49 30 1234567", &de),
        ] {
            assert_eq!(normalize_phone(raw, opts).unwrap(), "49301234567", "{raw}");
        }
        assert_eq!(normalize_phone("0151 23456789", &de).unwrap(), "4915123456789");
        // The same national digits mean a different number in another region.
        assert_eq!(normalize_phone("(212) 555-0147", &region("us")).unwrap(), "12125550147");
        // …in Germany 0212 is Solingen.
        assert_eq!(normalize_phone("(212) 555-0147", &de).unwrap(), "492125550147");
    }

    #[test]
    fn default_region_is_needed_for_national_numbers() {
        let msg = phone_err("030 1234567", &NormalizeOptions::new());
        assert!(msg.contains("no country code"), "{msg}");
        assert!(msg.contains("no default region"), "{msg}");
    }

    #[test]
    fn invalid_numbers() {
        let us = region("US");
        let none = NormalizeOptions::new();
        assert!(phone_err("+1 555 555 5555", &none).contains("numbering plan"));
        assert!(phone_err("1-800-FLOWERS", &us).contains("letters"));
        assert!(phone_err("call me", &us).contains("letters"));
        assert!(phone_err("", &us).contains("no digits"));
        assert!(phone_err("+", &us).contains("no digits"));
        assert!(phone_err("12", &us).contains("too few digits"));
        assert!(phone_err("+1 415 555 0100 1234 5678 9012", &us).contains("too many digits"));
        assert!(phone_err("+1 415 +555 0100", &us).contains("'+'"));
        assert!(phone_err("+1 415 555 0100 ☎", &us).contains("character"));
        phone_err("+999 1234 5678", &none);
        phone_err("123", &us);
        let long = normalize_phone(&"1".repeat(5000), &us).unwrap_err().to_string();
        assert!(long.len() < 200 && long.contains("1111…"), "{long}");
    }

    #[test]
    fn regions() {
        assert_eq!(region("us").default_region(), Some("US"));
        assert_eq!(region(" DE ").default_region(), Some("DE"));
        assert_eq!(NormalizeOptions::new().default_region(), None);
        for bad in ["ZZ", "Germany", "", "001", "UN", "D"] {
            let err = NormalizeOptions::with_default_region(bad).unwrap_err();
            assert!(matches!(err, Error::UnknownRegion(_)), "{bad}: {err:?}");
            assert!(err.to_string().contains("two-letter"));
        }
    }

    #[test]
    fn emails() {
        assert_eq!(normalize_email("  Alice@Example.ORG\t").unwrap(), "alice@example.org");
        assert_eq!(
            normalize_email("MAILTO:Bob@Example.com?subject=hi").unwrap(),
            "bob@example.com"
        );
        assert_eq!(
            normalize_email("Ünïcode@Bücher.example").unwrap(),
            "ünïcode@bücher.example"
        );
        for (bad, why) in [
            ("alice.example.org", "no '@'"),
            ("a@b@c", "more than one '@'"),
            ("@example.org", "before the '@'"),
            ("alice@", "after the '@'"),
            ("al ice@example.org", "white space"),
            ("", "no '@'"),
        ] {
            let err = normalize_email(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidEmail { .. }));
            let msg = err.to_string();
            assert!(msg.contains(why), "{bad}: {msg}");
            assert!(msg.contains(&format!("{bad:?}")), "{msg}");
        }
    }

    #[test]
    fn identifier_parse_decides_the_kind() {
        let us = region("US");
        let p = Identifier::parse("(415) 555-0100", &us).unwrap();
        assert_eq!((p.kind, p.to_string().as_str()), (IdentifierKind::Phone, "14155550100"));
        let t = Identifier::parse("tel:+1-415-555-0100", &us).unwrap();
        assert_eq!(t, p);
        let e = Identifier::parse("Alice@Example.org", &us).unwrap();
        assert_eq!(
            (e.kind, e.to_string().as_str()),
            (IdentifierKind::Email, "alice@example.org")
        );
        let m = Identifier::parse("mailto:alice@example.org", &us).unwrap();
        assert_eq!(m, e);
        // "tel:" wins over an '@' and gives a phone-number error.
        assert!(matches!(
            Identifier::parse("tel:a@b", &us),
            Err(Error::InvalidPhoneNumber { .. })
        ));
        assert!(matches!(
            Identifier::parse("mailto:nobody", &us),
            Err(Error::InvalidEmail { .. })
        ));
    }

    #[test]
    fn kinds_serialise_in_lower_case() {
        assert_eq!(IdentifierKind::Phone.to_string(), "phone");
        assert_eq!(IdentifierKind::from_db("email").unwrap(), IdentifierKind::Email);
        assert!(IdentifierKind::from_db("fax").is_err());
    }

    fn regions_strategy() -> impl Strategy<Value = NormalizeOptions> {
        prop_oneof![
            Just(NormalizeOptions::new()),
            Just(region("US")),
            Just(region("DE")),
            Just(region("GB")),
            Just(region("IN")),
        ]
    }

    /// Checks idempotence of a successful normalisation, and that the
    /// phone-number parser never panicked (which `catch_unwind` would hide).
    fn check_phone(raw: &str, opts: &NormalizeOptions) {
        match normalize_phone(raw, opts) {
            Ok(v) => {
                assert!(!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()), "{v}");
                let again = normalize_phone(&format!("+{v}"), &NormalizeOptions::new());
                assert_eq!(again.unwrap(), v, "from {raw:?}");
                let same_region = normalize_phone(&format!("+{v}"), opts);
                assert_eq!(same_region.unwrap(), v);
            }
            Err(e) => assert!(!e.to_string().contains("parser failed"), "{raw:?}: {e}"),
        }
    }

    proptest! {
        #[test]
        fn phone_normalisation_is_idempotent(
            raw in "\\+?[0-9 ()./-]{0,24}",
            opts in regions_strategy(),
        ) {
            check_phone(&raw, &opts);
        }

        #[test]
        fn phone_normalisation_of_plausible_numbers(
            cc in prop_oneof![Just("1"), Just("49"), Just("44"), Just("33"), Just("91"), Just("81")],
            rest in "[2-9][0-9]{5,11}",
            opts in regions_strategy(),
        ) {
            check_phone(&format!("+{cc} {rest}"), &opts);
            check_phone(&format!("0{rest}"), &opts);
        }

        #[test]
        fn phone_normalisation_never_panics(raw in "\\PC{0,40}", opts in regions_strategy()) {
            check_phone(&raw, &opts);
        }

        #[test]
        fn email_normalisation_is_idempotent(raw in "\\PC{0,20}@?\\PC{0,20}") {
            if let Ok(v) = normalize_email(&raw) {
                prop_assert_eq!(normalize_email(&v).unwrap(), v.clone());
                prop_assert_eq!(Identifier::parse(&v, &NormalizeOptions::new()).unwrap().value, v);
            }
        }
    }
}
