//! Revocation of blessings (issue 10): a naming root signs a list of revoked
//! certificate identifiers; a chain that contains a revoked link no longer validates.
//!
//! **Certificate identifiers.** The identifier of link `i` of a chain is a hash of its
//! content and of the identifier of the link above it, **without signatures**:
//!
//! ```text
//! id_0 = 0³²
//! id_i = SHA-256("tacit-discovery/blessing/v1/id\0" || id_{i−1} || Certificate_i without its signature)
//! ```
//!
//! so it names one certificate at one place in one chain: a link of the same content
//! elsewhere (under another parent) has another identifier, and a second signature
//! on the same link (Ed25519 signatures are not unique for their signer) does not
//! change it. Every chain that extends a revoked link contains it, so revoking
//! `Home/Devices` revokes `Home/Devices/Camera` and everything else below it.
//! [`Blessing::id`] is the identifier of a blessing's last link (what `tacit discover
//! root revoke` takes).
//!
//! **Lists.** Only a root's own key can revoke in its tree: a list names its root
//! (name and key, as in [`TrustedRoots`]) and is signed with [`Principal::sign`] by
//! that root's principal:
//!
//! ```text
//! RevocationList = 01 0314 || u8 len || root name || root key (32)
//!                  || u64 sequence || u64 issued_at || u64 next_update
//!                  || u32 count (≤ 65 536) || count × id (32), strictly ascending
//!                  || signature (64)
//! signature      = Principal::sign("tacit-discovery/revocation-list/v1\0" || everything
//!                  between the envelope and the signature)
//! ```
//!
//! [`TrustedRoots::apply_revocations`] checks a list against the trusted key of its
//! root and puts it in force; [`Blessing::validate`] then refuses every chain under
//! that root that contains a listed link — in SIGMA-I, private mutual
//! authentication, 0-RTT, advertisement opening and key extraction alike, since they
//! all validate through it. An older list (lower sequence number) never replaces a
//! newer one; two different lists with one sequence number are refused.

use super::chain::{Blessing, TrustedRoot, TrustedRoots, verify_principal_signature};
use super::name::check_label;
use super::principal::Principal;
use super::{Error, Result, tags};
use core::fmt;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use tacit_crypto::sign::{PUBLIC_KEY_LEN, SIGNATURE_LEN, VerifyingKey};
use tacit_wire::{Reader, Writer};

/// Domain separator of certificate identifiers.
pub(super) const ID_DST: &[u8] = b"tacit-discovery/blessing/v1/id\0";
/// Domain separator of what a root signs for a revocation list.
const LIST_DST: &[u8] = b"tacit-discovery/revocation-list/v1\0";
/// Most identifiers one list may hold (2 MiB).
pub const MAX_REVOKED_CERTIFICATES: usize = 65_536;

/// The identifier of one certificate link in its chain (see the module
/// documentation). Printed and parsed as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CertificateId(pub [u8; 32]);

impl CertificateId {
    /// `id_i` from `id_{i−1}` and the link's encoding without its signature.
    pub(super) fn of_link(parent: &CertificateId, body: &[u8]) -> CertificateId {
        CertificateId(
            Sha256::new()
                .chain_update(ID_DST)
                .chain_update(parent.0)
                .chain_update(body)
                .finalize()
                .into(),
        )
    }

    /// `id_0`, above a root.
    pub(super) const ABOVE_ROOT: CertificateId = CertificateId([0; 32]);
}

impl fmt::Display for CertificateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CertificateId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CertificateId({self})")
    }
}

impl core::str::FromStr for CertificateId {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let s = s.trim();
        let bad = || {
            Error::Wire(tacit_wire::Error::invalid(
                "certificate identifier",
                "expected 64 hex digits",
            ))
        };
        // `hex` takes hex digits only (a hand-written `from_str_radix` loop also took a
        // sign, "+b") and exactly 64 of them.
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).map_err(|_| bad())?;
        Ok(CertificateId(out))
    }
}

