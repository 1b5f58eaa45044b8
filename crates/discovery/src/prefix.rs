//! Prefix encryption from the BB₂ IBE (Wu, Taly, Shankar and Boneh, §3.1, adapted
//! from Lewko and Waters).
//!
//! Names are hierarchical, `s₁/s₂/…/sₙ`. A policy is a name prefix `π = s₁/…/sₖ`,
//! written `s₁/…/sₖ/*`: it is satisfied by the name `π` itself and every name below
//! it. The key for `ID = s₁/…/sₙ` is the list of IBE keys for the identities
//! `(s₁), (s₁/s₂), …, (s₁/…/sₙ)`; encrypting under `π` is IBE encryption to the
//! identity `π`; so a key for `ID` decrypts exactly when `π` is a prefix of `ID`,
//! with the one IBE key it holds for `π`:
//!
//! * `PE.Enc(MPK, π, m) = (π, IBE.Enc(MPK, ⟨π⟩, m))`;
//! * `PE.Dec(SK_ID, (π, c)) = IBE.Dec(SK_⟨π⟩, c)` if `π` is a prefix of `ID`, else ⊥.
//!
//! `⟨π⟩` is the unambiguous IBE identity of a prefix ([`Prefix::ibe_identity`]).
//!
//! **The ciphertext carries its policy in the clear**, as in the paper ("π_S,
//! included with CT_S", §5): anyone who sees it learns which prefix may read it, and a
//! recipient can tell whether its key applies before doing a pairing. The paper's full
//! version discusses hiding the policy; this module does not.
//!
//! # Names
//!
//! 1 to [`MAX_COMPONENTS`] components joined by `/`; each component is 1 to
//! [`MAX_COMPONENT_LEN`] bytes of UTF-8 with no `/`, no `*`, no control character and no
//! whitespace; the whole name is at most [`MAX_NAME_LEN`] bytes. Names are compared
//! byte for byte (no Unicode normalisation).
//!
//! # Encodings
//!
//! | value | encoding | bytes |
//! |---|---|---|
//! | [`PrefixKey`] (secret) | `01 0304 ‖ u32 len ‖ name ‖ n × (r ‖ K)` | 7 + len + 128·n |
//! | [`PrefixCiphertext`] | `01 0305 ‖ u32 len ‖ policy ‖ u32 len ‖ IBE ciphertext` | 155 + len(policy) + len(M) |
//!
//! Names are written as their `/`-joined UTF-8 string and re-validated on decode, so
//! each value has one encoding.
//!
//! ```
//! use tacit_crypto::rng::SecureRng;
//! use tacit_discovery::prefix::{self, Prefix, PrefixAuthority};
//!
//! let mut rng = SecureRng::from_seed([2; 32]);
//! let root = PrefixAuthority::generate(&mut rng);
//! let bob = root.extract(&Prefix::parse("HomeSecurityCorp/Technician/Bob").unwrap(), &mut rng).unwrap();
//!
//! let policy = Prefix::parse("HomeSecurityCorp/Technician").unwrap();
//! let ct = prefix::encrypt(root.public(), &policy, b"bid", b"server certificate", &mut rng).unwrap();
//! assert!(bob.satisfies(ct.policy()));
//! assert_eq!(bob.decrypt(&ct, b"bid").unwrap(), b"server certificate");
//!
//! let other = Prefix::parse("HomeSecurityCorp/Sales").unwrap();
//! let ct = prefix::encrypt(root.public(), &other, b"bid", b"x", &mut rng).unwrap();
//! assert_eq!(
//!     bob.decrypt(&ct, b"bid").unwrap_err().to_string(),
//!     "this identity does not satisfy the policy HomeSecurityCorp/Sales/*"
//! );
//! ```

use crate::ibe::{
    CIPHERTEXT_OVERHEAD, Ciphertext, G2_LEN, IdentityKey, MAX_PLAINTEXT_LEN, MasterPublicKey, MasterSecretKey,
    SCALAR_LEN,
};
use rand_core::CryptoRngCore;
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::Zeroizing;

pub use crate::ibe::{Error, Result};

