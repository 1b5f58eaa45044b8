//! Revocation of PrivateDrop accounts: a lost or departed device stops being trusted
//! before its certificates expire (issue 10).
//!
//! The CA signs a **revocation list**: the revoked account UUIDs, a sequence number
//! (higher is newer), the time it was issued and the time by which the CA promises
//! the next one (`next_update`, after X.509 CRLs, RFC 5280 §5.1.2.5):
//!
//! ```text
//! RevocationList = 01 0235 || u64 sequence || u64 issued_at || u64 next_update
//!                  || u32 count (≤ 100 000) || count × account (16), strictly ascending
//!                  || signature (64)
//! signature      = Ed25519(ca, "tacit-drop-v1/revocation-list" || 0x00 || everything
//!                  between the envelope and the signature)
//! ```
//!
//! Devices fetch it from the CA's enrolment endpoint ([`crate::enrolment`], request
//! [`RevocationListRequest`]), keep the newest in their store, and refuse a revoked
//! peer in every handshake as soon as its account is known from its TLS certificate
//! ([`crate::transport`]: the receiver before any request is read, the sender before
//! `StartPSI`). The CA itself never certifies a revoked account again (its registry,
//! [`crate::ca::AccountRegistry`]).
//!
//! [`Revocations`] is the shared, thread-safe holder the transports consult; it
//! accepts only lists verified under the CA key ([`VerifiedRevocationList`]) and never
//! lets an older list replace a newer one. Two different lists with one sequence
//! number are refused as the CA's equivocation.
//!
//! ```
//! use tacit_crypto::rng::SecureRng;
//! use tacit_drop::AccountId;
//! use tacit_drop::ca::CertificateAuthority;
//! use tacit_drop::revocation::{RevocationList, Revocations};
//!
//! let mut rng = SecureRng::from_seed([4; 32]);
//! let ca = CertificateAuthority::generate(&mut rng).unwrap();
//! let lost = AccountId::random(&mut rng);
//! let list = ca.sign_revocation_list(RevocationList::new(1, 1_000, 87_400, [lost]).unwrap());
//! let verified = list.verify(&ca.public_key()).unwrap();
//! let revocations = Revocations::new();
//! revocations.update(verified).unwrap();
//! assert!(revocations.check(&lost).is_err());
//! assert!(revocations.check(&AccountId::random(&mut rng)).is_ok());
//! ```

use crate::account::AccountId;
use crate::ca::CertificateAuthority;
use crate::records::CaPublicKey;
use crate::{Error, Result, signed_message};
use std::sync::{Arc, RwLock};
use tacit_crypto::sign::SIGNATURE_LEN;
use tacit_wire::{Reader, Writer};

/// Message-type tags (registered in `docs/wire.md`).
pub mod tags {
    /// [`super::SignedRevocationList`].
    pub const REVOCATION_LIST: u16 = 0x0235;
    /// [`super::RevocationListRequest`]: a device asks the CA's enrolment endpoint
    /// for the current list.
    pub const REVOCATION_LIST_REQUEST: u16 = 0x0236;
}

/// Most accounts one list may hold (1.6 MB of UUIDs; a frame of the enrolment
/// channel holds up to 4 MiB).
pub const MAX_REVOKED: usize = 100_000;

/// Signature label of a revocation list.
const LABEL: &str = "revocation-list";

/// The accounts a CA revoked, as of `issued_at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationList {
    sequence: u64,
    issued_at: u64,
    next_update: u64,
    /// Sorted, without duplicates.
    accounts: Vec<AccountId>,
}

impl RevocationList {
    /// A list with `sequence`, issued at `issued_at`, promising the next list by
    /// `next_update` (both Unix seconds); duplicates among `accounts` are dropped.
    pub fn new(
        sequence: u64,
        issued_at: u64,
        next_update: u64,
        accounts: impl IntoIterator<Item = AccountId>,
    ) -> Result<Self> {
        let mut accounts: Vec<AccountId> = accounts.into_iter().collect();
        accounts.sort_unstable();
        accounts.dedup();
        if accounts.len() > MAX_REVOKED {
            return Err(Error::InvalidParams(format!(
                "a revocation list holds at most {MAX_REVOKED} accounts; this one would hold {}",
                accounts.len()
            )));
        }
        if next_update <= issued_at {
            return Err(Error::InvalidParams(
                "a revocation list's next update must come after its issue time".into(),
            ));
        }
        Ok(RevocationList {
            sequence,
            issued_at,
            next_update,
            accounts,
        })
    }