/// The certificates a naming root revoked, as of `issued_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationList {
    root: TrustedRoot,
    sequence: u64,
    issued_at: u64,
    next_update: u64,
    revoked: BTreeSet<CertificateId>,
}

impl RevocationList {
    /// The root whose tree the list applies to.
    pub fn root(&self) -> &TrustedRoot {
        &self.root
    }

    /// The sequence number (higher is newer).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// When it was issued (Unix seconds).
    pub fn issued_at(&self) -> u64 {
        self.issued_at
    }

    /// When the root promises the next list (Unix seconds).
    pub fn next_update(&self) -> u64 {
        self.next_update
    }

    /// The revoked certificate identifiers, ascending.
    pub fn revoked(&self) -> impl Iterator<Item = &CertificateId> + '_ {
        self.revoked.iter()
    }

    /// Number of revoked certificates.
    pub fn len(&self) -> usize {
        self.revoked.len()
    }

    /// Whether nothing is revoked.
    pub fn is_empty(&self) -> bool {
        self.revoked.is_empty()
    }

    /// Whether `id` is revoked.
    pub fn contains(&self, id: &CertificateId) -> bool {
        self.revoked.contains(id)
    }

    /// Whether the list is past its next update at `now`.
    pub fn is_stale(&self, now: u64) -> bool {
        now >= self.next_update
    }

    fn body(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(1 + 64 + 32 + 28 + 32 * self.revoked.len());
        // A root name is one component of at most 64 bytes.
        w.put_u8(self.root.name().len() as u8);
        w.put_fixed(self.root.name().as_bytes());
        w.put_fixed(&self.root.public_key().to_bytes());
        w.put_u64(self.sequence);
        w.put_u64(self.issued_at);
        w.put_u64(self.next_update);
        w.put_count(self.revoked.len());
        for id in &self.revoked {
            w.put_fixed(&id.0);
        }
        w.into_bytes()
    }

    fn signed_message(&self) -> Vec<u8> {
        let mut m = LIST_DST.to_vec();
        m.extend_from_slice(&self.body());
        m
    }
}

/// A revocation list with its root's signature; trusted only through
/// [`TrustedRoots::apply_revocations`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRevocationList {
    list: RevocationList,
    signature: [u8; SIGNATURE_LEN],
}

impl Principal {
    /// Signs the revocation list of the root `root` (a self-signed blessing this
    /// principal holds), with `sequence`, valid from `issued_at` with the next list
    /// promised by `next_update`, revoking `revoked`.
    pub fn sign_revocations(
        &self,
        root: &Blessing,
        sequence: u64,
        issued_at: u64,
        next_update: u64,
        revoked: impl IntoIterator<Item = CertificateId>,
    ) -> Result<SignedRevocationList> {
        if root.depth() != 1 || root.public_key() != self.public_key() {
            return Err(Error::NotARoot {
                name: root.unverified_name().to_string(),
            });
        }
        if next_update <= issued_at {
            return Err(Error::InvalidRevocationList(
                "its next update must come after its issue time".into(),
            ));
        }
        let revoked: BTreeSet<CertificateId> = revoked.into_iter().collect();
        if revoked.len() > MAX_REVOKED_CERTIFICATES {
            return Err(Error::InvalidRevocationList(format!(
                "a list holds at most {MAX_REVOKED_CERTIFICATES} certificates; this one would hold {}",
                revoked.len()
            )));
        }
        let list = RevocationList {
            root: TrustedRoot::of(root),
            sequence,
            issued_at,
            next_update,
            revoked,
        };
        let signature = self.sign(&list.signed_message());
        Ok(SignedRevocationList { list, signature })
    }
}

impl SignedRevocationList {
    /// The list, **unverified** (for display).
    pub fn unverified(&self) -> &RevocationList {
        &self.list
    }

    /// Checks the signature under the key the list names for its root (whether that
    /// root is trusted is [`TrustedRoots::apply_revocations`]'s question).
    fn verify(&self) -> Result<()> {
        verify_principal_signature(
            &self.list.root.public_key(),
            &self.list.signed_message(),
            &self.signature,
        )
        .map_err(|_| Error::BadRevocationSignature {
            root: self.list.root.name().to_string(),
        })
    }