/// Most components in a name.
pub const MAX_COMPONENTS: usize = 8;
/// Longest component, in bytes.
pub const MAX_COMPONENT_LEN: usize = 64;
/// Longest name (components and separators), in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// Wire tag of an encoded [`PrefixKey`].
pub const TAG_PREFIX_KEY: u16 = 0x0304;
/// Wire tag of an encoded [`PrefixCiphertext`].
pub const TAG_PREFIX_CIPHERTEXT: u16 = 0x0305;

/// Domain separator at the start of every prefix's IBE identity.
pub const PREFIX_IDENTITY_DST: &[u8] = b"tacit-discovery-v1 prefix";

/// A validated hierarchical name, or a policy prefix: 1 to [`MAX_COMPONENTS`]
/// components. Displayed as `a/b/c`.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Prefix {
    components: Vec<String>,
}

impl Prefix {
    /// Parses `a/b/c`.
    ///
    /// # Errors
    /// [`Error::InvalidName`] saying what is wrong.
    pub fn parse(name: &str) -> Result<Self> {
        if name.len() > MAX_NAME_LEN {
            return Err(Error::InvalidName(format!(
                "the name is {} bytes; the limit is {MAX_NAME_LEN}",
                name.len()
            )));
        }
        let parts: Vec<&str> = name.split('/').collect();
        Self::from_components(&parts)
    }

    /// A name from its components (`["a", "b", "c"]` for `a/b/c`).
    ///
    /// # Errors
    /// [`Error::InvalidName`] saying what is wrong.
    pub fn from_components<S: AsRef<str>>(components: &[S]) -> Result<Self> {
        if components.is_empty() || components.len() > MAX_COMPONENTS {
            return Err(Error::InvalidName(format!(
                "a name has 1 to {MAX_COMPONENTS} components; this one has {}",
                components.len()
            )));
        }
        let mut total = components.len() - 1; // separators
        let mut out = Vec::with_capacity(components.len());
        for (i, c) in components.iter().enumerate() {
            let c = c.as_ref();
            validate_component(i + 1, c)?;
            total += c.len();
            out.push(c.to_owned());
        }
        if total > MAX_NAME_LEN {
            return Err(Error::InvalidName(format!(
                "the name is {total} bytes; the limit is {MAX_NAME_LEN}"
            )));
        }
        Ok(Prefix { components: out })
    }

    /// The components, outermost first.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Number of components (at least 1).
    pub fn len(&self) -> usize {
        self.components.len()
    }

    /// Always false: a name has at least one component.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `self` is a prefix of `name` (component-wise; `a/b` is a prefix of
    /// `a/b` and of `a/b/c`, not of `a/bc`): whether `name` satisfies the policy
    /// `self/*`.
    pub fn is_prefix_of(&self, name: &Prefix) -> bool {
        self.len() <= name.len() && self.components[..] == name.components[..self.len()]
    }

    /// The first `n` components (`1 ≤ n ≤ len`), or `None`.
    pub fn truncated(&self, n: usize) -> Option<Prefix> {
        (1..=self.len()).contains(&n).then(|| Prefix {
            components: self.components[..n].to_vec(),
        })
    }

    /// The prefixes `s₁`, `s₁/s₂`, …, `s₁/…/sₙ` (the identities a key for this name
    /// holds), shortest first.
    pub fn prefixes(&self) -> impl Iterator<Item = Prefix> + '_ {
        (1..=self.len()).filter_map(|n| self.truncated(n))
    }

    /// The IBE identity `⟨π⟩` of this prefix:
    /// `PREFIX_IDENTITY_DST ‖ u8 n ‖ (u8 |sᵢ| ‖ sᵢ)ᵢ` (at most 25 + 1 + n + (256 − n) = 282
    /// bytes, since the components of a valid name total at most 256 − n bytes). Injective, and disjoint from identities used outside prefix
    /// encryption that do not start with the separator.
    pub fn ibe_identity(&self) -> Vec<u8> {
        let mut id = Vec::with_capacity(PREFIX_IDENTITY_DST.len() + 1 + self.len() + MAX_NAME_LEN);
        id.extend_from_slice(PREFIX_IDENTITY_DST);
        id.push(self.len() as u8);
        for c in &self.components {
            id.push(c.len() as u8);
            id.extend_from_slice(c.as_bytes());
        }
        id
    }

    fn read(r: &mut Reader<'_>, what: &'static str) -> tacit_wire::Result<Self> {
        let s = r.str(what, MAX_NAME_LEN)?;
        Prefix::parse(s).map_err(|e| tacit_wire::Error::invalid(what, e.to_string()))
    }
}

