//! Prime-order groups behind one trait.
//!
//! Two implementations share one test suite:
//!
//! | type | encoding of an element | scalar encoding | hash | RFC 9497 suite |
//! |---|---|---|---|---|
//! | [`Ristretto255`] | 32 bytes (RFC 9496) | 32 bytes little-endian | SHA-512 | `ristretto255-SHA512` |
//! | [`P256`] | 33 bytes, SEC1 compressed | 32 bytes big-endian | SHA-256 | `P256-SHA256` |
//!
//! Decoding accepts only the canonical encoding of a non-identity element (the
//! identity never travels in a tacit protocol); scalars must be fully reduced.

use crate::xmd::expand_message_xmd;
use crate::{Error, Result};
use core::fmt;
use rand_core::CryptoRngCore;
use sha2::digest::core_api::BlockSizeUser;
use sha2::{Digest, Sha256, Sha512};
use zeroize::Zeroize;

/// Which group a message or a key belongs to (its wire code is the `u8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum GroupId {
    /// ristretto255 (RFC 9496).
    Ristretto255 = 1,
    /// NIST P-256.
    P256 = 2,
}

impl GroupId {
    /// The wire code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The group for a wire code.
    pub fn from_code(code: u8) -> Option<GroupId> {
        match code {
            1 => Some(GroupId::Ristretto255),
            2 => Some(GroupId::P256),
            _ => None,
        }
    }

    /// The human name (`ristretto255`, `p256`).
    pub fn name(self) -> &'static str {
        match self {
            GroupId::Ristretto255 => "ristretto255",
            GroupId::P256 => "p256",
        }
    }
}

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for GroupId {
    type Err = String;
    fn from_str(s: &str) -> core::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "ristretto255" | "ristretto" => Ok(GroupId::Ristretto255),
            "p256" | "p-256" | "secp256r1" => Ok(GroupId::P256),
            other => Err(format!("unknown group {other:?}; choose ristretto255 or p256")),
        }
    }
}