    /// The file form.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::REVOCATION_LIST);
        w.put_fixed(&self.list.body());
        w.put_fixed(&self.signature);
        w.into_bytes()
    }

    /// Decodes the file form (exact length; identifiers strictly ascending; the
    /// root name a valid component and its key a valid Ed25519 key).
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::REVOCATION_LIST, "revocation list")?;
        let len = r.u8()? as usize;
        let name = r.fixed("root name", len)?;
        let name =
            core::str::from_utf8(name).map_err(|_| tacit_wire::Error::invalid("root name", "not valid UTF-8"))?;
        check_label("root name", name)?;
        let key = VerifyingKey::from_bytes(r.fixed("root key", PUBLIC_KEY_LEN)?)
            .map_err(|e| tacit_wire::Error::invalid("revocation list root key", e.to_string()))?;
        let sequence = r.u64()?;
        let issued_at = r.u64()?;
        let next_update = r.u64()?;
        let n = r.count("revoked certificates", MAX_REVOKED_CERTIFICATES, 32)?;
        let mut revoked = BTreeSet::new();
        let mut last: Option<CertificateId> = None;
        for i in 0..n {
            let id = CertificateId(r.array("certificate identifier")?);
            if last.is_some_and(|l| l >= id) {
                return Err(tacit_wire::Error::invalid(
                    "revocation list",
                    format!("identifier {} is not in ascending order", i + 1),
                )
                .into());
            }
            last = Some(id);
            revoked.insert(id);
        }
        let signature = r.array("revocation list signature")?;
        r.finish()?;
        if next_update <= issued_at {
            return Err(
                tacit_wire::Error::invalid("revocation list", "its next update precedes its issue time").into(),
            );
        }
        Ok(SignedRevocationList {
            list: RevocationList {
                root: TrustedRoot::new(name, key)?,
                sequence,
                issued_at,
                next_update,
                revoked,
            },
            signature,
        })
    }
}

/// What [`TrustedRoots::apply_revocations`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The list is newer than the one in force for its root (or none was) and is now
    /// in force.
    Installed,
    /// The same list was already in force.
    Unchanged,
}

/// The revocation lists in force, one per trusted root; shared by every clone of a
/// [`TrustedRoots`] (so a list applied through one reaches every credential built
/// from it, a running service included).
#[derive(Debug, Clone, Default)]
pub(super) struct Revocations(Arc<RwLock<ListsByRoot>>);

/// The list in force per root (name, key).
type ListsByRoot = HashMap<(String, [u8; 32]), SignedRevocationList>;

fn key_of(root: &TrustedRoot) -> (String, [u8; 32]) {
    (root.name().to_owned(), root.public_key().to_bytes())
}

impl Revocations {
    /// The identifiers revoked under `root`: a copy of the list in force.
    pub(super) fn for_root(&self, root: &TrustedRoot) -> Option<RevocationList> {
        self.0.read().ok()?.get(&key_of(root)).map(|l| l.list.clone())
    }

    /// Whether any of `ids` is revoked under `root`; the first such index.
    pub(super) fn first_revoked(&self, root: &TrustedRoot, ids: &[CertificateId]) -> Option<usize> {
        let held = self.0.read().ok()?;
        let l = held.get(&key_of(root))?;
        ids.iter().position(|id| l.list.contains(id))
    }

    fn apply(&self, list: &SignedRevocationList) -> Result<Applied> {
        let mut held = self
            .0
            .write()
            .map_err(|_| Error::InvalidRevocationList("state poisoned".into()))?;
        let root = list.list.root.clone();
        if let Some(cur) = held.get(&key_of(&root)) {
            let (have, got) = (cur.list.sequence, list.list.sequence);
            if got < have {
                return Err(Error::StaleRevocationList {
                    root: root.name().to_string(),
                    have,
                    got,
                });
            }
            if got == have {
                return if cur == list {
                    Ok(Applied::Unchanged)
                } else {
                    Err(Error::InvalidRevocationList(format!(
                        "root {} signed two different lists with sequence number {got}",
                        root.name()
                    )))
                };
            }
        }
        held.insert(key_of(&root), list.clone());
        Ok(Applied::Installed)
    }