fn validate_component(index: usize, c: &str) -> Result<()> {
    let bad = |why: &str| Err(Error::InvalidName(format!("component {index} ({c:?}) {why}")));
    if c.is_empty() {
        return Err(Error::InvalidName(format!("component {index} is empty")));
    }
    if c.len() > MAX_COMPONENT_LEN {
        return bad(&format!("is {} bytes; the limit is {MAX_COMPONENT_LEN}", c.len()));
    }
    if c.contains('/') {
        return bad("contains '/'");
    }
    if c.contains('*') {
        return bad("contains '*' (a policy is a plain prefix; '*' is not part of names)");
    }
    if c.chars().any(|ch| ch.is_control() || ch.is_whitespace()) {
        return bad("contains a control character or whitespace");
    }
    Ok(())
}

impl core::fmt::Display for Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.components.join("/"))
    }
}

impl core::fmt::Debug for Prefix {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Prefix({:?})", self.to_string())
    }
}

impl core::str::FromStr for Prefix {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Prefix::parse(s)
    }
}

/// The root of a prefix-encryption hierarchy: the IBE master secret key (with its
/// public key), which extracts [`PrefixKey`]s. Never printed.
pub struct PrefixAuthority {
    msk: MasterSecretKey,
}

impl PrefixAuthority {
    /// A new authority with a fresh master key pair.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        PrefixAuthority {
            msk: MasterSecretKey::generate(rng),
        }
    }

    /// The authority holding `msk`.
    pub fn from_master_secret_key(msk: MasterSecretKey) -> Self {
        PrefixAuthority { msk }
    }

    /// The master secret key (to store it: [`MasterSecretKey::to_bytes`]).
    pub fn master_secret_key(&self) -> &MasterSecretKey {
        &self.msk
    }

    /// The master public key that encryptors use.
    pub fn public(&self) -> &MasterPublicKey {
        self.msk.public()
    }

    /// The key for `name = s₁/…/sₙ`: IBE keys for `⟨s₁⟩, ⟨s₁/s₂⟩, …, ⟨s₁/…/sₙ⟩`.
    ///
    /// # Errors
    /// None for a valid [`Prefix`]; the IBE's errors are passed on.
    pub fn extract(&self, name: &Prefix, rng: &mut impl CryptoRngCore) -> Result<PrefixKey> {
        let keys = name
            .prefixes()
            .map(|p| self.msk.extract(&p.ibe_identity(), rng))
            .collect::<Result<Vec<_>>>()?;
        Ok(PrefixKey {
            name: name.clone(),
            keys,
        })
    }
}

impl core::fmt::Debug for PrefixAuthority {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PrefixAuthority({:?}, <redacted>)", self.public())
    }
}

/// `PE.Enc(MPK, π, m)`: the IBE encryption of `plaintext` to `⟨policy⟩` (binding
/// `aad`), with `policy` in the clear.
///
/// # Errors
/// [`Error::PlaintextTooLong`].
pub fn encrypt(
    mpk: &MasterPublicKey,
    policy: &Prefix,
    aad: &[u8],
    plaintext: &[u8],
    rng: &mut impl CryptoRngCore,
) -> Result<PrefixCiphertext> {
    let ciphertext = mpk.encrypt(&policy.ibe_identity(), aad, plaintext, rng)?;
    Ok(PrefixCiphertext {
        policy: policy.clone(),
        ciphertext,
    })
}

/// A prefix-encryption ciphertext: the policy prefix `π` (in the clear) and the IBE
/// ciphertext to `⟨π⟩`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PrefixCiphertext {
    policy: Prefix,
    ciphertext: Ciphertext,
}

