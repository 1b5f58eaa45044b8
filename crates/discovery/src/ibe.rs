//! Boneh–Boyen identity-based encryption "BB₂" (Boneh and Boyen, EUROCRYPT 2004,
//! §5, the scheme secure under q-BDHI) over BLS12-381, made CCA-secure by the
//! Fujisaki–Okamoto transform. This is the IBE of §6.1 of Wu, Taly, Shankar and
//! Boneh: one pairing per decryption.
//!
//! # The scheme
//!
//! `g₁`, `g₂` are the standard generators of G1 and G2 (prime order `q`), `e` the
//! optimal ate pairing, `v = e(g₁, g₂)`. Ciphertexts live in G1 (48-byte points),
//! identity keys in G2.
//!
//! * **Setup.** `x, y ← Z_q*`. Master secret `(x, y)`, master public key
//!   `X = x·g₁`, `Y = y·g₁` (and the constant `v`, computed once, never sent).
//! * **Identity hash.** `h(ID) = SHA-512(u8 |DST| ‖ DST ‖ ID) mod q` with the domain separator
//!   [`IDENTITY_DST`] (a 512-bit value reduced mod `q`: bias below 2⁻²⁵⁶).
//! * **Extract.** `r ← Z_q` with `d = h(ID) + x + r·y ≠ 0`; `K = d⁻¹·g₂`. The identity
//!   key is `(ID, r, K)`. With it we keep `Q = d·g₁ = h(ID)·g₁ + X + r·Y` (public
//!   given the master public key) and the precomputed Miller-loop lines of `K`.
//! * **Encrypt** (FO transform). `σ ← {0,1}²⁵⁶`; `s = H(σ, ID, aad, M) mod q`;
//!   `C₁ = s·(h(ID)·g₁ + X)`, `C₂ = s·Y`, `c₃ = σ ⊕ KDF(v^s)`,
//!   `c₄ = AEAD_{KDF(σ)}(nonce 0, ad = C₁‖C₂‖c₃‖ID‖aad, M)`.
//! * **Decrypt.** `T = C₁ + r·C₂ = s·d·g₁`, so `e(T, K) = e(g₁, g₂)^{s·d/d} = v^s`;
//!   `σ = c₃ ⊕ KDF(e(T, K))`; `M = AEAD-open`; recompute `s = H(σ, ID, aad, M)` and
//!   accept only if `T = s·Q` and `C₂ = s·Y` — that is, `(C₁, C₂)` is exactly what
//!   encryption with randomness `s` produces (`C₁ = T − r·C₂ = s·(h(ID)·g₁ + X)`).
//!   Every failure gives the one error [`Error::Decrypt`].
//!
//! The ciphertext overhead is `48 + 48 + 32 + 16 = 144` bytes ([`CIPHERTEXT_OVERHEAD`]):
//! two compressed G1 points, the masked `σ` and the Poly1305 tag. The paper's bn256
//! implementation (with NaCl's `secretbox`) reports 208 bytes (§6.3); the saving here
//! comes from compressed points and from sending no nonce: the AEAD key is used for one
//! message only, so its nonce is the fixed zero nonce.
//!
//! # Encodings
//!
//! | value | encoding | bytes |
//! |---|---|---|
//! | [`MasterPublicKey`] | `01 0301 ‖ X ‖ Y` | 99 |
//! | [`MasterSecretKey`] (secret) | `01 0302 ‖ x ‖ y` | 67 |
//! | [`IdentityKey`] (secret) | `01 0303 ‖ u32 len ‖ ID ‖ r ‖ K` | 135 + len |
//! | [`Ciphertext`] (embedded, no envelope) | `C₁ ‖ C₂ ‖ c₃ ‖ c₄` | 144 + len(M) |
//!
//! Points are compressed (ZCash format, 48 bytes in G1, 96 in G2) and must be
//! canonical, in the prime-order subgroup and not the identity; scalars are 32 bytes
//! big-endian and fully reduced. Decoders consume their input exactly.
//!
//! ```
//! use tacit_crypto::rng::SecureRng;
//! use tacit_discovery::ibe::MasterSecretKey;
//!
//! let mut rng = SecureRng::from_seed([1; 32]);
//! let msk = MasterSecretKey::generate(&mut rng);
//! let mpk = msk.public();
//! let ct = mpk.encrypt(b"alice", b"context", b"hello", &mut rng).unwrap();
//! let alice = msk.extract(b"alice", &mut rng).unwrap();
//! assert_eq!(alice.decrypt(&ct, b"context").unwrap(), b"hello");
//! let bob = msk.extract(b"bob", &mut rng).unwrap();
//! assert!(bob.decrypt(&ct, b"context").is_err());
//! ```

use blstrs::{Bls12, Compress, G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, Scalar};
use ff::Field;
use group::{Curve, Group, prime::PrimeCurveAffine};
use pairing::{MillerLoopResult as _, MultiMillerLoop};
use rand_core::CryptoRngCore;
use sha2::{Digest, Sha512};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod lines;
use tacit_crypto::aead::{AeadKey, NONCE_LEN, TAG_LEN};
use tacit_crypto::kdf::hkdf_sha256;
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::{DefaultIsZeroes, Zeroize, Zeroizing};