/// A prime-order group with hashing to the group and to scalars.
///
/// Implementations must make [`PrimeGroup::decode_element`] accept exactly the
/// encodings produced by [`PrimeGroup::element_bytes`] for non-identity elements.
pub trait PrimeGroup: 'static + Send + Sync + Copy + Clone + fmt::Debug + Default {
    /// A group element.
    type Element: Copy + Clone + Send + Sync + PartialEq + fmt::Debug;
    /// A scalar modulo the group order.
    type Scalar: Copy + Clone + Send + Sync + Zeroize + PartialEq;
    /// The fixed-size encoding of an element.
    type ElementBytes: AsRef<[u8]> + for<'a> TryFrom<&'a [u8]> + Copy + Clone + Send + Sync + PartialEq + fmt::Debug;
    /// The hash function of the RFC 9497 suite.
    type Hash: Digest + BlockSizeUser + Clone + Send + Sync;

    /// The group's identifier.
    const ID: GroupId;
    /// The RFC 9497 suite identifier (`ristretto255-SHA512`, `P256-SHA256`).
    const SUITE_ID: &'static str;
    /// Length of an encoded element.
    const ELEMENT_LEN: usize;
    /// Length of an encoded scalar.
    const SCALAR_LEN: usize;
    /// Length of a hash output.
    const HASH_LEN: usize;

    /// The standard generator.
    fn generator() -> Self::Element;
    /// The identity element.
    fn identity() -> Self::Element;
    /// Whether `e` is the identity.
    fn is_identity(e: &Self::Element) -> bool;
    /// `HashToGroup`: RFC 9380 / RFC 9497 §4 for this group. The message and DST are
    /// given in parts that are concatenated.
    fn hash_to_group(msg: &[&[u8]], dst: &[&[u8]]) -> Result<Self::Element>;
    /// `HashToScalar`: RFC 9497 §4 for this group.
    fn hash_to_scalar(msg: &[&[u8]], dst: &[&[u8]]) -> Result<Self::Scalar>;
    /// A uniformly random non-zero scalar.
    fn random_scalar(rng: &mut impl CryptoRngCore) -> Self::Scalar;
    /// The zero scalar.
    fn scalar_zero() -> Self::Scalar;
    /// Whether `s` is zero.
    fn scalar_is_zero(s: &Self::Scalar) -> bool;
    /// `s^-1`; `s` must be non-zero (zero maps to zero).
    fn scalar_invert(s: &Self::Scalar) -> Self::Scalar;
    /// `a * b`.
    fn scalar_mul(a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;
    /// `a + b`.
    fn scalar_add(a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;
    /// `a - b`.
    fn scalar_sub(a: &Self::Scalar, b: &Self::Scalar) -> Self::Scalar;
    /// `s · e` (constant time in `s`).
    fn mul(e: &Self::Element, s: &Self::Scalar) -> Self::Element;
    /// `s · G` (constant time in `s`).
    fn mul_base(s: &Self::Scalar) -> Self::Element;
    /// `a + b`.
    fn add(a: &Self::Element, b: &Self::Element) -> Self::Element;
    /// `Σ sᵢ · eᵢ` in variable time: only for public scalars and elements.
    fn vartime_lincomb(scalars: &[Self::Scalar], elements: &[Self::Element]) -> Self::Element;
    /// `a · A + b · G` in variable time: only for public values (proof verification).
    fn vartime_double_base(a: &Self::Scalar, big_a: &Self::Element, b: &Self::Scalar) -> Self::Element;
    /// The canonical encoding of `e`; the identity encodes as all zeros, which
    /// [`PrimeGroup::decode_element`] refuses.
    fn element_bytes(e: &Self::Element) -> Self::ElementBytes;
    /// Decodes a canonical, non-identity element.
    fn decode_element(bytes: &[u8]) -> Result<Self::Element>;
    /// The canonical encoding of a scalar (appended to `out`).
    fn encode_scalar(s: &Self::Scalar, out: &mut Vec<u8>);
    /// Decodes a canonical (fully reduced) scalar.
    fn decode_scalar(bytes: &[u8]) -> Result<Self::Scalar>;

    /// Encodes a batch of elements into one buffer (hot path helper).
    fn encode_elements(elements: &[Self::Element], out: &mut Vec<u8>) {
        out.reserve(elements.len() * Self::ELEMENT_LEN);
        for e in elements {
            out.extend_from_slice(Self::element_bytes(e).as_ref());
        }
    }
}

/// `SerializeScalar(c) || SerializeScalar(s)`: the encoding of a Fiat–Shamir proof.
pub(crate) fn two_scalars_to_bytes<G: PrimeGroup>(c: &G::Scalar, s: &G::Scalar) -> Vec<u8> {
    let mut v = Vec::with_capacity(2 * G::SCALAR_LEN);
    G::encode_scalar(c, &mut v);
    G::encode_scalar(s, &mut v);
    v
}

/// Decodes `c || s`; both scalars must be canonical.
pub(crate) fn two_scalars_from_bytes<G: PrimeGroup>(bytes: &[u8]) -> Result<(G::Scalar, G::Scalar)> {
    if bytes.len() != 2 * G::SCALAR_LEN {
        return Err(Error::InvalidScalar {
            group: G::ID.name(),
            why: "a proof is exactly two scalars",
        });
    }
    Ok((
        G::decode_scalar(&bytes[..G::SCALAR_LEN])?,
        G::decode_scalar(&bytes[G::SCALAR_LEN..])?,
    ))
}

/// Writes `name(hex)`.
pub(crate) fn fmt_hex(f: &mut fmt::Formatter<'_>, name: &str, bytes: &[u8]) -> fmt::Result {
    write!(f, "{name}(")?;
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    write!(f, ")")
}

/// A secret scalar: zeroized on drop, never printed, compared in constant time by
/// the group's scalar equality.
#[derive(Clone)]
pub struct SecretScalar<G: PrimeGroup>(G::Scalar);

impl<G: PrimeGroup> SecretScalar<G> {
    /// Wraps a scalar.
    pub fn new(s: G::Scalar) -> Self {
        SecretScalar(s)
    }

    /// A fresh random non-zero secret.
    pub fn random(rng: &mut impl CryptoRngCore) -> Self {
        SecretScalar(G::random_scalar(rng))
    }

    /// The scalar, for arithmetic.
    pub fn expose(&self) -> &G::Scalar {
        &self.0
    }

    /// The canonical encoding (handle with care: it is the secret).
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let mut v = Vec::with_capacity(G::SCALAR_LEN);
        G::encode_scalar(&self.0, &mut v);
        zeroize::Zeroizing::new(v)
    }

    /// Decodes a non-zero secret scalar.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let s = G::decode_scalar(bytes)?;
        if G::scalar_is_zero(&s) {
            return Err(Error::InvalidScalar {
                group: G::ID.name(),
                why: "secret scalar is zero",
            });
        }
        Ok(SecretScalar(s))
    }
}