impl PrefixCiphertext {
    /// The policy: names with this prefix can decrypt.
    pub fn policy(&self) -> &Prefix {
        &self.policy
    }

    /// The IBE ciphertext.
    pub fn ibe_ciphertext(&self) -> &Ciphertext {
        &self.ciphertext
    }
}

impl Encode for PrefixCiphertext {
    /// `01 0305 ‖ u32 len ‖ policy ‖ u32 len ‖ C₁ ‖ C₂ ‖ c₃ ‖ c₄`.
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_PREFIX_CIPHERTEXT);
        w.put_str(&self.policy.to_string());
        w.put_var_bytes(&self.ciphertext.to_bytes());
    }
}

impl Decode for PrefixCiphertext {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_PREFIX_CIPHERTEXT, "prefix ciphertext")?;
        let policy = Prefix::read(r, "ciphertext policy")?;
        let bytes = r.var_bytes("IBE ciphertext", CIPHERTEXT_OVERHEAD + MAX_PLAINTEXT_LEN)?;
        let ciphertext = Ciphertext::decode_exact(bytes)?;
        Ok(PrefixCiphertext { policy, ciphertext })
    }
}

/// The secret key of a name `s₁/…/sₙ`: one IBE key for each of its prefixes.
/// Zeroized on drop (by the IBE keys), never printed.
pub struct PrefixKey {
    name: Prefix,
    /// `keys[i]` is the IBE key for `⟨s₁/…/s_{i+1}⟩`.
    keys: Vec<IdentityKey>,
}

impl PrefixKey {
    /// The name this key belongs to.
    pub fn name(&self) -> &Prefix {
        &self.name
    }

    /// Whether this key's name satisfies `policy/*` (`policy` is a prefix of it).
    pub fn satisfies(&self, policy: &Prefix) -> bool {
        policy.is_prefix_of(&self.name)
    }

    /// The IBE key for `⟨policy⟩`, when the name satisfies `policy`.
    pub fn identity_key(&self, policy: &Prefix) -> Option<&IdentityKey> {
        if self.satisfies(policy) {
            self.keys.get(policy.len() - 1)
        } else {
            None
        }
    }

    /// `PE.Dec(SK_ID, (π, c))`: IBE decryption with the key for `⟨π⟩`.
    ///
    /// # Errors
    /// [`Error::PolicyNotSatisfied`] when the name does not start with the policy
    /// (decided from the clear policy, without a pairing); [`Error::Decrypt`] when the
    /// ciphertext or `aad` was modified or was made under another master key.
    pub fn decrypt(&self, ct: &PrefixCiphertext, aad: &[u8]) -> Result<Vec<u8>> {
        let key = self.identity_key(&ct.policy).ok_or_else(|| Error::PolicyNotSatisfied {
            policy: ct.policy.to_string(),
        })?;
        key.decrypt(&ct.ciphertext, aad)
    }