/// Bytes of a compressed G1 point.
pub const G1_LEN: usize = 48;
/// Bytes of a compressed G2 point.
pub const G2_LEN: usize = 96;
/// Bytes of an encoded scalar (big-endian, `< q`).
pub const SCALAR_LEN: usize = 32;
/// Bytes of the FO seed `σ` and of its mask `c₃`.
pub const SIGMA_LEN: usize = 32;
/// Ciphertext expansion: `|C₁| + |C₂| + |c₃| + tag = 48 + 48 + 32 + 16 = 144` bytes.
pub const CIPHERTEXT_OVERHEAD: usize = 2 * G1_LEN + SIGMA_LEN + TAG_LEN;
/// Longest identity, in bytes (identities are 1 to 512 bytes; a prefix identity of a
/// 255-byte name takes at most 282).
pub const MAX_IDENTITY_LEN: usize = 512;
/// Longest plaintext [`MasterPublicKey::encrypt`] accepts and [`Ciphertext::from_bytes`]
/// decodes (64 KiB: a discovery payload is a certificate chain and a few keys).
pub const MAX_PLAINTEXT_LEN: usize = 64 * 1024;

/// Wire tag of an encoded [`MasterPublicKey`].
pub const TAG_MASTER_PUBLIC_KEY: u16 = 0x0301;
/// Wire tag of an encoded [`MasterSecretKey`].
pub const TAG_MASTER_SECRET_KEY: u16 = 0x0302;
/// Wire tag of an encoded [`IdentityKey`].
pub const TAG_IDENTITY_KEY: u16 = 0x0303;

/// Domain separator of the identity hash `h(ID)`.
pub const IDENTITY_DST: &[u8] = b"tacit-discovery-v1 BB2 identity";
/// Domain separator of the FO hash `s = H(σ, ID, aad, M)`.
pub const FO_DST: &[u8] = b"tacit-discovery-v1 BB2 FO randomness";
/// HKDF salt of the two key derivations (`KDF(v^s)` and `KDF(σ)`).
pub const KDF_SALT: &[u8] = b"tacit-discovery-v1 BB2 KDF";

const MASK_INFO: &[u8] = b"mask of sigma";
const AEAD_INFO: &[u8] = b"AEAD key";
/// The AEAD key `KDF(σ)` encrypts exactly one message, so a fixed nonce is safe.
const ZERO_NONCE: [u8; NONCE_LEN] = [0; NONCE_LEN];
/// Bytes of a torus-compressed element of GT (six Fp elements).
const GT_LEN: usize = 288;

/// What can go wrong in the IBE and in prefix encryption ([`crate::prefix`]). No
/// variant carries secret data; [`Error::Decrypt`] does not say which check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Bytes that do not decode (truncated, extended, wrong tag, invalid point or
    /// scalar, …).
    #[error("malformed encoding: {0}")]
    Wire(#[from] tacit_wire::Error),
    /// An identity is empty or too long.
    #[error("an identity has 1 to {MAX_IDENTITY_LEN} bytes; this one has {0}")]
    IdentityLength(usize),
    /// A plaintext is longer than [`MAX_PLAINTEXT_LEN`].
    #[error("the plaintext is {len} bytes; the limit is {max}")]
    PlaintextTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Decryption failed: wrong key, wrong associated data, or a modified or
    /// malformed ciphertext (deliberately one error for all of them).
    #[error("ciphertext does not decrypt under this identity key")]
    Decrypt,
    /// A stored identity key does not belong to the master public key it was loaded
    /// with (`e(Q, K) ≠ e(g₁, g₂)`).
    #[error("the identity key for {identity} was not issued under this master public key")]
    KeyMismatch {
        /// The identity, printed lossily as UTF-8.
        identity: String,
    },
    /// A hierarchical name or policy is malformed ([`crate::prefix::Prefix`]).
    #[error("invalid name: {0}")]
    InvalidName(String),
    /// A prefix key was asked to decrypt a ciphertext whose policy its name does not
    /// satisfy.
    #[error("this identity does not satisfy the policy {policy}/*")]
    PolicyNotSatisfied {
        /// The ciphertext's policy prefix, e.g. `a/b`.
        policy: String,
    },
}

/// Result alias of this module.
pub type Result<T> = core::result::Result<T, Error>;

/// A `Copy` value that is overwritten with its default (zero, the identity) by
/// [`Zeroize`]: how the secret scalars and the key `K` are wiped on drop.
#[derive(Clone, Copy, Default)]
#[repr(transparent)]
struct Wipe<T: Copy + Default>(T);

impl<T: Copy + Default> DefaultIsZeroes for Wipe<T> {}

/// A secret local: wiped when it goes out of scope.
fn secret<T: Copy + Default>(value: T) -> Zeroizing<Wipe<T>> {
    Zeroizing::new(Wipe(value))
}

// ---------------------------------------------------------------------------------
// Hashing and key derivation.
// ---------------------------------------------------------------------------------

/// `Σ limbᵢ·2^{64·(7−i)} mod q` for the eight big-endian 64-bit limbs of a SHA-512
/// digest (Horner's rule in the scalar field: an exact wide reduction).
fn scalar_from_wide(digest: &[u8; 64]) -> Scalar {
    let two_64 = Scalar::from(u64::MAX) + Scalar::ONE;
    let mut acc = Scalar::ZERO;
    for chunk in digest.chunks_exact(8) {
        let mut limb = [0u8; 8];
        limb.copy_from_slice(chunk);
        acc = acc * two_64 + Scalar::from(u64::from_be_bytes(limb));
    }
    acc
}

