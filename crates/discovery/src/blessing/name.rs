//! Hierarchical names and prefix policies (§3, "Identity and authorization model").

use super::{Error, MAX_COMPONENT_LEN, MAX_DEPTH, MAX_NAME_LEN, MAX_POLICY_PREFIXES, Result};
use core::fmt;
use core::str::FromStr;
use tacit_wire::{Decode, Encode, Reader, Writer};

/// Why a name component is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComponentProblem {
    /// Zero bytes long.
    Empty,
    /// Longer than [`MAX_COMPONENT_LEN`] bytes.
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// Contains a character names may not contain.
    ForbiddenCharacter(char),
}

impl fmt::Display for ComponentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ComponentProblem::Empty => write!(f, "is empty"),
            ComponentProblem::TooLong { len } => {
                write!(f, "is {len} bytes long; the limit is {MAX_COMPONENT_LEN}")
            }
            ComponentProblem::ForbiddenCharacter(c) => {
                write!(f, "contains the forbidden character {c:?} (U+{:04X})", *c as u32)
            }
        }
    }
}

// Characters that are invisible or reorder text (format characters such as
// zero-width spaces and bidirectional overrides) are forbidden: two names that print
// the same must be the same name, since people write policies by reading names.
use tacit_wire::text::is_invisible_format;

/// Whether `c` may not appear in a name component: the separator `/`, the policy
/// wildcard `*`, the policy-list separator `,`, control characters, whitespace, and
/// invisible or bidirectional format characters.
fn is_forbidden(c: char) -> bool {
    matches!(c, '/' | '*' | ',') || c.is_control() || c.is_whitespace() || is_invisible_format(c)
}

/// Checks one component (1..=64 bytes of UTF-8, no forbidden characters).
pub(super) fn check_component(c: &str) -> core::result::Result<(), ComponentProblem> {
    if c.is_empty() {
        return Err(ComponentProblem::Empty);
    }
    if c.len() > MAX_COMPONENT_LEN {
        return Err(ComponentProblem::TooLong { len: c.len() });
    }
    match c.chars().find(|&ch| is_forbidden(ch)) {
        Some(ch) => Err(ComponentProblem::ForbiddenCharacter(ch)),
        None => Ok(()),
    }
}

/// Checks a single component given on its own, naming it `what` in the error.
pub(super) fn check_label(what: &'static str, c: &str) -> Result<()> {
    check_component(c).map_err(|problem| Error::InvalidLabel { what, problem })
}

/// A hierarchical human-readable name such as `HomeSecurityCorp/Technician/Bob` (§3:
/// "one or more hierarchically-structured human-readable names bound to its public
/// key via a certificate chain", e.g. `Alice/Devices/TV`).
///
/// A name has 1..=[`MAX_DEPTH`] components joined by `/`; each component is
/// 1..=[`MAX_COMPONENT_LEN`] bytes of UTF-8 without `/`, `*`, `,`, control characters,
/// whitespace or invisible format characters; the whole name is at most
/// [`MAX_NAME_LEN`] bytes. Names compare byte-wise (no Unicode normalisation, no case
/// folding): `Bob` and `bob` are different names.
///
/// A `Name` by itself is only a string; a name that has been *authenticated* comes from
/// [`super::ValidatedBlessing::name`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(String);

impl Name {
    /// Parses `A/B/C`.
    ///
    /// ```
    /// use tacit_discovery::blessing::Name;
    /// let n = Name::parse("HomeSecurityCorp/Technician/Bob").unwrap();
    /// assert_eq!(n.components().collect::<Vec<_>>(), ["HomeSecurityCorp", "Technician", "Bob"]);
    /// assert_eq!(Name::parse("a//b").unwrap_err().to_string(), "name component 2 is empty");
    /// ```
    pub fn parse(s: &str) -> Result<Name> {
        Name::from_components(s.split('/'))
    }