    /// The sequence number (higher is newer).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// When the list was issued (Unix seconds).
    pub fn issued_at(&self) -> u64 {
        self.issued_at
    }

    /// When the CA promises the next list (Unix seconds).
    pub fn next_update(&self) -> u64 {
        self.next_update
    }

    /// The revoked accounts, in ascending order.
    pub fn accounts(&self) -> &[AccountId] {
        &self.accounts
    }

    /// Whether `account` is revoked.
    pub fn contains(&self, account: &AccountId) -> bool {
        self.accounts.binary_search(account).is_ok()
    }

    /// Whether the list is past its next update at `now`: a fresher one should exist.
    pub fn is_stale(&self, now: u64) -> bool {
        now >= self.next_update
    }

    fn body(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(28 + 16 * self.accounts.len());
        w.put_u64(self.sequence);
        w.put_u64(self.issued_at);
        w.put_u64(self.next_update);
        w.put_count(self.accounts.len());
        for a in &self.accounts {
            a.encode(&mut w);
        }
        w.into_bytes()
    }
}

/// A revocation list with the CA's signature, as it travels and is stored. Not yet
/// trusted: [`SignedRevocationList::verify`] checks it under the CA key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedRevocationList {
    list: RevocationList,
    signature: [u8; SIGNATURE_LEN],
}

impl CertificateAuthority {
    /// Signs `list` with the CA's record-signing key.
    pub fn sign_revocation_list(&self, list: RevocationList) -> SignedRevocationList {
        let signature = self.sign_raw(&signed_message(LABEL, &list.body()));
        SignedRevocationList { list, signature }
    }
}

/// Default lifetime of a revocation list (its `next_update` minus its `issued_at`):
/// one day, so a device that refreshes on start learns of a revocation within a
/// day even if the CA stays silent.
pub const DEFAULT_LIST_LIFETIME_SECS: u64 = 24 * 3600;

impl CertificateAuthority {
    /// The list the CA publishes at `now` for the accounts in `revoked`: `current`
    /// (the last one it signed) if it still lists exactly those accounts and has
    /// more than half of its lifetime left, otherwise a new one with the next
    /// sequence number, valid for `lifetime` seconds. The flag is `true` for a new
    /// list (to be stored before it is served).
    pub fn publish_revocations(
        &self,
        current: Option<&SignedRevocationList>,
        revoked: &[AccountId],
        now: u64,
        lifetime: u64,
    ) -> Result<(SignedRevocationList, bool)> {
        let lifetime = lifetime.max(2);
        if let Some(cur) = current
            && cur.verify(&self.public_key()).is_ok()
        {
            let mut want = revoked.to_vec();
            want.sort_unstable();
            want.dedup();
            let l = &cur.list;
            if l.accounts == want && now.saturating_add(lifetime / 2) < l.next_update && l.issued_at <= now {
                return Ok((cur.clone(), false));
            }
        }
        let sequence = current.map_or(1, |c| c.list.sequence.saturating_add(1));
        let list = RevocationList::new(sequence, now, now.saturating_add(lifetime), revoked.iter().copied())?;
        Ok((self.sign_revocation_list(list), true))
    }
}

impl SignedRevocationList {
    /// The list, **unverified** (for display and for choosing which to keep before
    /// verifying).
    pub fn unverified(&self) -> &RevocationList {
        &self.list
    }

    /// Checks the signature under `ca`.
    pub fn verify(&self, ca: &CaPublicKey) -> Result<VerifiedRevocationList> {
        ca.0.verify(&signed_message(LABEL, &self.list.body()), &self.signature)
            .map_err(|_| Error::BadCertificate("revocation list"))?;
        Ok(VerifiedRevocationList {
            ca: *ca,
            signed: self.clone(),
        })
    }

    /// The encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::REVOCATION_LIST);
        w.put_fixed(&self.list.body());
        w.put_fixed(&self.signature);
        w.into_bytes()
    }

    /// Decodes a list from the CA or the store (exact length; accounts must be in
    /// strictly ascending order, so each list has one encoding).
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::REVOCATION_LIST, "revocation list")?;
        let sequence = r.u64()?;
        let issued_at = r.u64()?;
        let next_update = r.u64()?;
        let n = r.count("revoked accounts", MAX_REVOKED, 16)?;
        let mut accounts: Vec<AccountId> = Vec::with_capacity(n);
        for i in 0..n {
            let a = AccountId::decode(&mut r)?;
            if accounts.last().is_some_and(|prev| *prev >= a) {
                return Err(tacit_wire::Error::invalid(
                    "revocation list",
                    format!("account {} is not in ascending order", i + 1),
                )
                .into());
            }
            accounts.push(a);
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
                sequence,
                issued_at,
                next_update,
                accounts,
            },
            signature,
        })
    }
}