/// A SHA-512 state started with the length-prefixed domain separator `dst`.
fn tagged_sha512(dst: &[u8]) -> Sha512 {
    let mut h = Sha512::new();
    h.update([dst.len() as u8]);
    h.update(dst);
    h
}

/// `h(ID) = SHA-512(u8 |DST| ‖ DST ‖ ID) mod q`, DST = [`IDENTITY_DST`].
pub fn identity_hash(identity: &[u8]) -> Scalar {
    let mut h = tagged_sha512(IDENTITY_DST);
    h.update(identity);
    scalar_from_wide(&h.finalize().into())
}

/// `s = H(σ, ID, aad, M) = SHA-512(u8 |DST| ‖ DST ‖ σ ‖ u32 |ID| ‖ ID ‖ u64 |aad| ‖ aad ‖ M)
/// mod q`, DST = [`FO_DST`]: the FO transform's derandomised encryption exponent.
fn fo_scalar(sigma: &[u8; SIGMA_LEN], identity: &[u8], aad: &[u8], msg: &[u8]) -> Scalar {
    let mut h = tagged_sha512(FO_DST);
    h.update(sigma);
    h.update((identity.len() as u32).to_be_bytes());
    h.update(identity);
    h.update((aad.len() as u64).to_be_bytes());
    h.update(aad);
    h.update(msg);
    let mut digest: [u8; 64] = h.finalize().into();
    let s = scalar_from_wide(&digest);
    digest.zeroize();
    s
}

fn kdf32(ikm: &[u8], info: &[u8]) -> Zeroizing<[u8; 32]> {
    let okm = hkdf_sha256(KDF_SALT, ikm, info, 32).expect("32 bytes is within HKDF-SHA256's 8160-byte output limit");
    let mut out = Zeroizing::new([0u8; 32]);
    out.copy_from_slice(&okm);
    out
}

/// Canonical bytes of an element of GT: its torus compression (Naehrig–Barreto–
/// Schwabe, six Fp elements, 288 bytes), which is injective on GT ∖ {1}. The
/// identity has no compression; it is given the bytes `FF…FF`, which no compression
/// produces (`FF…FF` is not a reduced field element).
fn gt_bytes(w: &Gt) -> Zeroizing<Vec<u8>> {
    let mut out = Zeroizing::new(Vec::with_capacity(GT_LEN));
    if bool::from(w.is_identity()) {
        out.resize(GT_LEN, 0xff);
    } else {
        w.write_compressed(&mut *out)
            .expect("writing to a Vec cannot fail and non-identity GT elements compress");
    }
    out
}

/// `KDF(w)` with `w = v^s`: the 32-byte mask of `σ`.
fn sigma_mask(w: &Gt) -> Zeroizing<[u8; 32]> {
    kdf32(&gt_bytes(w), MASK_INFO)
}

/// `KDF(σ)`: the single-use AEAD key.
fn aead_key(sigma: &[u8; SIGMA_LEN]) -> AeadKey {
    AeadKey::new(*kdf32(sigma, AEAD_INFO))
}

/// The AEAD's associated data: `C₁ ‖ C₂ ‖ c₃ ‖ u32 |ID| ‖ ID ‖ aad`.
fn associated_data(c1: &G1Affine, c2: &G1Affine, c3: &[u8; SIGMA_LEN], identity: &[u8], aad: &[u8]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(2 * G1_LEN + SIGMA_LEN + 4 + identity.len() + aad.len());
    ad.extend_from_slice(&c1.to_compressed());
    ad.extend_from_slice(&c2.to_compressed());
    ad.extend_from_slice(c3);
    ad.extend_from_slice(&(identity.len() as u32).to_be_bytes());
    ad.extend_from_slice(identity);
    ad.extend_from_slice(aad);
    ad
}

fn random_nonzero_scalar(rng: &mut impl CryptoRngCore) -> Scalar {
    loop {
        let s = Scalar::random(&mut *rng);
        if !bool::from(s.is_zero()) {
            return s;
        }
    }
}

