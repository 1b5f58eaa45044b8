//! Principals, hierarchical names bound to Ed25519 keys by certificate chains
//! ("blessings"), and prefix policies.
//!
//! This is the identity and authorization model of Wu, Taly, Shankar and Boneh, §3
//! ("Identity and authorization model"), as deployed in Vanadium (§6):
//!
//! * every principal has a signing key pair ([`Principal`]);
//! * one or more hierarchically-structured human-readable names ([`Name`], e.g.
//!   `HomeSecurityCorp/Technician/Bob`) are bound to its public key by a certificate
//!   chain, a [`Blessing`], in the style of SDSI: the first [`Certificate`] is a
//!   self-signed root (`HomeSecurityCorp`), and each following certificate, signed by
//!   the key of the previous one, extends the name by one component and names the key
//!   it is bound to;
//! * a peer validates the chain against the roots it trusts ([`TrustedRoots`]) and
//!   *extracts the name* ([`Blessing::validate`] → [`ValidatedBlessing`]);
//!   "authorization decisions are based on this extracted name, and *not* the public
//!   key" (§3);
//! * authorization policies are prefix patterns such as `HomeSecurityCorp/Technician/*`
//!   ([`PrefixPolicy`], [`Policy`]), which is exactly what prefix encryption (§3.1)
//!   can enforce cryptographically.
//!
//! In the handshakes of §4 and §5, `ID_P` is a [`Blessing`], "the public key
//! identified by `ID_P`" is [`ValidatedBlessing::public_key`], and `SIG_P(m)` is
//! [`Principal::sign`], checked with [`ValidatedBlessing::verify`].
//!
//! # Encoding
//!
//! Certificates use a compact custom encoding (not X.509), about 110–120 bytes per
//! link, because chains travel inside handshake messages (see `docs/wire.md`,
//! "Blessings"):
//!
//! ```text
//! Certificate = u8 len || extension (1..=64 bytes, UTF-8) || key (32) || u64 not_after
//!               || u8 k (≤ 4) || k × (u8 kind || u8 len (≤ 64) || data) || signature (64)
//! Blessing    = u8 n (1..=8) || n × Certificate
//! ```
//!
//! The signature of link `i` (1-based) is an Ed25519 signature, by the key of link
//! `i − 1` (by its own key for the root), over
//!
//! ```text
//! "tacit-discovery/blessing/v1/link\0" || h_{i−1} || Certificate_i without its signature
//! h_0 = SHA-256("tacit-discovery/blessing/v1/root\0")
//! h_i = SHA-256("tacit-discovery/blessing/v1/chain\0" || h_{i−1} || Certificate_i)
//! ```
//!
//! so every link is bound to the whole chain above it, signatures included: a link
//! cannot be spliced into another chain, even one whose last key is the same.
//!
//! # Example
//!
//! ```
//! use tacit_crypto::rng::SecureRng;
//! use tacit_discovery::blessing::{Policy, Principal, TrustedRoots};
//!
//! let mut rng = SecureRng::from_seed([7; 32]);
//! let now = 1_767_225_600; // 2026-01-01T00:00:00Z
//! let year = 365 * 24 * 3600;
//!
//! // The company is a root; it blesses a technician, who blesses a device.
//! let (corp, corp_blessing) = Principal::new_root(&mut rng, "HomeSecurityCorp", now + year)?;
//! let tech = Principal::generate(&mut rng);
//! let tech_blessing = corp.bless(&corp_blessing, &tech.public_key(), "Technician", now + year, vec![])?;
//! let bob = Principal::generate(&mut rng);
//! let bob_blessing = tech.bless(&tech_blessing, &bob.public_key(), "Bob", now + year, vec![])?;
//!
//! // A peer that trusts the company validates the chain and extracts the name.
//! let mut roots = TrustedRoots::new();
//! roots.add("HomeSecurityCorp", corp.public_key())?;
//! let peer = bob_blessing.validate(&roots, now)?;
//! assert_eq!(peer.name().to_string(), "HomeSecurityCorp/Technician/Bob");
//! assert!(peer.satisfies(&"HomeSecurityCorp/Technician/*".parse::<Policy>()?));
//! assert!(!peer.satisfies(&"HomeSecurityCorp/Customer/*".parse::<Policy>()?));
//!
//! // Bob authenticates by signing a session-specific message (SIG_C in §4).
//! let sig = bob.sign(b"sid || g^x || g^y");
//! peer.verify(b"sid || g^x || g^y", &sig)?;
//! # Ok::<(), tacit_discovery::blessing::Error>(())
//! ```