    /// `01 0304 ‖ u32 len ‖ name ‖ n × (r (32) ‖ K (96))`, secret; the IBE identities
    /// follow from the name.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let name = self.name.to_string();
        let mut w = Writer::with_capacity(7 + name.len() + self.keys.len() * (SCALAR_LEN + G2_LEN));
        w.put_envelope(TAG_PREFIX_KEY);
        w.put_str(&name);
        for k in &self.keys {
            w.put_fixed(&*k.secret_parts());
        }
        Zeroizing::new(w.into_bytes())
    }

    /// Decodes [`PrefixKey::to_bytes`] for use with `mpk`; each IBE key is checked
    /// against `mpk` (one pairing each, see [`IdentityKey::from_bytes`]).
    ///
    /// # Errors
    /// [`Error::Wire`], [`Error::KeyMismatch`].
    pub fn from_bytes(mpk: &MasterPublicKey, bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(TAG_PREFIX_KEY, "prefix key")?;
        let name = Prefix::read(&mut r, "prefix key name")?;
        let body = name.len() * (SCALAR_LEN + G2_LEN);
        if r.remaining() != body {
            return Err(if r.remaining() < body {
                tacit_wire::Error::Truncated {
                    what: "prefix key IBE keys",
                    needed: body,
                    remaining: r.remaining(),
                }
            } else {
                tacit_wire::Error::TrailingBytes(r.remaining() - body)
            }
            .into());
        }
        let keys = name
            .prefixes()
            .map(|p| {
                IdentityKey::read_secret_parts(mpk, p.ibe_identity(), &mut r).map_err(|e| match e {
                    Error::KeyMismatch { .. } => Error::KeyMismatch {
                        identity: p.to_string(),
                    },
                    other => other,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        r.finish()?;
        Ok(PrefixKey { name, keys })
    }
}

impl core::fmt::Debug for PrefixKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PrefixKey({}, <redacted>)", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_validated() {
        for ok in ["a", "a/b/c", "HomeSecurityCorp/Technician/Bob", "é/ü", &"x".repeat(64)] {
            assert_eq!(Prefix::parse(ok).unwrap().to_string(), ok);
        }
        for (bad, why) in [
            ("", "component 1 is empty"),
            ("a//b", "component 2 is empty"),
            ("a/", "component 2 is empty"),
            ("/a", "component 1 is empty"),
            ("a/b*", "contains '*'"),
            ("a/*", "contains '*'"),
            ("a b", "whitespace"),
            ("a\tb", "whitespace"),
            ("a\u{7f}", "control"),
            ("a\u{a0}b", "whitespace"),
            ("1/2/3/4/5/6/7/8/9", "1 to 8 components; this one has 9"),
        ] {
            let e = Prefix::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(
            Prefix::parse(&"x".repeat(65))
                .unwrap_err()
                .to_string()
                .contains("65 bytes; the limit is 64")
        );
        assert!(
            Prefix::from_components(&["a/b"])
                .unwrap_err()
                .to_string()
                .contains("contains '/'")
        );
        assert!(Prefix::from_components::<&str>(&[]).is_err());
        // 4 × 64 + 3 separators = 259 > 255.
        let c = "y".repeat(64);
        assert!(
            Prefix::from_components(&[&c, &c, &c, &c])
                .unwrap_err()
                .to_string()
                .contains("259 bytes")
        );
        assert_eq!(
            Prefix::from_components(&[&c, &c, &c, &c[..60]])
                .unwrap()
                .to_string()
                .len(),
            255
        );
        assert!(Prefix::from_components(&[&c, &c, &c, &c[..61]]).is_err());
    }

    #[test]
    fn prefix_relation_is_component_wise() {
        let p = |s| Prefix::parse(s).unwrap();
        assert!(p("a/b").is_prefix_of(&p("a/b")));
        assert!(p("a/b").is_prefix_of(&p("a/b/c")));
        assert!(!p("a/b").is_prefix_of(&p("a/bc")));
        assert!(!p("a/b/c").is_prefix_of(&p("a/b")));
        assert!(!p("b").is_prefix_of(&p("a/b")));
        let all: Vec<String> = p("a/b/c").prefixes().map(|x| x.to_string()).collect();
        assert_eq!(all, ["a", "a/b", "a/b/c"]);
        assert_eq!(p("a/b").truncated(3), None);
        assert_eq!(p("a/b").truncated(0), None);
    }

    #[test]
    fn ibe_identities_are_unambiguous() {
        let p = |s| Prefix::parse(s).unwrap();
        let ids = [p("ab/c"), p("a/bc"), p("abc"), p("a/b/c")].map(|x| x.ibe_identity());
        for i in 0..ids.len() {
            for j in 0..i {
                assert_ne!(ids[i], ids[j]);
            }
        }
        assert_eq!(&ids[3][..PREFIX_IDENTITY_DST.len()], PREFIX_IDENTITY_DST);
        assert_eq!(&ids[3][PREFIX_IDENTITY_DST.len()..], b"\x03\x01a\x01b\x01c");
        // The longest name fits the IBE's identity bound.
        let c = "z".repeat(31);
        let longest = Prefix::from_components(&[&c, &c, &c, &c, &c, &c, &c, &c]).unwrap();
        assert!(longest.ibe_identity().len() <= crate::ibe::MAX_IDENTITY_LEN);
    }
}