fn check_identity(identity: &[u8]) -> Result<()> {
    if identity.is_empty() || identity.len() > MAX_IDENTITY_LEN {
        return Err(Error::IdentityLength(identity.len()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------
// Pairings.
// ---------------------------------------------------------------------------------

/// The Miller-loop lines of `g₂`, computed once.
fn g2_prepared() -> &'static G2Prepared {
    static LINES: OnceLock<G2Prepared> = OnceLock::new();
    LINES.get_or_init(|| G2Prepared::from(G2Affine::generator()))
}

/// `v = e(g₁, g₂)`, computed once.
fn v() -> &'static Gt {
    static V: OnceLock<Gt> = OnceLock::new();
    V.get_or_init(|| pair(&G1Affine::generator(), g2_prepared()))
}

/// `e(P, K)` from the precomputed lines of `K`: one Miller loop and one final
/// exponentiation.
fn pair(p: &G1Affine, k: &G2Prepared) -> Gt {
    Bls12::multi_miller_loop(&[(p, k)]).final_exponentiation()
}

// ---------------------------------------------------------------------------------
// Point and scalar encodings.
// ---------------------------------------------------------------------------------

/// Defines a reader of compressed points of one group: canonical, on the curve, in
/// the prime-order subgroup and not the identity.
macro_rules! point_reader {
    ($name:ident, $affine:ty, $len:expr, $group:literal) => {
        #[doc = concat!("Reads a compressed ", $group, " point: canonical, on the curve, in the prime-order subgroup and not the identity.")]
        fn $name(r: &mut Reader<'_>, what: &'static str) -> tacit_wire::Result<$affine> {
            let bytes: [u8; $len] = r.array(what)?;
            let p = Option::<$affine>::from(<$affine>::from_compressed_unchecked(&bytes)).ok_or_else(|| {
                tacit_wire::Error::invalid(
                    what,
                    concat!("not a canonical compressed point on BLS12-381 ", $group, "'s curve"),
                )
            })?;
            if bool::from(p.is_identity()) {
                return Err(tacit_wire::Error::invalid(
                    what,
                    "the identity element (point at infinity) is not allowed",
                ));
            }
            if !bool::from(p.is_on_curve() & p.is_torsion_free()) {
                return Err(tacit_wire::Error::invalid(
                    what,
                    concat!("point is outside the prime-order subgroup ", $group),
                ));
            }
            if p.to_compressed() != bytes {
                return Err(tacit_wire::Error::invalid(what, "non-canonical point encoding"));
            }
            Ok(p)
        }
    };
}

point_reader!(read_g1, G1Affine, G1_LEN, "G1");
point_reader!(read_g2, G2Affine, G2_LEN, "G2");

/// Reads a 32-byte big-endian scalar `< q`.
fn read_scalar(r: &mut Reader<'_>, what: &'static str) -> tacit_wire::Result<Scalar> {
    let mut bytes: [u8; SCALAR_LEN] = r.array(what)?;
    let s = Option::<Scalar>::from(Scalar::from_bytes_be(&bytes))
        .ok_or_else(|| tacit_wire::Error::invalid(what, "scalar is not reduced modulo the group order"));
    bytes.zeroize();
    s
}

// ---------------------------------------------------------------------------------
// Keys.
// ---------------------------------------------------------------------------------

/// The master public key `(X = x·g₁, Y = y·g₁)`; `v = e(g₁, g₂)` is a constant of
/// the curve and is not part of it.
#[derive(Clone, PartialEq, Eq)]
pub struct MasterPublicKey {
    x: G1Affine,
    y: G1Affine,
}

impl MasterPublicKey {
    /// `X = x·g₁`.
    pub fn x(&self) -> &G1Affine {
        &self.x
    }

    /// `Y = y·g₁`.
    pub fn y(&self) -> &G1Affine {
        &self.y
    }

    /// Encrypts `plaintext` to `identity`, binding `aad` (BB₂ with the FO transform):
    ///
    /// `σ ← {0,1}²⁵⁶`, `s = H(σ, ID, aad, M)`, `C₁ = s·(h(ID)·g₁ + X)`, `C₂ = s·Y`,
    /// `c₃ = σ ⊕ KDF(v^s)`, `c₄ = AEAD_{KDF(σ)}(0, C₁‖C₂‖c₃‖ID‖aad, M)`.
    ///
    /// `v^s` is computed as `e(s·g₁, g₂)` with the precomputed lines of `g₂`: blst's
    /// scalar multiplication and Miller loop run in constant time, while blstrs'
    /// exponentiation in GT is a variable-time square-and-multiply (and no faster).
    ///
    /// # Errors
    /// [`Error::IdentityLength`], [`Error::PlaintextTooLong`].
    pub fn encrypt(
        &self,
        identity: &[u8],
        aad: &[u8],
        plaintext: &[u8],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Ciphertext> {
        check_identity(identity)?;
        if plaintext.len() > MAX_PLAINTEXT_LEN {
            return Err(Error::PlaintextTooLong {
                len: plaintext.len(),
                max: MAX_PLAINTEXT_LEN,
            });
        }
        loop {
            let mut sigma = Zeroizing::new([0u8; SIGMA_LEN]);
            rng.fill_bytes(&mut *sigma);
            let s = secret(fo_scalar(&sigma, identity, aad, plaintext));
            if bool::from(s.0.is_zero()) {
                // Probability 2⁻²⁵⁴; C₁ = C₂ = 0 would not decode. Draw another σ.
                continue;
            }
            return Ok(self.encrypt_with(identity, aad, plaintext, &sigma, &s.0));
        }
    }

    /// The deterministic part of [`MasterPublicKey::encrypt`], given `σ` and `s`
    /// (which an honest encryptor derives from `σ`; tests pass other values).
    fn encrypt_with(
        &self,
        identity: &[u8],
        aad: &[u8],
        plaintext: &[u8],
        sigma: &[u8; SIGMA_LEN],
        s: &Scalar,
    ) -> Ciphertext {
        // h(ID)·g₁ + X: public.
        let p_id = G1Projective::generator() * identity_hash(identity) + G1Projective::from(self.x);
        // (C₁, C₂, s·g₁); s·g₁ gives v^s, so it is wiped like a secret.
        let mut points = secret([G1Affine::identity(); 3]);
        G1Projective::batch_normalize(
            &[p_id * s, G1Projective::from(self.y) * s, G1Projective::generator() * s],
            &mut points.0,
        );
        let (c1, c2) = (points.0[0], points.0[1]);
        // v^s = e(g₁, g₂)^s = e(s·g₁, g₂).
        let v_s = secret(pair(&points.0[2], g2_prepared()));
        let mask = sigma_mask(&v_s.0);
        let mut c3 = [0u8; SIGMA_LEN];
        for (c, (a, b)) in c3.iter_mut().zip(sigma.iter().zip(mask.iter())) {
            *c = a ^ b;
        }
        let ad = associated_data(&c1, &c2, &c3, identity, aad);
        let c4 = aead_key(sigma).seal(&ZERO_NONCE, &ad, plaintext);
        Ciphertext { c1, c2, c3, c4 }
    }
}

impl core::fmt::Debug for MasterPublicKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "MasterPublicKey(X = {}…, Y = {}…)",
            hex8(&self.x.to_compressed()),
            hex8(&self.y.to_compressed())
        )
    }
}