    fn all(&self) -> Vec<SignedRevocationList> {
        let mut v: Vec<SignedRevocationList> = self.0.read().map(|h| h.values().cloned().collect()).unwrap_or_default();
        v.sort_by(|a, b| a.list.root.name().cmp(b.list.root.name()));
        v
    }
}

impl TrustedRoots {
    /// Puts `list` in force for its root, after checking that the root is trusted
    /// with the key the list names and that the root's key signed it. Refused: a list
    /// of an untrusted root, a bad signature, a list older than the one in force (a
    /// replayed old list would un-revoke), two different lists with one sequence
    /// number.
    pub fn apply_revocations(&self, list: &SignedRevocationList) -> Result<Applied> {
        let root = &list.list.root;
        self.check(root.name(), &root.public_key())?;
        list.verify()?;
        self.revocation_state().apply(list)
    }

    /// The lists in force (verified), by root name.
    pub fn revocation_lists(&self) -> Vec<SignedRevocationList> {
        self.revocation_state().all()
    }

    /// The list in force for `root`, if any.
    pub fn revocations_of(&self, root: &TrustedRoot) -> Option<RevocationList> {
        self.revocation_state().for_root(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    const NOW: u64 = 1_767_225_600;

    #[test]
    fn ids_roundtrip_as_hex() {
        let id = CertificateId([0xab; 32]);
        assert_eq!(id.to_string().len(), 64);
        assert_eq!(id.to_string().parse::<CertificateId>().unwrap(), id);
        assert!("ab".parse::<CertificateId>().is_err());
        assert!("zz".repeat(32).parse::<CertificateId>().is_err());
        // The discovery_blessing fuzz target's find: a sign inside the hex was taken
        // ("+b" as 0x0b), so two strings named one identifier.
        let signed = format!("{}+b{}", "b".repeat(26), "b".repeat(36));
        assert!(signed.parse::<CertificateId>().is_err());
    }

    #[test]
    fn lists_roundtrip_and_malformed_ones_are_refused() {
        let mut rng = SecureRng::from_seed([3; 32]);
        let (home, root) = Principal::new_root(&mut rng, "Home", NOW + 100).unwrap();
        let l = home
            .sign_revocations(
                &root,
                4,
                NOW,
                NOW + 10,
                [CertificateId([2; 32]), CertificateId([1; 32])],
            )
            .unwrap();
        let bytes = l.to_file_bytes();
        assert_eq!(bytes.len(), 3 + 1 + 4 + 32 + 24 + 4 + 64 + 64);
        assert_eq!(SignedRevocationList::from_file_bytes(&bytes).unwrap(), l);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(SignedRevocationList::from_file_bytes(&longer).is_err());
        assert!(SignedRevocationList::from_file_bytes(&bytes[..bytes.len() - 1]).is_err());
        // identifiers out of order
        let at = 3 + 1 + 4 + 32 + 24 + 4;
        let mut swapped = bytes.clone();
        swapped[at..at + 32].copy_from_slice(&[2; 32]);
        swapped[at + 32..at + 64].copy_from_slice(&[1; 32]);
        assert!(SignedRevocationList::from_file_bytes(&swapped).is_err());
        // a huge count is refused before allocating
        let mut huge = bytes[..at - 4].to_vec();
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(SignedRevocationList::from_file_bytes(&huge).is_err());
        // only a root principal with its own root blessing signs lists
        let other = Principal::generate(&mut rng);
        assert!(other.sign_revocations(&root, 1, NOW, NOW + 1, []).is_err());
        let child = home
            .bless(&root, &other.public_key(), "Child", NOW + 100, vec![])
            .unwrap();
        assert!(matches!(
            other.sign_revocations(&child, 1, NOW, NOW + 1, []),
            Err(Error::NotARoot { .. })
        ));
        assert!(home.sign_revocations(&root, 1, NOW, NOW, []).is_err());
    }
}