mod chain;
mod name;
mod principal;
pub mod revocation;
mod time;

pub use chain::{
    Blessing, Caveat, Certificate, OpaqueCaveat, TrustedRoot, TrustedRoots, ValidatedBlessing, caveat_kinds,
};
pub use name::{ComponentProblem, Name, Policy, PrefixPolicy};
pub use principal::Principal;
pub use revocation::{Applied, CertificateId, RevocationList, SignedRevocationList};

/// Domain separator of [`Principal::sign`]. Neither it nor the blessing link separator
/// is a prefix of the other, so no handshake signature can be read as a certificate
/// and the other way round.
pub(crate) const SIGNATURE_DST: &[u8] = b"tacit-discovery/principal-signature/v1\0";

/// Most components in a [`Name`], hence most certificates in a [`Blessing`].
pub const MAX_DEPTH: usize = 8;
/// Longest name component (extension), in bytes of UTF-8.
pub const MAX_COMPONENT_LEN: usize = 64;
/// Longest [`Name`], in bytes, separators included.
pub const MAX_NAME_LEN: usize = 255;
/// Most caveats on one [`Certificate`].
pub const MAX_CAVEATS: usize = 4;
/// Longest caveat payload, in bytes.
pub const MAX_CAVEAT_DATA: usize = 64;
/// Most prefixes in one [`Policy`].
pub const MAX_POLICY_PREFIXES: usize = 16;
/// Most blessings one [`Principal`] holds.
pub const MAX_BLESSINGS: usize = 64;
/// Most roots in a [`TrustedRoots`] list.
pub const MAX_TRUSTED_ROOTS: usize = 1024;

/// Message-type tags of the enveloped (file) forms, registered in `docs/wire.md`
/// (`0x0310`–`0x031f` belong to blessings; `0x0313` and `0x0315`–`0x031f` are still free).
pub mod tags {
    /// A [`super::Blessing`] as a file ([`super::Blessing::to_file_bytes`]); embedded in
    /// other messages a blessing carries no envelope.
    pub const BLESSING: u16 = 0x0310;
    /// A stored [`super::Principal`]: secret key and blessings (contains the secret).
    pub const PRINCIPAL: u16 = 0x0311;
    /// A [`super::TrustedRoots`] list.
    pub const TRUSTED_ROOTS: u16 = 0x0312;
    /// A naming root's signed [`super::SignedRevocationList`].
    pub const REVOCATION_LIST: u16 = 0x0314;
}