fn hex8(bytes: &[u8]) -> String {
    bytes.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Encode for MasterPublicKey {
    /// `01 0301 ‖ X (48) ‖ Y (48)`.
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_MASTER_PUBLIC_KEY);
        w.put_fixed(&self.x.to_compressed());
        w.put_fixed(&self.y.to_compressed());
    }
}

impl Decode for MasterPublicKey {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_MASTER_PUBLIC_KEY, "BB2 master public key")?;
        let x = read_g1(r, "master public key X")?;
        let y = read_g1(r, "master public key Y")?;
        Ok(MasterPublicKey { x, y })
    }
}

/// The master secret key `(x, y)` of the key authority, with its public key. Zeroized
/// on drop, never printed.
pub struct MasterSecretKey {
    x: Wipe<Scalar>,
    y: Wipe<Scalar>,
    public: MasterPublicKey,
}

impl MasterSecretKey {
    /// Setup: `x, y ← Z_q*`, `X = x·g₁`, `Y = y·g₁`.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        let x = secret(random_nonzero_scalar(rng));
        let y = secret(random_nonzero_scalar(rng));
        Self::from_scalars(x.0, y.0)
    }

    fn from_scalars(x: Scalar, y: Scalar) -> Self {
        let mut points = [G1Affine::identity(); 2];
        G1Projective::batch_normalize(
            &[G1Projective::generator() * x, G1Projective::generator() * y],
            &mut points,
        );
        MasterSecretKey {
            x: Wipe(x),
            y: Wipe(y),
            public: MasterPublicKey {
                x: points[0],
                y: points[1],
            },
        }
    }

    /// The master public key.
    pub fn public(&self) -> &MasterPublicKey {
        &self.public
    }

    /// Extract: `r ← Z_q` with `d = h(ID) + x + r·y ≠ 0`, `K = d⁻¹·g₂`.
    ///
    /// # Errors
    /// [`Error::IdentityLength`].
    pub fn extract(&self, identity: &[u8], rng: &mut impl CryptoRngCore) -> Result<IdentityKey> {
        check_identity(identity)?;
        let h = identity_hash(identity);
        loop {
            let r = secret(Scalar::random(&mut *rng));
            let d = secret(h + self.x.0 + r.0 * self.y.0);
            let Some(d_inv) = Option::<Scalar>::from(d.0.invert()).map(secret) else {
                continue; // d = 0: probability 1/q.
            };
            let k = secret((G2Projective::generator() * d_inv.0).to_affine());
            return Ok(IdentityKey::assemble(&self.public, identity.to_vec(), r.0, k.0));
        }
    }

    /// `01 0302 ‖ x (32, big-endian) ‖ y (32)`: 67 bytes, secret.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::with_capacity(3 + 2 * SCALAR_LEN));
        out.extend_from_slice(&[tacit_wire::WIRE_VERSION]);
        out.extend_from_slice(&TAG_MASTER_SECRET_KEY.to_be_bytes());
        out.extend_from_slice(&self.x.0.to_bytes_be());
        out.extend_from_slice(&self.y.0.to_bytes_be());
        out
    }

    /// Decodes [`MasterSecretKey::to_bytes`]: both scalars reduced and non-zero, no
    /// trailing bytes.
    ///
    /// # Errors
    /// [`Error::Wire`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(TAG_MASTER_SECRET_KEY, "BB2 master secret key")?;
        let x = secret(read_scalar(&mut r, "master secret x")?);
        let y = secret(read_scalar(&mut r, "master secret y")?);
        r.finish()?;
        if bool::from(x.0.is_zero() | y.0.is_zero()) {
            return Err(tacit_wire::Error::invalid("master secret key", "a master secret scalar is zero").into());
        }
        Ok(Self::from_scalars(x.0, y.0))
    }
}

impl Drop for MasterSecretKey {
    fn drop(&mut self) {
        self.x.zeroize();
        self.y.zeroize();
    }
}

impl core::fmt::Debug for MasterSecretKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("MasterSecretKey(<redacted>)")
    }
}

/// The secret key `(ID, r, K = (h(ID) + x + r·y)⁻¹·g₂)` of one identity, with what
/// decryption precomputes from it and the master public key: the Miller-loop lines
/// of `K` and `Q = h(ID)·g₁ + X + r·Y`.
///
/// `r`, `K` and the 68 precomputed line coefficients of `K` (≈ 19.6 KB, held in a
/// buffer of our own rather than blstrs' `G2Prepared`, which frees its copy without
/// wiping it; see `ibe/lines.rs`) are zeroized on drop and never printed.
pub struct IdentityKey {
    identity: Vec<u8>,
    r: Wipe<Scalar>,
    k: Wipe<G2Affine>,
    k_lines: lines::SecretLines,
    q: G1Affine,
    y: G1Affine,
}