impl<G: PrimeGroup> Drop for SecretScalar<G> {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl<G: PrimeGroup> fmt::Debug for SecretScalar<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretScalar<{}>(<redacted>)", G::ID.name())
    }
}

// ---------------------------------------------------------------------------
// ristretto255

/// The ristretto255 group (RFC 9496) over curve25519-dalek: tacit's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ristretto255;

mod ristretto {
    use super::*;
    use curve25519_dalek::constants::RISTRETTO_BASEPOINT_TABLE;
    use curve25519_dalek::ristretto::{CompressedRistretto, RistrettoPoint};
    use curve25519_dalek::scalar::Scalar;
    use curve25519_dalek::traits::{Identity, IsIdentity, VartimeMultiscalarMul};

    impl PrimeGroup for Ristretto255 {
        type Element = RistrettoPoint;
        type Scalar = Scalar;
        type ElementBytes = [u8; 32];
        type Hash = Sha512;

        const ID: GroupId = GroupId::Ristretto255;
        const SUITE_ID: &'static str = "ristretto255-SHA512";
        const ELEMENT_LEN: usize = 32;
        const SCALAR_LEN: usize = 32;
        const HASH_LEN: usize = 64;

        fn generator() -> RistrettoPoint {
            curve25519_dalek::constants::RISTRETTO_BASEPOINT_POINT
        }
        fn identity() -> RistrettoPoint {
            RistrettoPoint::identity()
        }
        fn is_identity(e: &RistrettoPoint) -> bool {
            e.is_identity()
        }
        /// RFC 9497 §4.1: `expand_message_xmd` with SHA-512 to 64 bytes, then the
        /// ristretto255 one-way map (`from_uniform_bytes`).
        fn hash_to_group(msg: &[&[u8]], dst: &[&[u8]]) -> Result<RistrettoPoint> {
            let mut uniform = [0u8; 64];
            expand_message_xmd::<Sha512>(msg, dst, &mut uniform)?;
            Ok(RistrettoPoint::from_uniform_bytes(&uniform))
        }
        /// RFC 9497 §4.1: 64 uniform bytes reduced modulo the order, little-endian.
        fn hash_to_scalar(msg: &[&[u8]], dst: &[&[u8]]) -> Result<Scalar> {
            let mut uniform = [0u8; 64];
            expand_message_xmd::<Sha512>(msg, dst, &mut uniform)?;
            let s = Scalar::from_bytes_mod_order_wide(&uniform);
            uniform.zeroize();
            Ok(s)
        }
        fn random_scalar(rng: &mut impl CryptoRngCore) -> Scalar {
            loop {
                let s = Scalar::random(rng);
                if s != Scalar::ZERO {
                    return s;
                }
            }
        }
        fn scalar_zero() -> Scalar {
            Scalar::ZERO
        }
        fn scalar_is_zero(s: &Scalar) -> bool {
            *s == Scalar::ZERO
        }
        fn scalar_invert(s: &Scalar) -> Scalar {
            s.invert()
        }
        fn scalar_mul(a: &Scalar, b: &Scalar) -> Scalar {
            a * b
        }
        fn scalar_add(a: &Scalar, b: &Scalar) -> Scalar {
            a + b
        }
        fn scalar_sub(a: &Scalar, b: &Scalar) -> Scalar {
            a - b
        }
        fn mul(e: &RistrettoPoint, s: &Scalar) -> RistrettoPoint {
            e * s
        }
        fn mul_base(s: &Scalar) -> RistrettoPoint {
            s * RISTRETTO_BASEPOINT_TABLE
        }
        fn add(a: &RistrettoPoint, b: &RistrettoPoint) -> RistrettoPoint {
            a + b
        }
        fn vartime_lincomb(scalars: &[Scalar], elements: &[RistrettoPoint]) -> RistrettoPoint {
            RistrettoPoint::vartime_multiscalar_mul(scalars, elements)
        }
        fn vartime_double_base(a: &Scalar, big_a: &RistrettoPoint, b: &Scalar) -> RistrettoPoint {
            RistrettoPoint::vartime_double_scalar_mul_basepoint(a, big_a, b)
        }
        fn element_bytes(e: &RistrettoPoint) -> [u8; 32] {
            e.compress().to_bytes()
        }
        fn decode_element(bytes: &[u8]) -> Result<RistrettoPoint> {
            let c = CompressedRistretto::from_slice(bytes).map_err(|_| Error::InvalidElement {
                group: "ristretto255",
                why: "encoding must be exactly 32 bytes",
            })?;
            let p = c.decompress().ok_or(Error::InvalidElement {
                group: "ristretto255",
                why: "not a canonical ristretto255 encoding",
            })?;
            if p.is_identity() {
                return Err(Error::InvalidElement {
                    group: "ristretto255",
                    why: "the identity element is not allowed",
                });
            }
            Ok(p)
        }
        fn encode_scalar(s: &Scalar, out: &mut Vec<u8>) {
            out.extend_from_slice(s.as_bytes());
        }
        fn decode_scalar(bytes: &[u8]) -> Result<Scalar> {
            let arr: [u8; 32] = bytes.try_into().map_err(|_| Error::InvalidScalar {
                group: "ristretto255",
                why: "encoding must be exactly 32 bytes",
            })?;
            Option::from(Scalar::from_canonical_bytes(arr)).ok_or(Error::InvalidScalar {
                group: "ristretto255",
                why: "not reduced modulo the group order",
            })
        }
    }
}