    /// Joins components, checking each one and the limits.
    pub fn from_components<'a>(components: impl IntoIterator<Item = &'a str>) -> Result<Name> {
        let mut out = String::new();
        let mut count = 0;
        for c in components {
            count += 1;
            if count > MAX_DEPTH {
                return Err(Error::TooManyComponents { count });
            }
            check_component(c).map_err(|problem| Error::InvalidComponent { index: count, problem })?;
            if count > 1 {
                out.push('/');
            }
            out.push_str(c);
        }
        if count == 0 {
            return Err(Error::InvalidComponent {
                index: 1,
                problem: ComponentProblem::Empty,
            });
        }
        if out.len() > MAX_NAME_LEN {
            return Err(Error::NameTooLong { len: out.len() });
        }
        Ok(Name(out))
    }

    /// A name whose invariants the caller has established (components checked, depth
    /// and length within limits).
    pub(super) fn from_checked(s: String) -> Name {
        debug_assert!(Name::parse(&s).is_ok());
        Name(s)
    }

    /// The name as text, `A/B/C`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, root first.
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> + '_ {
        self.0.split('/')
    }

    /// Number of components (1..=[`MAX_DEPTH`]).
    pub fn depth(&self) -> usize {
        self.components().count()
    }

    /// The first component (the root of the blessing that binds this name).
    pub fn root(&self) -> &str {
        self.0.split('/').next().unwrap_or(&self.0)
    }

    /// The last component.
    pub fn last(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The name without its last component; `None` for a root name.
    pub fn parent(&self) -> Option<Name> {
        self.0.rfind('/').map(|i| Name(self.0[..i].to_owned()))
    }

    /// Whether `self` is a prefix of `other` at component boundaries: `a/b` is a
    /// prefix of `a/b` and of `a/b/c`, but not of `a/bc`.
    pub fn is_prefix_of(&self, other: &Name) -> bool {
        other
            .0
            .strip_prefix(self.0.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }

    /// The name extended by one component, `self/ext`.
    pub fn child(&self, ext: &str) -> Result<Name> {
        let depth = self.depth() + 1;
        if depth > MAX_DEPTH {
            return Err(Error::TooManyComponents { count: depth });
        }
        check_component(ext).map_err(|problem| Error::InvalidComponent { index: depth, problem })?;
        let len = self.0.len() + 1 + ext.len();
        if len > MAX_NAME_LEN {
            return Err(Error::NameTooLong { len });
        }
        Ok(Name(format!("{}/{ext}", self.0)))
    }

    /// The prefixes of the name, shortest first, the name itself last:
    /// `s₁`, `s₁/s₂`, …, `s₁/…/sₙ` — the identities whose IBE keys make up a prefix
    /// encryption key for this name (§3.1, after Lewko–Waters).
    pub fn prefixes(&self) -> impl Iterator<Item = Name> + '_ {
        self.0
            .match_indices('/')
            .map(|(i, _)| Name(self.0[..i].to_owned()))
            .chain(core::iter::once(self.clone()))
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Name {
    type Err = Error;
    fn from_str(s: &str) -> Result<Name> {
        Name::parse(s)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Embedded encoding: `u8 len || UTF-8 bytes` (a name is at most 255 bytes).
impl Encode for Name {
    fn encode(&self, w: &mut Writer) {
        // MAX_NAME_LEN = 255: the length always fits in a byte.
        w.put_u8(self.0.len() as u8);
        w.put_fixed(self.0.as_bytes());
    }
}

impl Decode for Name {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Name> {
        let len = r.u8()? as usize;
        let bytes = r.fixed("name", len)?;
        let s = core::str::from_utf8(bytes).map_err(|_| tacit_wire::Error::invalid("name", "not valid UTF-8"))?;
        Name::parse(s).map_err(|e| tacit_wire::Error::invalid("name", e.to_string()))
    }
}

/// A prefix-based authorization policy such as `HomeSecurityCorp/Technician/*` (§3:
/// "Alice may authorize all principals with names matching the prefix pattern
/// `Alice/Devices/*`").
///
/// The policy `P/*` matches a name `N` iff `P` is a component-wise prefix of `N`, `P`
/// itself included: `a/b/*` matches `a/b` and `a/b/c` but not `a/bc`. This is exactly
/// the access structure of prefix encryption (§3.1): a ciphertext for identity `P` can
/// be decrypted with the key of any name that has `P` as a prefix. There is no exact
/// match policy, since prefix encryption could not enforce it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PrefixPolicy {
    prefix: Name,
}

impl PrefixPolicy {
    /// The policy `prefix/*`.
    pub fn new(prefix: Name) -> Self {
        PrefixPolicy { prefix }
    }

    /// Parses `A/B/*`; the trailing `/*` is required.
    ///
    /// ```
    /// use tacit_discovery::blessing::{Name, PrefixPolicy};
    /// let p = PrefixPolicy::parse("a/b/*").unwrap();
    /// assert!(p.matches(&Name::parse("a/b").unwrap()));
    /// assert!(p.matches(&Name::parse("a/b/c").unwrap()));
    /// assert!(!p.matches(&Name::parse("a/bc").unwrap()));
    /// ```
    pub fn parse(s: &str) -> Result<Self> {
        match s.strip_suffix("/*") {
            Some(prefix) if !prefix.is_empty() => Ok(PrefixPolicy {
                prefix: Name::parse(prefix)?,
            }),
            _ => Err(Error::NotAPrefixPolicy(s.to_owned())),
        }
    }

    /// The prefix `P` of `P/*`: the identity a prefix-encryption ciphertext for this
    /// policy is encrypted to.
    pub fn prefix(&self) -> &Name {
        &self.prefix
    }

    /// Whether `name` satisfies the policy.
    pub fn matches(&self, name: &Name) -> bool {
        self.prefix.is_prefix_of(name)
    }
}

impl fmt::Display for PrefixPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/*", self.prefix)
    }
}

impl FromStr for PrefixPolicy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        PrefixPolicy::parse(s)
    }
}

impl From<Name> for PrefixPolicy {
    fn from(prefix: Name) -> Self {
        PrefixPolicy::new(prefix)
    }
}

/// An authorization policy made of one or more prefix policies; a name satisfies it if
/// it satisfies any of them. Written comma-separated: `Alice/Family/*,Alice/Devices/*`.
///
/// **Prefix encryption encrypts to one prefix.** A ciphertext of §3.1 names a single
/// identity `P`, so a handshake that hides its identity under a policy with several
/// prefixes must either encrypt to [`Policy::first`] only (the other prefixes are then
/// checked after decryption but cannot decrypt), or produce one ciphertext per prefix
/// ([`Policy::prefixes`]) and let the peer pick the one it can open
/// ([`Policy::matching`]), at the cost of size and of revealing the number of prefixes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Policy {
    prefixes: Vec<PrefixPolicy>,
}

impl Policy {
    /// A policy of 1..=[`MAX_POLICY_PREFIXES`] distinct prefixes.
    pub fn new(prefixes: Vec<PrefixPolicy>) -> Result<Self> {
        if prefixes.is_empty() {
            return Err(Error::EmptyPolicy);
        }
        if prefixes.len() > MAX_POLICY_PREFIXES {
            return Err(Error::TooManyPrefixes { count: prefixes.len() });
        }
        for (i, p) in prefixes.iter().enumerate() {
            if prefixes[..i].contains(p) {
                return Err(Error::DuplicatePrefix {
                    prefix: p.prefix.clone(),
                });
            }
        }
        Ok(Policy { prefixes })
    }

    /// Parses `A/*,B/C/*` (spaces around the commas are allowed).
    pub fn parse(s: &str) -> Result<Self> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() > MAX_POLICY_PREFIXES {
            return Err(Error::TooManyPrefixes { count: parts.len() });
        }
        if parts == [""] {
            return Err(Error::EmptyPolicy);
        }
        Policy::new(parts.into_iter().map(PrefixPolicy::parse).collect::<Result<_>>()?)
    }

    /// The prefix policies, in the order given.
    pub fn prefixes(&self) -> &[PrefixPolicy] {
        &self.prefixes
    }

    /// The first prefix policy (the one to encrypt to when only one ciphertext is sent).
    pub fn first(&self) -> &PrefixPolicy {
        // `new` refuses empty policies.
        &self.prefixes[0]
    }

    /// Whether `name` satisfies any of the prefix policies.
    pub fn matches(&self, name: &Name) -> bool {
        self.matching(name).is_some()
    }

    /// The first prefix policy that `name` satisfies.
    pub fn matching(&self, name: &Name) -> Option<&PrefixPolicy> {
        self.prefixes.iter().find(|p| p.matches(name))
    }
}

impl From<PrefixPolicy> for Policy {
    fn from(p: PrefixPolicy) -> Self {
        Policy { prefixes: vec![p] }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.prefixes.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for Policy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Policy::parse(s)
    }
}

/// Embedded encoding: `u8 count (1..=16) || count × Name` (the prefixes, without `/*`).
impl Encode for Policy {
    fn encode(&self, w: &mut Writer) {
        // At most MAX_POLICY_PREFIXES = 16.
        w.put_u8(self.prefixes.len() as u8);
        for p in &self.prefixes {
            p.prefix.encode(w);
        }
    }
}

impl Decode for Policy {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Policy> {
        let count = r.u8()? as usize;
        if count > MAX_POLICY_PREFIXES {
            return Err(tacit_wire::Error::TooMany {
                what: "policy prefixes",
                count: count as u64,
                max: MAX_POLICY_PREFIXES as u64,
            });
        }
        let mut prefixes = Vec::with_capacity(count);
        for _ in 0..count {
            prefixes.push(PrefixPolicy::new(Name::decode(r)?));
        }
        Policy::new(prefixes).map_err(|e| tacit_wire::Error::invalid("policy", e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Name {
        Name::parse(s).unwrap()
    }

    #[test]
    fn parse_and_display() {
        let name = n("HomeSecurityCorp/Technician/Bob");
        assert_eq!(name.to_string(), "HomeSecurityCorp/Technician/Bob");
        assert_eq!(name.depth(), 3);
        assert_eq!(name.root(), "HomeSecurityCorp");
        assert_eq!(name.last(), "Bob");
        assert_eq!(name.parent(), Some(n("HomeSecurityCorp/Technician")));
        assert_eq!(n("Root").parent(), None);
        assert_eq!(n("Alice/Devices/TV").components().next_back(), Some("TV"));
        assert_eq!(n("Zoë/Gerät").depth(), 2);
    }

    #[test]
    fn refusals_name_the_component() {
        let err = |s: &str| Name::parse(s).unwrap_err().to_string();
        assert_eq!(err(""), "name component 1 is empty");
        assert_eq!(err("a//b"), "name component 2 is empty");
        assert_eq!(err("a/b/"), "name component 3 is empty");
        assert_eq!(err("/a"), "name component 1 is empty");
        assert_eq!(
            err("a/b c"),
            "name component 2 contains the forbidden character ' ' (U+0020)"
        );
        assert!(err("a/*").contains("'*'"));
        assert!(err("a,b").contains("','"));
        assert!(err("a\tb").contains("U+0009"));
        assert!(err("a\u{202E}b").contains("U+202E"));
        assert!(err("a\u{200B}b").contains("U+200B"));
        assert!(err("a\u{00A0}b").contains("U+00A0"));
        assert_eq!(
            err(&format!("a/{}", "x".repeat(65))),
            "name component 2 is 65 bytes long; the limit is 64"
        );
        assert_eq!(
            err("1/2/3/4/5/6/7/8/9"),
            "a name has at most 8 components; this one has 9"
        );
        let long = vec!["x".repeat(64); 4].join("/");
        assert_eq!(long.len(), 259);
        assert_eq!(err(&long), "name is 259 bytes long; the limit is 255");
        assert!(Name::parse(&vec!["x".repeat(64); 3].join("/")).is_ok());
        // 64 bytes of multi-byte UTF-8 is fine, 66 is not.
        assert!(Name::parse(&"é".repeat(32)).is_ok());
        assert!(Name::parse(&"é".repeat(33)).is_err());
    }

    #[test]
    fn prefix_at_component_boundaries() {
        assert!(n("a/b").is_prefix_of(&n("a/b")));
        assert!(n("a/b").is_prefix_of(&n("a/b/c")));
        assert!(n("a").is_prefix_of(&n("a/b/c")));
        assert!(!n("a/b").is_prefix_of(&n("a/bc")));
        assert!(!n("a/b").is_prefix_of(&n("a")));
        assert!(!n("a/b/c").is_prefix_of(&n("a/b")));
        assert!(!n("b").is_prefix_of(&n("a/b")));
    }

    #[test]
    fn child_checks_limits() {
        assert_eq!(n("a/b").child("c").unwrap(), n("a/b/c"));
        assert_eq!(n("a/b").child("").unwrap_err().to_string(), "name component 3 is empty");
        assert!(n("1/2/3/4/5/6/7/8").child("9").is_err());
        let big = n(&vec!["x".repeat(64); 3].join("/"));
        assert!(big.child("y").is_ok());
        assert!(matches!(
            big.child(&"y".repeat(64)),
            Err(Error::NameTooLong { len: 259 })
        ));
    }

    #[test]
    fn prefixes_for_prefix_encryption() {
        let p: Vec<String> = n("a/b/c").prefixes().map(|x| x.to_string()).collect();
        assert_eq!(p, ["a", "a/b", "a/b/c"]);
        assert_eq!(n("a").prefixes().count(), 1);
    }

    #[test]
    fn prefix_policy() {
        let p = PrefixPolicy::parse("a/b/*").unwrap();
        assert_eq!(p.to_string(), "a/b/*");
        assert_eq!(p.prefix(), &n("a/b"));
        assert!(p.matches(&n("a/b")));
        assert!(p.matches(&n("a/b/c")));
        assert!(p.matches(&n("a/b/c/d")));
        assert!(!p.matches(&n("a/bc")));
        assert!(!p.matches(&n("a")));
        assert!(!p.matches(&n("x/a/b")));
        for bad in ["a/b", "*", "/*", "a/*/b/*", "a//*", "a/b*", ""] {
            assert!(PrefixPolicy::parse(bad).is_err(), "{bad}");
        }
        assert!(
            PrefixPolicy::parse("a/b")
                .unwrap_err()
                .to_string()
                .contains("not a prefix policy")
        );
    }

    #[test]
    fn policy_sets() {
        let p = Policy::parse("Alice/Family/*, Alice/Devices/*").unwrap();
        assert_eq!(p.to_string(), "Alice/Family/*,Alice/Devices/*");
        assert_eq!(Policy::parse(&p.to_string()).unwrap(), p);
        assert_eq!(p.first().prefix(), &n("Alice/Family"));
        assert!(p.matches(&n("Alice/Devices/TV")));
        assert_eq!(p.matching(&n("Alice/Devices/TV")), Some(&p.prefixes()[1]));
        assert!(!p.matches(&n("Alice")));
        assert!(!p.matches(&n("Bob/Devices/TV")));
        assert_eq!(Policy::parse("").unwrap_err(), Error::EmptyPolicy);
        assert!(Policy::parse("a/*,").is_err());
        assert!(matches!(Policy::parse("a/*,a/*"), Err(Error::DuplicatePrefix { .. })));
        let many = vec!["a/*"; 17].join(",");
        assert!(matches!(
            Policy::parse(&many),
            Err(Error::TooManyPrefixes { count: 17 })
        ));
    }

    #[test]
    fn encodings_round_trip_and_are_strict() {
        let name = n("HomeSecurityCorp/Technician");
        let b = name.to_wire();
        assert_eq!(b.len(), 1 + name.as_str().len());
        assert_eq!(Name::from_wire(&b).unwrap(), name);
        let mut longer = b.clone();
        longer.push(0);
        assert!(Name::from_wire(&longer).is_err());
        assert!(Name::from_wire(&b[..b.len() - 1]).is_err());
        assert!(Name::from_wire(&[3, b'a', b'/', b'/']).is_err());
        assert!(Name::from_wire(&[2, 0xc3, 0x28]).is_err());

        let p = Policy::parse("a/*,b/c/*").unwrap();
        assert_eq!(Policy::from_wire(&p.to_wire()).unwrap(), p);
        assert!(Policy::from_wire(&[0]).is_err());
        assert!(Policy::from_wire(&[2, 1, b'a', 1, b'a']).is_err());
    }
}