impl IdentityKey {
    /// Builds the key and its precomputation: `Q = h(ID)·g₁ + X + r·Y`.
    fn assemble(mpk: &MasterPublicKey, identity: Vec<u8>, r: Scalar, k: G2Affine) -> Self {
        let q = G1Projective::generator() * identity_hash(&identity)
            + G1Projective::from(mpk.x)
            + G1Projective::from(mpk.y) * r;
        IdentityKey {
            identity,
            r: Wipe(r),
            k: Wipe(k),
            k_lines: lines::SecretLines::new(&k),
            q: q.to_affine(),
            y: mpk.y,
        }
    }

    /// The identity this key decrypts for.
    pub fn identity(&self) -> &[u8] {
        &self.identity
    }

    /// Decrypts a ciphertext made for this key's identity with the same `aad`:
    ///
    /// `T = C₁ + r·C₂`, `σ = c₃ ⊕ KDF(e(T, K))`, `M = AEAD-open_{KDF(σ)}(c₄)`,
    /// `s = H(σ, ID, aad, M)`; accept iff the AEAD opened, `T = s·Q` and `C₂ = s·Y`.
    ///
    /// All three checks are always computed (an AEAD failure hashes an empty message
    /// instead), and any failure is the one error [`Error::Decrypt`].
    ///
    /// # Errors
    /// [`Error::Decrypt`].
    pub fn decrypt(&self, ct: &Ciphertext, aad: &[u8]) -> Result<Vec<u8>> {
        let c2 = G1Projective::from(ct.c2);
        // T = C₁ + r·C₂ = s·(h + x + r·y)·g₁ for an honest ciphertext.
        let t = G1Projective::from(ct.c1) + c2 * self.r.0;
        // e(T, K) = e(g₁, g₂)^{s·d·d⁻¹} = v^s.
        let w = secret(self.k_lines.pair(&t.to_affine()));
        let mask = sigma_mask(&w.0);
        let mut sigma = Zeroizing::new([0u8; SIGMA_LEN]);
        for (o, (a, b)) in sigma.iter_mut().zip(ct.c3.iter().zip(mask.iter())) {
            *o = a ^ b;
        }
        let ad = associated_data(&ct.c1, &ct.c2, &ct.c3, &self.identity, aad);
        let opened = aead_key(&sigma).open(&ZERO_NONCE, &ad, &ct.c4);
        let aead_ok = opened.is_ok();
        let mut msg = Zeroizing::new(opened.unwrap_or_default());
        let s = secret(fo_scalar(&sigma, &self.identity, aad, &msg));
        // FO: (C₁, C₂) must be the encryption of M under randomness s.
        let t_ok = t == G1Projective::from(self.q) * s.0;
        let c2_ok = c2 == G1Projective::from(self.y) * s.0;
        if aead_ok & t_ok & c2_ok {
            Ok(core::mem::take(&mut *msg))
        } else {
            Err(Error::Decrypt)
        }
    }

    /// Whether `e(Q, K) = v`, i.e. the key was extracted under the master public key it
    /// was assembled with.
    fn is_consistent(&self) -> bool {
        self.k_lines.pair(&self.q) == *v()
    }

    /// `r ‖ K` (128 bytes, secret): the body of a key whose identity is implied.
    pub(crate) fn secret_parts(&self) -> Zeroizing<[u8; SCALAR_LEN + G2_LEN]> {
        let mut out = Zeroizing::new([0u8; SCALAR_LEN + G2_LEN]);
        out[..SCALAR_LEN].copy_from_slice(&self.r.0.to_bytes_be());
        out[SCALAR_LEN..].copy_from_slice(&self.k.0.to_compressed());
        out
    }

    /// Reads `r ‖ K` for `identity`, rebuilds the precomputation from `mpk` and checks
    /// `e(Q, K) = e(g₁, g₂)`.
    pub(crate) fn read_secret_parts(mpk: &MasterPublicKey, identity: Vec<u8>, r: &mut Reader<'_>) -> Result<Self> {
        check_identity(&identity)?;
        let rr = secret(read_scalar(r, "identity key r")?);
        let k = secret(read_g2(r, "identity key K")?);
        let key = IdentityKey::assemble(mpk, identity, rr.0, k.0);
        if !key.is_consistent() {
            return Err(Error::KeyMismatch {
                identity: String::from_utf8_lossy(&key.identity).into_owned(),
            });
        }
        Ok(key)
    }

    /// `01 0303 ‖ u32 len ‖ ID ‖ r (32, big-endian) ‖ K (96)`: 135 + len bytes, secret.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut w = Writer::with_capacity(3 + 4 + self.identity.len() + SCALAR_LEN + G2_LEN);
        w.put_envelope(TAG_IDENTITY_KEY);
        w.put_var_bytes(&self.identity);
        w.put_fixed(&*self.secret_parts());
        Zeroizing::new(w.into_bytes())
    }

    /// Decodes [`IdentityKey::to_bytes`] for use with `mpk`: the identity is 1 to
    /// [`MAX_IDENTITY_LEN`] bytes, `r` is reduced, `K` is a valid point of G2, and
    /// `e(Q, K) = e(g₁, g₂)` (one pairing), so a key from another authority or a
    /// corrupted key is refused here rather than failing every decryption.
    ///
    /// # Errors
    /// [`Error::Wire`], [`Error::IdentityLength`], [`Error::KeyMismatch`].
    pub fn from_bytes(mpk: &MasterPublicKey, bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(TAG_IDENTITY_KEY, "BB2 identity key")?;
        let identity = r.var_bytes("identity", MAX_IDENTITY_LEN)?.to_vec();
        check_identity(&identity)?;
        // Check the length before the pairing.
        if r.remaining() > SCALAR_LEN + G2_LEN {
            return Err(tacit_wire::Error::TrailingBytes(r.remaining() - SCALAR_LEN - G2_LEN).into());
        }
        let key = IdentityKey::read_secret_parts(mpk, identity, &mut r)?;
        r.finish()?;
        Ok(key)
    }
}