/// A revocation list whose signature verified under `ca`: the only kind
/// [`Revocations`] accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedRevocationList {
    ca: CaPublicKey,
    signed: SignedRevocationList,
}

impl VerifiedRevocationList {
    /// The list.
    pub fn list(&self) -> &RevocationList {
        &self.signed.list
    }

    /// The CA key it verified under.
    pub fn ca(&self) -> &CaPublicKey {
        &self.ca
    }

    /// The signed list (to store or pass on).
    pub fn signed(&self) -> &SignedRevocationList {
        &self.signed
    }
}

/// What [`Revocations::update`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// The list is newer than the one held (or none was held) and is now in force.
    Installed,
    /// The same list was already held.
    Unchanged,
}

/// What a device does when its revocation list is past its next update (or it has
/// none) and it could not get a current one (issue 32): the CA may have revoked
/// accounts since, which the device would keep trusting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StalePolicy {
    /// Go on with the list held, and say so (availability: devices work offline).
    #[default]
    Warn,
    /// Refuse every peer until a current list is in force.
    Refuse,
}

/// The revocation list in force, shared between the tasks of a receiver or sender
/// (clones share it, so a refresh reaches every connection at once). Without a list
/// nothing is revoked under [`StalePolicy::Warn`], and every peer is refused under
/// [`StalePolicy::Refuse`] ([`Revocations::required`], what the service builders
/// start from).
#[derive(Debug, Clone, Default)]
pub struct Revocations(Arc<RwLock<Option<VerifiedRevocationList>>>, StalePolicy);

impl Revocations {
    /// No list: nothing is revoked (until [`Revocations::update`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// No list yet, and every peer refused until one is in force
    /// ([`StalePolicy::Refuse`]; `Err(Error::NoRevocationList)`): the default of the
    /// service builders, so a product that forgets the CA's list fails closed.
    pub fn required() -> Self {
        Self::new().with_stale_policy(StalePolicy::Refuse)
    }

    /// `list` in force, a list past its next update only warned about
    /// ([`StalePolicy::Warn`], what the CLI does by default).
    pub fn from_list(list: VerifiedRevocationList) -> Self {
        Revocations(Arc::new(RwLock::new(Some(list))), StalePolicy::Warn)
    }

    /// The same list, with `policy` for a list past its next update
    /// ([`Revocations::check_at`]).
    pub fn with_stale_policy(mut self, policy: StalePolicy) -> Self {
        self.1 = policy;
        self
    }

    /// The policy for a list past its next update.
    pub fn stale_policy(&self) -> StalePolicy {
        self.1
    }

    /// Why the list in force is not current at `now` (past its next update, or no
    /// list at all), if it is not.
    pub fn staleness(&self, now: u64) -> Option<String> {
        match self.current() {
            None => Some("is missing (this device never fetched one)".into()),
            Some(l) if l.list().is_stale(now) => Some(format!(
                "(number {}) was due to be replaced {} s ago",
                l.list().sequence(),
                now - l.list().next_update()
            )),
            Some(_) => None,
        }
    }

    /// [`Revocations::check`], and under [`StalePolicy::Refuse`] also
    /// `Err(Error::NoRevocationList)` when no list is in force and
    /// `Err(Error::RevocationListStale)` when the list is not current at `now`.
    pub fn check_at(&self, account: &AccountId, now: u64) -> Result<()> {
        self.check(account)?;
        if self.1 == StalePolicy::Refuse {
            if self.current().is_none() {
                return Err(Error::NoRevocationList);
            }
            if let Some(why) = self.staleness(now) {
                return Err(Error::RevocationListStale(why));
            }
        }
        Ok(())
    }

    /// Puts `list` in force unless it is older than the one held. Refused: a list
    /// with a lower sequence number than the one held (a replayed old list would
    /// un-revoke accounts), a different list with the same sequence number (the CA
    /// signed two histories), or a list under another CA key.
    pub fn update(&self, list: VerifiedRevocationList) -> Result<Update> {
        let mut held = self
            .0
            .write()
            .map_err(|_| Error::InvalidParams("revocation state poisoned".into()))?;
        if let Some(cur) = held.as_ref() {
            if cur.ca != list.ca {
                return Err(Error::InvalidParams(
                    "the revocation list is signed by another CA than the one in force".into(),
                ));
            }
            let (have, got) = (cur.list().sequence, list.list().sequence);
            if got < have {
                return Err(Error::StaleRevocationList { have, got });
            }
            if got == have {
                return if cur.signed == list.signed {
                    Ok(Update::Unchanged)
                } else {
                    Err(Error::InvalidParams(format!(
                        "the CA signed two different revocation lists with sequence number {got}"
                    )))
                };
            }
        }
        *held = Some(list);
        Ok(Update::Installed)
    }

