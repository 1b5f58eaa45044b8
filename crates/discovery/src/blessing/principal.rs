//! Principals: a signing key and the blessings bound to it (§3: "each principal has a
//! public and private key-pair for a signature scheme and one or more
//! hierarchically-structured human-readable names bound to its public key via a
//! certificate chain").

use super::chain::{Blessing, Caveat};
use super::name::Policy;
use super::{Error, MAX_BLESSINGS, Result, SIGNATURE_DST, tags};
use core::fmt;
use rand_core::CryptoRngCore;
use tacit_crypto::sign::{SIGNATURE_LEN, SigningKey, VerifyingKey};
use tacit_wire::{Decode, Encode, Reader, Writer};
use zeroize::Zeroizing;

/// A principal: an Ed25519 signing key (zeroized on drop, never printed) and the
/// blessings that bind names to its public key (§3, §4 "Protocol execution
/// environment").
pub struct Principal {
    key: SigningKey,
    blessings: Vec<Blessing>,
}

impl Principal {
    /// A principal with a fresh key and no blessings yet (a device waiting to be
    /// blessed).
    pub fn generate(rng: &mut impl CryptoRngCore) -> Self {
        Principal {
            key: SigningKey::generate(rng),
            blessings: Vec::new(),
        }
    }

    /// The principal of a 32-byte Ed25519 seed, without blessings.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Principal {
            key: SigningKey::from_seed(seed),
            blessings: Vec::new(),
        }
    }

    /// A new root authority: a fresh key and the self-signed blessing `root_name`
    /// (a single name component), valid until `not_after`. The principal holds the
    /// blessing; a copy is returned for convenience.
    pub fn new_root(rng: &mut impl CryptoRngCore, root_name: &str, not_after: u64) -> Result<(Principal, Blessing)> {
        let mut p = Principal::generate(rng);
        let root = p.bless_self(root_name, not_after)?;
        Ok((p, root))
    }

    /// Makes this principal the root `root_name` (a single name component): a
    /// self-signed blessing of its own key, valid until `not_after`, which the
    /// principal then holds (Vanadium's `BlessSelf`, §6). Peers accept it only if they
    /// list `root_name` with this key in their [`super::TrustedRoots`].
    pub fn bless_self(&mut self, root_name: &str, not_after: u64) -> Result<Blessing> {
        let root = Blessing::new_root(&self.key, root_name, not_after)?;
        self.add_blessing(root.clone())?;
        Ok(root)
    }

    /// The public key.
    pub fn public_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The blessings held, in the order added.
    pub fn blessings(&self) -> &[Blessing] {
        &self.blessings
    }

    /// The held blessings whose name satisfies `policy` (to choose the `ID_C` to present
    /// to a server whose policy the client has learned, §4 step 3).
    pub fn blessings_matching<'a>(&'a self, policy: &'a Policy) -> impl Iterator<Item = &'a Blessing> + 'a {
        self.blessings
            .iter()
            .filter(move |b| policy.matches(&b.unverified_name()))
    }

    /// Adds a blessing someone granted this principal; it must be bound to this
    /// principal's key. `Ok(false)` if it was already held. The blessing is not
    /// validated here (the principal may not trust its root); peers validate it.
    pub fn add_blessing(&mut self, blessing: Blessing) -> Result<bool> {
        if blessing.public_key() != self.public_key() {
            return Err(Error::NotOurBlessing {
                name: blessing.unverified_name().to_string(),
            });
        }
        if self.blessings.contains(&blessing) {
            return Ok(false);
        }
        if self.blessings.len() >= MAX_BLESSINGS {
            return Err(Error::TooManyBlessings);
        }
        self.blessings.push(blessing);
        Ok(true)
    }

    /// Blesses `child_key` with the name `my_blessing/extension` (SDSI-style
    /// delegation: Vanadium's "blessings can be extended locally and delegated from one
    /// principal to another", §6). `my_blessing` must be bound to this principal's key.
    /// The new certificate is bound to the whole of `my_blessing` (see the module
    /// documentation).
    ///
    /// **`not_after` is clamped**, not refused: the child's certificate expires at
    /// `min(not_after, my_blessing.expires_at())`, since a chain is never valid longer
    /// than its shortest-lived link anyway; the returned blessing's
    /// [`Blessing::expires_at`] shows the effective time.
    ///
    /// Fails if the chain would be deeper than [`super::MAX_DEPTH`], the name longer
    /// than [`super::MAX_NAME_LEN`], the extension not a valid name component, or there
    /// are more than [`super::MAX_CAVEATS`] caveats.
    pub fn bless(
        &self,
        my_blessing: &Blessing,
        child_key: &VerifyingKey,
        extension: &str,
        not_after: u64,
        caveats: Vec<Caveat>,
    ) -> Result<Blessing> {
        if my_blessing.public_key() != self.public_key() {
            return Err(Error::NotOurBlessing {
                name: my_blessing.unverified_name().to_string(),
            });
        }
        let not_after = not_after.min(my_blessing.expires_at());
        my_blessing.extend(&self.key, extension, *child_key, not_after, caveats)
    }

    /// Signs `msg` for a peer that holds one of this principal's blessings (`SIG_P(m)`
    /// in §4 and §5): strict Ed25519 over
    /// `"tacit-discovery/principal-signature/v1\0" || msg`, checked by
    /// [`super::ValidatedBlessing::verify`]. The prefix keeps these signatures apart
    /// from certificate signatures made with the same key; handshakes add their own
    /// labels inside `msg`.
    pub fn sign(&self, msg: &[u8]) -> [u8; SIGNATURE_LEN] {
        let mut m = Vec::with_capacity(SIGNATURE_DST.len() + msg.len());
        m.extend_from_slice(SIGNATURE_DST);
        m.extend_from_slice(msg);
        self.key.sign(&m)
    }

    /// The file form (for `tacit discover id new|bless|show`); **contains the secret
    /// key** and is zeroized on drop:
    /// `envelope(0x0311) || seed (32) || u32 count (≤ 64) || count × Blessing`.
    pub fn to_file_bytes(&self) -> Zeroizing<Vec<u8>> {
        let len = 3 + 32 + 4 + self.blessings.iter().map(Blessing::encoded_len).sum::<usize>();
        // Exact capacity: the buffer never reallocates, so no copy of the seed is left
        // behind in freed memory.
        let mut w = Writer::with_capacity(len);
        w.put_envelope(tags::PRINCIPAL);
        w.put_fixed(self.key.to_seed().as_slice());
        w.put_count(self.blessings.len());
        for b in &self.blessings {
            b.encode(&mut w);
        }
        let out = Zeroizing::new(w.into_bytes());
        debug_assert_eq!(out.len(), len);
        out
    }

    /// Decodes the file form (exact length; every blessing must be bound to the key,
    /// none twice).
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::PRINCIPAL, "principal")?;
        let seed = Zeroizing::new(r.array::<32>("principal secret key")?);
        let mut p = Principal::from_seed(&seed);
        // A blessing is at least 1 + 1 + 1 + 32 + 8 + 1 + 64 bytes.
        let count = r.count("blessings of a principal", MAX_BLESSINGS, 108)?;
        for i in 0..count {
            let b = Blessing::decode(&mut r)?;
            let name = b.unverified_name();
            if !p.add_blessing(b)? {
                return Err(tacit_wire::Error::invalid(
                    "principal",
                    format!("blessing {} ({name}) appears twice", i + 1),
                )
                .into());
            }
        }
        r.finish()?;
        Ok(p)
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.blessings.iter().map(|b| b.unverified_name().to_string()).collect();
        f.debug_struct("Principal")
            .field("secret_key", &format_args!("<redacted>"))
            .field("public_key", &self.public_key())
            .field("blessings", &names)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MAX_DEPTH, TrustedRoots};
    use super::*;
    use tacit_crypto::rng::SecureRng;

    const NOW: u64 = 1_767_225_600;

    #[test]
    fn root_bless_sign_verify() {
        let mut rng = SecureRng::from_seed([1; 32]);
        let (corp, root) = Principal::new_root(&mut rng, "Corp", NOW + 100).unwrap();
        assert_eq!(corp.blessings(), core::slice::from_ref(&root));
        let mut dev = Principal::generate(&mut rng);
        let b = corp
            .bless(&root, &dev.public_key(), "Dev", NOW + 1_000_000, vec![])
            .unwrap();
        // Clamped to the parent's expiry.
        assert_eq!(b.links()[1].not_after(), NOW + 100);
        assert!(dev.add_blessing(b.clone()).unwrap());
        assert!(!dev.add_blessing(b.clone()).unwrap());
        assert!(matches!(
            dev.add_blessing(root.clone()),
            Err(Error::NotOurBlessing { .. })
        ));
        // Someone else's blessing cannot be extended.
        assert!(matches!(
            corp.bless(&b, &dev.public_key(), "X", NOW, vec![]),
            Err(Error::NotOurBlessing { .. })
        ));

        let mut roots = TrustedRoots::new();
        roots.add("Corp", corp.public_key()).unwrap();
        let v = b.validate(&roots, NOW).unwrap();
        let sig = dev.sign(b"transcript");
        v.verify(b"transcript", &sig).unwrap();
        assert!(v.verify(b"transcripT", &sig).is_err());
        // A raw signature without the prefix does not verify.
        let raw = SigningKey::from_seed(&[0; 32]).sign(b"transcript");
        assert!(v.verify(b"transcript", &raw).is_err());

        let policy = Policy::parse("Corp/Dev/*").unwrap();
        assert_eq!(dev.blessings_matching(&policy).count(), 1);
        let other = Policy::parse("Corp/Other/*").unwrap();
        assert_eq!(dev.blessings_matching(&other).count(), 0);
    }

    #[test]
    fn depth_limit() {
        let mut rng = SecureRng::from_seed([2; 32]);
        let (p, mut b) = Principal::new_root(&mut rng, "R", NOW).unwrap();
        for i in 2..=MAX_DEPTH {
            b = p.bless(&b, &p.public_key(), &format!("L{i}"), NOW, vec![]).unwrap();
        }
        assert_eq!(b.depth(), MAX_DEPTH);
        assert_eq!(
            p.bless(&b, &p.public_key(), "L9", NOW, vec![]).unwrap_err(),
            Error::ChainTooDeep { depth: 9 }
        );
    }

    #[test]
    fn file_round_trip_and_redaction() {
        let mut rng = SecureRng::from_seed([3; 32]);
        let (corp, root) = Principal::new_root(&mut rng, "Corp", NOW).unwrap();
        let bytes = corp.to_file_bytes();
        let back = Principal::from_file_bytes(&bytes).unwrap();
        assert_eq!(back.public_key(), corp.public_key());
        assert_eq!(back.blessings(), [root]);
        assert_eq!(*back.to_file_bytes(), *bytes);

        let dbg = format!("{corp:?}");
        assert!(dbg.contains("<redacted>") && dbg.contains("Corp"));
        let seed = &bytes[3..35];
        let hex: String = seed.iter().map(|b| format!("{b:02x}")).collect();
        assert!(!dbg.contains(&hex));
        assert!(!dbg.contains(&format!("{seed:?}")));

        // Trailing and missing bytes.
        let mut longer = bytes.to_vec();
        longer.push(0);
        assert!(Principal::from_file_bytes(&longer).is_err());
        assert!(Principal::from_file_bytes(&bytes[..bytes.len() - 1]).is_err());
        // A blessing bound to another key is refused.
        let other = Principal::from_seed(&[9; 32]);
        let mut w = Writer::new();
        w.put_envelope(tags::PRINCIPAL);
        w.put_fixed(&[9; 32]);
        w.put_count(1);
        corp.blessings()[0].encode(&mut w);
        assert!(matches!(
            Principal::from_file_bytes(&w.into_bytes()),
            Err(Error::NotOurBlessing { .. })
        ));
        drop(other);
        // A duplicated blessing is refused.
        let mut w = Writer::new();
        w.put_envelope(tags::PRINCIPAL);
        w.put_fixed(&bytes[3..35]);
        w.put_count(2);
        corp.blessings()[0].encode(&mut w);
        corp.blessings()[0].encode(&mut w);
        let e = Principal::from_file_bytes(&w.into_bytes()).unwrap_err();
        assert!(e.to_string().contains("blessing 2 (Corp) appears twice"), "{e}");
    }
}