impl Drop for IdentityKey {
    fn drop(&mut self) {
        self.r.zeroize();
        self.k.zeroize();
    }
}

impl core::fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "IdentityKey({:?}, <redacted>)",
            String::from_utf8_lossy(&self.identity)
        )
    }
}

// ---------------------------------------------------------------------------------
// Ciphertexts.
// ---------------------------------------------------------------------------------

/// A BB₂ + FO ciphertext `(C₁, C₂, c₃, c₄)`; it does not name its identity.
///
/// Encoded as `C₁ (48) ‖ C₂ (48) ‖ c₃ (32) ‖ c₄ (len(M) + 16)` with no envelope and
/// no length prefix: it is always embedded in a message that delimits it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Ciphertext {
    c1: G1Affine,
    c2: G1Affine,
    c3: [u8; SIGMA_LEN],
    c4: Vec<u8>,
}

impl Ciphertext {
    /// Bytes of the encoding: [`CIPHERTEXT_OVERHEAD`] + the plaintext length.
    pub fn len(&self) -> usize {
        2 * G1_LEN + SIGMA_LEN + self.c4.len()
    }

    /// Always false: a ciphertext has at least [`CIPHERTEXT_OVERHEAD`] bytes.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Length of the plaintext inside.
    pub fn plaintext_len(&self) -> usize {
        self.c4.len() - TAG_LEN
    }

    /// `C₁ ‖ C₂ ‖ c₃ ‖ c₄`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&self.c1.to_compressed());
        out.extend_from_slice(&self.c2.to_compressed());
        out.extend_from_slice(&self.c3);
        out.extend_from_slice(&self.c4);
        out
    }

    /// Decodes `C₁ ‖ C₂ ‖ c₃ ‖ c₄`: the whole of `bytes`, with `C₁`, `C₂` valid points
    /// of G1 other than the identity and `c₄` between 16 and 16 + [`MAX_PLAINTEXT_LEN`]
    /// bytes.
    ///
    /// # Errors
    /// [`Error::Wire`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(Self::decode_exact(bytes)?)
    }

    /// [`Ciphertext::from_bytes`] with the wire error type.
    pub(crate) fn decode_exact(bytes: &[u8]) -> tacit_wire::Result<Self> {
        if bytes.len() > CIPHERTEXT_OVERHEAD + MAX_PLAINTEXT_LEN {
            return Err(tacit_wire::Error::TooLong {
                what: "IBE ciphertext",
                len: bytes.len() as u64,
                max: (CIPHERTEXT_OVERHEAD + MAX_PLAINTEXT_LEN) as u64,
            });
        }
        if bytes.len() < CIPHERTEXT_OVERHEAD {
            return Err(tacit_wire::Error::Truncated {
                what: "IBE ciphertext",
                needed: CIPHERTEXT_OVERHEAD,
                remaining: bytes.len(),
            });
        }
        let mut r = Reader::new(bytes);
        let c1 = read_g1(&mut r, "ciphertext C1")?;
        let c2 = read_g1(&mut r, "ciphertext C2")?;
        let c3 = r.array("ciphertext c3")?;
        let c4 = r.fixed("ciphertext c4", r.remaining())?.to_vec();
        r.finish()?;
        Ok(Ciphertext { c1, c2, c3, c4 })
    }
}

// ---------------------------------------------------------------------------------
// Measurements.
// ---------------------------------------------------------------------------------

/// One line of [`microbench`]: an operation and its median time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// The operation.
    pub operation: &'static str,
    /// Median over the iterations.
    pub median: Duration,
}