// ---------------------------------------------------------------------------
// P-256

/// NIST P-256 over the `p256` crate: the curve of the PrivateDrop paper, kept for
/// faithful reproduction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct P256;

mod nistp256 {
    use super::*;
    use p256::elliptic_curve::Field;
    use p256::elliptic_curve::PrimeField;
    use p256::elliptic_curve::group::{Group, GroupEncoding};
    use p256::elliptic_curve::hash2curve::{ExpandMsgXmd, GroupDigest};
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    use p256::{AffinePoint, FieldBytes, NistP256, ProjectivePoint, Scalar};

    impl PrimeGroup for P256 {
        type Element = ProjectivePoint;
        type Scalar = Scalar;
        type ElementBytes = [u8; 33];
        type Hash = Sha256;

        const ID: GroupId = GroupId::P256;
        const SUITE_ID: &'static str = "P256-SHA256";
        const ELEMENT_LEN: usize = 33;
        const SCALAR_LEN: usize = 32;
        const HASH_LEN: usize = 32;

        fn generator() -> ProjectivePoint {
            ProjectivePoint::GENERATOR
        }
        fn identity() -> ProjectivePoint {
            ProjectivePoint::IDENTITY
        }
        fn is_identity(e: &ProjectivePoint) -> bool {
            bool::from(e.is_identity())
        }
        /// RFC 9380 `P256_XMD:SHA-256_SSWU_RO_`.
        fn hash_to_group(msg: &[&[u8]], dst: &[&[u8]]) -> Result<ProjectivePoint> {
            NistP256::hash_from_bytes::<ExpandMsgXmd<Sha256>>(msg, dst)
                .map_err(|_| Error::InvalidParameter("P-256 hash_to_curve rejected the DST"))
        }
        /// RFC 9497 §4.3: `hash_to_field` with `expand_message_xmd`/SHA-256, L = 48.
        fn hash_to_scalar(msg: &[&[u8]], dst: &[&[u8]]) -> Result<Scalar> {
            NistP256::hash_to_scalar::<ExpandMsgXmd<Sha256>>(msg, dst)
                .map_err(|_| Error::InvalidParameter("P-256 hash_to_scalar rejected the DST"))
        }
        fn random_scalar(rng: &mut impl CryptoRngCore) -> Scalar {
            loop {
                let s = Scalar::random(&mut *rng);
                if !bool::from(s.is_zero()) {
                    return s;
                }
            }
        }
        fn scalar_zero() -> Scalar {
            Scalar::ZERO
        }
        fn scalar_is_zero(s: &Scalar) -> bool {
            bool::from(s.is_zero())
        }
        fn scalar_invert(s: &Scalar) -> Scalar {
            Option::from(s.invert()).unwrap_or(Scalar::ZERO)
        }
        fn scalar_mul(a: &Scalar, b: &Scalar) -> Scalar {
            a * b
        }
        fn scalar_add(a: &Scalar, b: &Scalar) -> Scalar {
            a + b
        }
        fn scalar_sub(a: &Scalar, b: &Scalar) -> Scalar {
            a - b
        }
        fn mul(e: &ProjectivePoint, s: &Scalar) -> ProjectivePoint {
            e * s
        }
        fn mul_base(s: &Scalar) -> ProjectivePoint {
            ProjectivePoint::GENERATOR * s
        }
        fn add(a: &ProjectivePoint, b: &ProjectivePoint) -> ProjectivePoint {
            a + b
        }
        fn vartime_lincomb(scalars: &[Scalar], elements: &[ProjectivePoint]) -> ProjectivePoint {
            scalars
                .iter()
                .zip(elements)
                .fold(ProjectivePoint::IDENTITY, |acc, (s, e)| acc + e * s)
        }
        fn vartime_double_base(a: &Scalar, big_a: &ProjectivePoint, b: &Scalar) -> ProjectivePoint {
            big_a * a + ProjectivePoint::GENERATOR * b
        }
        fn element_bytes(e: &ProjectivePoint) -> [u8; 33] {
            let mut out = [0u8; 33];
            let enc = e.to_affine().to_encoded_point(true);
            let b = enc.as_bytes();
            if b.len() == 33 {
                out.copy_from_slice(b);
            }
            out
        }
        fn decode_element(bytes: &[u8]) -> Result<ProjectivePoint> {
            if bytes.len() != 33 {
                return Err(Error::InvalidElement {
                    group: "p256",
                    why: "encoding must be exactly 33 bytes (SEC1 compressed)",
                });
            }
            if bytes[0] != 0x02 && bytes[0] != 0x03 {
                return Err(Error::InvalidElement {
                    group: "p256",
                    why: "not a SEC1 compressed point (tag must be 0x02 or 0x03)",
                });
            }
            let repr = p256::CompressedPoint::clone_from_slice(bytes);
            let p: Option<AffinePoint> = AffinePoint::from_bytes(&repr).into();
            let p = p.ok_or(Error::InvalidElement {
                group: "p256",
                why: "x is not a canonical field element of a point on the curve",
            })?;
            let p = ProjectivePoint::from(p);
            if bool::from(p.is_identity()) {
                return Err(Error::InvalidElement {
                    group: "p256",
                    why: "the identity element is not allowed",
                });
            }
            Ok(p)
        }
        fn encode_scalar(s: &Scalar, out: &mut Vec<u8>) {
            out.extend_from_slice(&s.to_bytes());
        }
        fn decode_scalar(bytes: &[u8]) -> Result<Scalar> {
            if bytes.len() != 32 {
                return Err(Error::InvalidScalar {
                    group: "p256",
                    why: "encoding must be exactly 32 bytes",
                });
            }
            let fb = FieldBytes::clone_from_slice(bytes);
            Option::from(Scalar::from_repr(fb)).ok_or(Error::InvalidScalar {
                group: "p256",
                why: "not reduced modulo the group order",
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SecureRng;

    fn suite<G: PrimeGroup>() {
        let mut rng = SecureRng::from_seed([7; 32]);
        let s = G::random_scalar(&mut rng);
        let e = G::mul_base(&s);
        let bytes = G::element_bytes(&e);
        assert_eq!(bytes.as_ref().len(), G::ELEMENT_LEN);
        assert_eq!(G::decode_element(bytes.as_ref()).unwrap(), e);
        // identity refused
        let id = G::element_bytes(&G::identity());
        assert!(G::decode_element(id.as_ref()).is_err());
        // wrong lengths refused
        assert!(G::decode_element(&bytes.as_ref()[1..]).is_err());
        let mut longer = bytes.as_ref().to_vec();
        longer.push(0);
        assert!(G::decode_element(&longer).is_err());
        // scalars
        let mut sb = Vec::new();
        G::encode_scalar(&s, &mut sb);
        assert_eq!(sb.len(), G::SCALAR_LEN);
        assert!(G::decode_scalar(&sb).unwrap() == s);
        assert!(G::decode_scalar(&[0xff; 32]).is_err(), "unreduced scalar");
        // algebra
        let inv = G::scalar_invert(&s);
        assert!(G::mul(&e, &inv) == G::generator());
        let t = G::random_scalar(&mut rng);
        let lhs = G::vartime_double_base(&t, &e, &s);
        assert!(lhs == G::add(&G::mul(&e, &t), &G::mul_base(&s)));
        let lc = G::vartime_lincomb(&[s, t], &[e, G::generator()]);
        assert!(lc == G::add(&G::mul(&e, &s), &G::mul_base(&t)));
        // secrets are not printed
        let secret = SecretScalar::<G>::new(s);
        assert!(!format!("{secret:?}").contains(&hex_of(&sb)));
        assert!(SecretScalar::<G>::from_bytes(&vec![0u8; G::SCALAR_LEN]).is_err());
    }

    fn hex_of(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn ristretto_suite() {
        suite::<Ristretto255>();
    }

    #[test]
    fn p256_suite() {
        suite::<P256>();
    }

    #[test]
    fn ristretto_non_canonical_refused() {
        // 2^255 - 18 is a non-canonical field element encoding (≥ p).
        let mut b = [0xffu8; 32];
        b[0] = 0xed;
        b[31] = 0x7f;
        assert!(Ristretto255::decode_element(&b).is_err());
        // negative (odd) field element encodings are non-canonical in ristretto
        let mut one = [0u8; 32];
        one[0] = 1;
        assert!(Ristretto255::decode_element(&one).is_err());
    }

    #[test]
    fn p256_non_canonical_refused() {
        // x = p (not reduced)
        let mut b = [0u8; 33];
        b[0] = 2;
        let p = hex_to("ffffffff00000001000000000000000000000000ffffffffffffffffffffffff");
        b[1..].copy_from_slice(&p);
        assert!(P256::decode_element(&b).is_err());
        // uncompressed encodings refused
        let e = P256::mul_base(&P256::random_scalar(&mut SecureRng::from_seed([1; 32])));
        let mut u = [0u8; 33];
        u.copy_from_slice(&P256::element_bytes(&e));
        u[0] = 4;
        assert!(P256::decode_element(&u).is_err());
    }

    fn hex_to(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn group_id_parse() {
        assert_eq!("p256".parse::<GroupId>().unwrap(), GroupId::P256);
        assert_eq!("ristretto255".parse::<GroupId>().unwrap(), GroupId::Ristretto255);
        assert!("curve448".parse::<GroupId>().is_err());
        for g in [GroupId::P256, GroupId::Ristretto255] {
            assert_eq!(GroupId::from_code(g.code()), Some(g));
        }
        assert_eq!(GroupId::from_code(9), None);
    }
}