/// Everything that can go wrong with names, policies, blessings and principals. The
/// messages say which component or link is at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A component of a name is not allowed.
    #[error("name component {index} {problem}")]
    InvalidComponent {
        /// Position of the component, from 1.
        index: usize,
        /// What is wrong with it.
        problem: ComponentProblem,
    },
    /// A single name component given on its own (an extension, a root name) is not
    /// allowed.
    #[error("{what} {problem}")]
    InvalidLabel {
        /// What it is ("extension", "root name").
        what: &'static str,
        /// What is wrong with it.
        problem: ComponentProblem,
    },
    /// A name has too many components.
    #[error("a name has at most {MAX_DEPTH} components; this one has {count}")]
    TooManyComponents {
        /// Its number of components.
        count: usize,
    },
    /// A name is too long.
    #[error("name is {len} bytes long; the limit is {MAX_NAME_LEN}")]
    NameTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A policy is not of the form `prefix/*`.
    #[error("policy {0:?} is not a prefix policy: write it as `Prefix/Of/Names/*`")]
    NotAPrefixPolicy(String),
    /// A policy without any prefix.
    #[error("a policy needs at least one prefix")]
    EmptyPolicy,
    /// A policy with too many prefixes.
    #[error("a policy has at most {MAX_POLICY_PREFIXES} prefixes; this one has {count}")]
    TooManyPrefixes {
        /// Its number of prefixes.
        count: usize,
    },
    /// The same prefix twice in a policy.
    #[error("prefix {prefix}/* appears twice in the policy")]
    DuplicatePrefix {
        /// The repeated prefix.
        prefix: Name,
    },
    /// A blessing without certificates.
    #[error("a blessing needs at least one certificate (its root)")]
    EmptyChain,
    /// A blessing (or a name) deeper than [`MAX_DEPTH`].
    #[error("a blessing has at most {MAX_DEPTH} certificates; this one would have {depth}")]
    ChainTooDeep {
        /// The depth it has or would have.
        depth: usize,
    },
    /// A certificate with too many caveats.
    #[error("a certificate carries at most {MAX_CAVEATS} caveats; this one has {count}")]
    TooManyCaveats {
        /// Its number of caveats.
        count: usize,
    },
    /// Caveat payload too long.
    #[error("caveat data is {len} bytes long; the limit is {MAX_CAVEAT_DATA}")]
    CaveatTooLong {
        /// Its length.
        len: usize,
    },
    /// An opaque caveat that uses the kind of a caveat this module implements.
    #[error("caveat kind {kind:#04x} is reserved for a built-in caveat; use the matching Caveat variant")]
    ReservedCaveatKind {
        /// The kind.
        kind: u8,
    },
    /// The root of a blessing is not among the trusted roots.
    #[error("root {root} is not trusted")]
    UntrustedRoot {
        /// The root name the blessing claims.
        root: String,
    },
    /// The root name is trusted, but with another key.
    #[error("root {root} is trusted, but with another key than the one this blessing presents")]
    RootKeyMismatch {
        /// The root name.
        root: String,
    },
    /// A certificate's signature does not verify (tampered, reordered or spliced).
    #[error("signature of link {link} ({extension}) does not verify")]
    BadSignature {
        /// Position of the link, from 1 (the root).
        link: usize,
        /// Its extension.
        extension: String,
    },
    /// A certificate has expired.
    #[error("link {link} ({extension}) expired at {} (now {})", time::Utc(*.not_after), time::Utc(*.now))]
    Expired {
        /// Position of the link, from 1 (the root).
        link: usize,
        /// Its extension.
        extension: String,
        /// The end of its validity (Unix seconds): its `not_after` or an
        /// [`Caveat::ExpiresAt`].
        not_after: u64,
        /// The time of the check.
        now: u64,
    },
    /// A certificate is not valid yet ([`Caveat::NotBefore`]).
    #[error("link {link} ({extension}) is not valid before {} (now {})", time::Utc(*.not_before), time::Utc(*.now))]
    NotYetValid {
        /// Position of the link, from 1 (the root).
        link: usize,
        /// Its extension.
        extension: String,
        /// The start of its validity (Unix seconds).
        not_before: u64,
        /// The time of the check.
        now: u64,
    },
    /// A certificate carries a critical caveat this build cannot check.
    #[error(
        "link {link} ({extension}) carries a critical caveat of kind {kind:#04x} that this build does not understand"
    )]
    UnknownCriticalCaveat {
        /// Position of the link, from 1 (the root).
        link: usize,
        /// Its extension.
        extension: String,
        /// The caveat kind.
        kind: u8,
    },
    /// A principal was handed a blessing that is bound to another key.
    #[error("blessing {name} is bound to another key than this principal's")]
    NotOurBlessing {
        /// The (unverified) name of the blessing.
        name: String,
    },
    /// A principal already holds [`MAX_BLESSINGS`] blessings.
    #[error("a principal holds at most {MAX_BLESSINGS} blessings")]
    TooManyBlessings,
    /// A trusted-roots list already holds [`MAX_TRUSTED_ROOTS`] roots.
    #[error("a trusted-roots list holds at most {MAX_TRUSTED_ROOTS} roots")]
    TooManyTrustedRoots,
    /// A link of the chain is on its root's revocation list.
    #[error("link {link} ({extension}) is revoked by its root (certificate {id})")]
    Revoked {
        /// Position of the link, from 1 (the root).
        link: usize,
        /// Its extension.
        extension: String,
        /// Its identifier (hex).
        id: String,
    },
    /// Only a root principal, with its own self-signed blessing, signs revocation
    /// lists.
    #[error("{name} is not a root blessing of this principal: only a root revokes in its tree")]
    NotARoot {
        /// The blessing's (unverified) name.
        name: String,
    },
    /// A revocation list that is not signed by the key of the root it names.
    #[error("the revocation list of root {root} is not signed by that root")]
    BadRevocationSignature {
        /// The root it names.
        root: String,
    },
    /// A revocation list older than the one in force (a replay would un-revoke).
    #[error("revocation list {got} of root {root} is older than list {have} already in force")]
    StaleRevocationList {
        /// The root.
        root: String,
        /// The sequence number in force.
        have: u64,
        /// The sequence number offered.
        got: u64,
    },
    /// A revocation list that cannot be made or used.
    #[error("invalid revocation list: {0}")]
    InvalidRevocationList(String),
    /// Malformed bytes.
    #[error("malformed encoding: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// A key or signature was refused by the cryptographic core.
    #[error("{0}")]
    Crypto(#[from] tacit_crypto::Error),
}

/// Result alias of this module.
pub type Result<T> = core::result::Result<T, Error>;