    /// `Err(Error::Revoked)` if `account` is on the list in force.
    pub fn check(&self, account: &AccountId) -> Result<()> {
        let held = self
            .0
            .read()
            .map_err(|_| Error::InvalidParams("revocation state poisoned".into()))?;
        match held.as_ref() {
            Some(l) if l.list().contains(account) => Err(Error::Revoked(*account)),
            _ => Ok(()),
        }
    }

    /// The list in force, if any.
    pub fn current(&self) -> Option<VerifiedRevocationList> {
        self.0.read().ok().and_then(|h| h.clone())
    }
}

/// A device's request for the current revocation list, sent on the CA's enrolment
/// endpoint instead of an enrolment request: `01 0236` (no body).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RevocationListRequest;

impl RevocationListRequest {
    /// The encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::REVOCATION_LIST_REQUEST);
        w.into_bytes()
    }

    /// Decodes one (exactly the envelope).
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::REVOCATION_LIST_REQUEST, "revocation list request")?;
        r.finish()?;
        Ok(RevocationListRequest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;

    fn setup() -> (CertificateAuthority, Vec<AccountId>) {
        let mut rng = SecureRng::from_seed([8; 32]);
        let ca = CertificateAuthority::generate(&mut rng).unwrap();
        let accounts = (0..3).map(|_| AccountId::random(&mut rng)).collect();
        (ca, accounts)
    }

    #[test]
    fn a_signed_list_roundtrips_and_verifies_only_under_its_ca() {
        let (ca, a) = setup();
        let list = RevocationList::new(7, 100, 200, [a[2], a[0], a[2]]).unwrap();
        assert_eq!(list.accounts().len(), 2);
        assert!(list.accounts().windows(2).all(|w| w[0] < w[1]));
        let signed = ca.sign_revocation_list(list);
        let bytes = signed.to_bytes();
        assert_eq!(bytes.len(), 3 + 28 + 32 + 64);
        let back = SignedRevocationList::from_bytes(&bytes).unwrap();
        assert_eq!(back, signed);
        let v = back.verify(&ca.public_key()).unwrap();
        assert!(v.list().contains(&a[0]) && v.list().contains(&a[2]) && !v.list().contains(&a[1]));
        assert!(!v.list().is_stale(199) && v.list().is_stale(200));
        let other = CertificateAuthority::generate(&mut SecureRng::from_seed([9; 32])).unwrap();
        assert_eq!(
            back.verify(&other.public_key()).unwrap_err(),
            Error::BadCertificate("revocation list")
        );
    }

    #[test]
    fn tampered_or_malformed_lists_are_refused() {
        let (ca, a) = setup();
        let bytes = ca
            .sign_revocation_list(RevocationList::new(1, 10, 20, a.clone()).unwrap())
            .to_bytes();
        // Removing an account (or changing any byte) breaks the signature.
        for i in [4, 12, 30, 40, bytes.len() - 1] {
            let mut t = bytes.clone();
            t[i] ^= 1;
            if let Ok(l) = SignedRevocationList::from_bytes(&t) {
                assert!(l.verify(&ca.public_key()).is_err(), "byte {i}");
            }
        }
        // Trailing bytes, truncation, a huge count, unsorted or repeated accounts.
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(SignedRevocationList::from_bytes(&longer).is_err());
        assert!(SignedRevocationList::from_bytes(&bytes[..bytes.len() - 1]).is_err());
        let mut huge = bytes[..27].to_vec();
        huge.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(SignedRevocationList::from_bytes(&huge).is_err());
        let mut swapped = bytes.clone();
        let (x, y) = (31, 47);
        let first: Vec<u8> = swapped[x..x + 16].to_vec();
        swapped.copy_within(y..y + 16, x);
        swapped[y..y + 16].copy_from_slice(&first);
        let e = SignedRevocationList::from_bytes(&swapped).unwrap_err();
        assert!(e.to_string().contains("ascending"), "{e}");
        let mut repeated = bytes.clone();
        repeated.copy_within(x..x + 16, y);
        assert!(SignedRevocationList::from_bytes(&repeated).is_err());
        assert!(RevocationList::new(1, 20, 20, []).is_err());
        assert!(RevocationListRequest::from_bytes(&RevocationListRequest.to_bytes()).is_ok());
        assert!(RevocationListRequest::from_bytes(&bytes).is_err());
    }

    #[test]
    fn the_ca_reissues_when_the_set_changes_or_half_the_lifetime_passed() {
        let (ca, a) = setup();
        let (l1, new) = ca.publish_revocations(None, &[], 1000, 100).unwrap();
        assert!(new);
        assert_eq!((l1.unverified().sequence(), l1.unverified().next_update()), (1, 1100));
        // unchanged set, early: the same list
        let (same, new) = ca.publish_revocations(Some(&l1), &[], 1049, 100).unwrap();
        assert!(!new);
        assert_eq!(same, l1);
        // half the lifetime passed: a new list with the next sequence number
        let (l2, new) = ca.publish_revocations(Some(&l1), &[], 1050, 100).unwrap();
        assert!(new);
        assert_eq!(l2.unverified().sequence(), 2);
        // a revocation: a new list at once
        let (l3, new) = ca.publish_revocations(Some(&l2), &[a[1]], 1051, 100).unwrap();
        assert!(new);
        assert_eq!(l3.unverified().sequence(), 3);
        assert!(l3.verify(&ca.public_key()).unwrap().list().contains(&a[1]));
    }

    #[test]
    fn a_stale_list_is_refused_only_under_the_refuse_policy() {
        let (ca, a) = setup();
        let pk = ca.public_key();
        let warn = Revocations::new();
        let refuse = warn.clone().with_stale_policy(StalePolicy::Refuse);
        // No list at all.
        assert!(warn.check_at(&a[0], 100).is_ok());
        assert_eq!(refuse.check_at(&a[0], 100).unwrap_err(), Error::NoRevocationList);
        assert!(Revocations::required().check_at(&a[0], 100).is_err());
        let list = ca.sign_revocation_list(RevocationList::new(4, 10, 200, [a[1]]).unwrap());
        refuse.update(list.verify(&pk).unwrap()).unwrap();
        // Current: both policies decide by the list; the clones share it.
        assert!(refuse.check_at(&a[0], 199).is_ok() && warn.check_at(&a[0], 199).is_ok());
        assert_eq!(warn.check_at(&a[1], 199).unwrap_err(), Error::Revoked(a[1]));
        // Past its next update: refused under Refuse only; a revoked account stays
        // revoked under both.
        assert!(warn.check_at(&a[0], 260).is_ok());
        let e = refuse.check_at(&a[0], 260).unwrap_err();
        assert!(
            e.to_string().contains("(number 4) was due to be replaced 60 s ago"),
            "{e}"
        );
        assert_eq!(warn.check_at(&a[1], 260).unwrap_err(), Error::Revoked(a[1]));
    }

    #[test]
    fn an_older_list_never_replaces_a_newer_one() {
        let (ca, a) = setup();
        let pk = ca.public_key();
        let v = |seq: u64, accounts: &[AccountId]| {
            ca.sign_revocation_list(RevocationList::new(seq, 10, 20, accounts.to_vec()).unwrap())
                .verify(&pk)
                .unwrap()
        };
        let r = Revocations::new();
        assert!(r.check(&a[0]).is_ok());
        assert_eq!(r.update(v(2, &[a[0]])).unwrap(), Update::Installed);
        assert_eq!(r.check(&a[0]).unwrap_err(), Error::Revoked(a[0]));
        // The replayed older list (before a[0] was revoked) is refused.
        assert_eq!(
            r.update(v(1, &[])).unwrap_err(),
            Error::StaleRevocationList { have: 2, got: 1 }
        );
        assert!(r.check(&a[0]).is_err());
        assert_eq!(r.update(v(2, &[a[0]])).unwrap(), Update::Unchanged);
        let e = r.update(v(2, &[a[1]])).unwrap_err();
        assert!(e.to_string().contains("two different revocation lists"), "{e}");
        assert_eq!(r.update(v(3, &[a[0], a[1]])).unwrap(), Update::Installed);
        assert!(r.check(&a[1]).is_err() && r.check(&a[2]).is_ok());
        // A clone shares the state.
        let c = r.clone();
        assert_eq!(c.current().unwrap().list().sequence(), 3);
        let other = CertificateAuthority::generate(&mut SecureRng::from_seed([10; 32])).unwrap();
        let foreign = other
            .sign_revocation_list(RevocationList::new(9, 10, 20, []).unwrap())
            .verify(&other.public_key())
            .unwrap();
        assert!(c.update(foreign).is_err());
    }
}