/// Times the IBE operations (median of `iterations` runs each, `message_len`-byte
/// plaintexts) for `tacit bench discovery`: setup, extract, encrypt, decrypt (of a
/// decoded ciphertext), ciphertext decoding, identity-key loading (decode +
/// precomputation + the `e(Q, K) = v` check) and one pairing with precomputed lines.
#[doc(hidden)]
pub fn microbench(iterations: usize, message_len: usize) -> Vec<Timing> {
    let iterations = iterations.max(1);
    let mut rng = tacit_crypto::rng::SecureRng::from_os();
    let time = |operation: &'static str, f: &mut dyn FnMut()| {
        let mut samples: Vec<Duration> = (0..iterations)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect();
        samples.sort();
        Timing {
            operation,
            median: samples[samples.len() / 2],
        }
    };
    let msg = vec![0x5a; message_len.min(MAX_PLAINTEXT_LEN)];
    let id: &[u8] = b"\x03\x05alice\x07devices\x02tv";
    let mut rng2 = tacit_crypto::rng::SecureRng::from_seed([7; 32]);
    let msk = MasterSecretKey::generate(&mut rng2);
    let mpk = msk.public().clone();
    let key = match msk.extract(id, &mut rng2) {
        Ok(k) => k,
        Err(_) => return Vec::new(),
    };
    let key_bytes = key.to_bytes();
    let ct = match mpk.encrypt(id, b"aad", &msg, &mut rng2) {
        Ok(c) => c,
        Err(_) => return Vec::new(),
    };
    let ct_bytes = ct.to_bytes();
    let t_point = G1Projective::random(&mut rng2).to_affine();
    let mut out = Vec::new();
    out.push(time("setup", &mut || {
        std::hint::black_box(MasterSecretKey::generate(&mut rng));
    }));
    out.push(time("extract", &mut || {
        std::hint::black_box(msk.extract(id, &mut rng).ok());
    }));
    out.push(time("encrypt", &mut || {
        std::hint::black_box(mpk.encrypt(id, b"aad", &msg, &mut rng).ok());
    }));
    out.push(time("decrypt", &mut || {
        std::hint::black_box(key.decrypt(&ct, b"aad").ok());
    }));
    out.push(time("ciphertext decode", &mut || {
        std::hint::black_box(Ciphertext::from_bytes(&ct_bytes).ok());
    }));
    out.push(time("identity key load", &mut || {
        std::hint::black_box(IdentityKey::from_bytes(&mpk, &key_bytes).ok());
    }));
    out.push(time("pairing (prepared G2)", &mut || {
        std::hint::black_box(key.k_lines.pair(&t_point));
    }));
    // The same pairing through blstrs' G2Prepared (not wiped), the floor the wiped
    // lines are compared with.
    let blstrs_lines = G2Prepared::from(key.k.0);
    out.push(time("pairing (blstrs G2Prepared, unwiped)", &mut || {
        std::hint::black_box(pair(&t_point, &blstrs_lines));
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    #[test]
    fn wide_reduction_is_the_integer_mod_q() {
        let mut d = [0u8; 64];
        d[63] = 5;
        assert_eq!(scalar_from_wide(&d), Scalar::from(5u64));
        d[55] = 1; // + 2^64
        let two_64 = Scalar::from(u64::MAX) + Scalar::ONE;
        assert_eq!(scalar_from_wide(&d), Scalar::from(5u64) + two_64);
        // q itself (big-endian in the low 32 bytes) reduces to zero.
        let q_minus_1 = -Scalar::ONE;
        let mut d = [0u8; 64];
        d[32..].copy_from_slice(&q_minus_1.to_bytes_be());
        assert_eq!(scalar_from_wide(&d), q_minus_1);
        // 2^256 mod q = (2^128)^2.
        let mut d = [0u8; 64];
        d[31] = 1;
        let two_128 = two_64 * two_64;
        assert_eq!(scalar_from_wide(&d), two_128 * two_128);
    }

    #[test]
    fn v_is_the_pairing_of_the_generators_and_bb2_decrypts_to_v_s() {
        assert_eq!(*v(), blstrs::pairing(&G1Affine::generator(), &G2Affine::generator()));
        let mut rng = SecureRng::from_seed([3; 32]);
        let msk = MasterSecretKey::generate(&mut rng);
        let key = msk.extract(b"id", &mut rng).unwrap();
        assert!(key.is_consistent());
        // Q = d·g₁ with d = h + x + r·y.
        let d = identity_hash(b"id") + msk.x.0 + key.r.0 * msk.y.0;
        assert_eq!(key.q, (G1Projective::generator() * d).to_affine());
        assert_eq!(key.k.0, (G2Projective::generator() * d.invert().unwrap()).to_affine());
    }

    /// A deviating encryptor who knows σ but uses randomness s' ≠ H(σ, ID, aad, M)
    /// (consistently in C₁, C₂ and v^{s'}): the AEAD opens, and only the FO check
    /// refuses the ciphertext.
    #[test]
    fn fo_check_refuses_randomness_not_derived_from_sigma() {
        let mut rng = SecureRng::from_seed([5; 32]);
        let msk = MasterSecretKey::generate(&mut rng);
        let key = msk.extract(b"carol", &mut rng).unwrap();
        let sigma = [9u8; SIGMA_LEN];
        let honest_s = fo_scalar(&sigma, b"carol", b"ad", b"msg");
        let honest = msk.public().encrypt_with(b"carol", b"ad", b"msg", &sigma, &honest_s);
        assert_eq!(key.decrypt(&honest, b"ad").unwrap(), b"msg");
        let other_s = honest_s + Scalar::ONE;
        let deviant = msk.public().encrypt_with(b"carol", b"ad", b"msg", &sigma, &other_s);
        // σ and the AEAD are recovered fine …
        let t = G1Projective::from(deviant.c1) + G1Projective::from(deviant.c2) * key.r.0;
        let mask = sigma_mask(&key.k_lines.pair(&t.to_affine()));
        let recovered: Vec<u8> = deviant.c3.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        assert_eq!(recovered, sigma);
        // … but the ciphertext is refused.
        assert_eq!(key.decrypt(&deviant, b"ad"), Err(Error::Decrypt));
    }

    #[test]
    fn gt_identity_has_its_own_bytes() {
        let one = gt_bytes(&Gt::identity());
        assert_eq!(&one[..], &[0xff; GT_LEN][..]);
        let v_bytes = gt_bytes(v());
        assert_eq!(v_bytes.len(), GT_LEN);
        assert_ne!(&v_bytes[..], &one[..]);
    }

    #[test]
    fn secrets_are_not_printed() {
        let mut rng = SecureRng::from_seed([4; 32]);
        let msk = MasterSecretKey::generate(&mut rng);
        assert_eq!(format!("{msk:?}"), "MasterSecretKey(<redacted>)");
        let key = msk.extract(b"alice", &mut rng).unwrap();
        assert_eq!(format!("{key:?}"), "IdentityKey(\"alice\", <redacted>)");
    }
}
