//! The CA-signed objects of PrivateDrop and AirDrop.
//!
//! | object | paper | contents |
//! |---|---|---|
//! | [`ValidationRecord`] | Eq. (3)–(4), "individual validation record" `VR_σ,i` | account UUID, `SHA-256(IDᵢ)` |
//! | [`LegacyValidationRecord`] | Eq. (1)–(2), AirDrop's `VR_σ` | account UUID, `SHA-256` of *every* identifier |
//! | [`CertifiedBlindedIds`] | Eq. (5)–(6), `Y_σ,i` | account UUID, the `m` blinded identifiers `yᵢ = αᵢ·H(IDᵢ)` (padded with CA-chosen random elements) |
//!
//! Every object is signed with the CA's Ed25519 key over
//! `"tacit-drop-v1/" || label || 0x00 || canonical encoding` and carries a validity
//! window. Verification always takes the account named in the peer's TLS
//! certificate and the current time, so a record replayed by another account or
//! after expiry is refused.

use crate::account::AccountId;
use crate::{Error, Result, signed_message};
use tacit_crypto::PrimeGroup;
use tacit_crypto::sign::{SIGNATURE_LEN, SigningKey, VerifyingKey};
use tacit_psi::{EncodingMemo, PsiParams, Request};
use tacit_wire::{Reader, Writer};

/// Message-type tags of this module (registered in `docs/wire.md`).
pub mod tags {
    /// [`super::SignedValidationRecord`].
    pub const VALIDATION_RECORD: u16 = 0x0201;
    /// [`super::SignedLegacyValidationRecord`].
    pub const LEGACY_VALIDATION_RECORD: u16 = 0x0202;
    /// [`super::CertifiedBlindedIds`].
    pub const CERTIFIED_BLINDED_IDS: u16 = 0x0203;
}

/// The CA's public key, the trust root every device holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaPublicKey(pub VerifyingKey);

/// A validity window in Unix seconds, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// First valid second.
    pub not_before: u64,
    /// Last valid second.
    pub not_after: u64,
}

impl Validity {
    fn encode(&self, w: &mut Writer) {
        w.put_u64(self.not_before);
        w.put_u64(self.not_after);
    }

    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        Ok(Validity {
            not_before: r.u64()?,
            not_after: r.u64()?,
        })
    }

    fn check(&self, what: &'static str, now: u64) -> Result<()> {
        if now < self.not_before || now > self.not_after {
            return Err(Error::Expired {
                what,
                from: self.not_before,
                until: self.not_after,
                now,
            });
        }
        Ok(())
    }
}

fn read_signature(r: &mut Reader<'_>) -> tacit_wire::Result<[u8; SIGNATURE_LEN]> {
    r.array("signature")
}

fn verify_common(
    ca: &CaPublicKey,
    what: &'static str,
    label: &str,
    body: &[u8],
    signature: &[u8],
    (account, validity): (&AccountId, &Validity),
    (expected_account, now): (&AccountId, u64),
) -> Result<()> {
    ca.0.verify(&signed_message(label, body), signature)
        .map_err(|_| Error::BadCertificate(what))?;
    if account != expected_account {
        return Err(Error::AccountMismatch(what));
    }
    validity.check(what, now)
}

/// `VRᵢ = (UUID, SHA-256(IDᵢ))`, Eq. (3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationRecord {
    /// The account.
    pub account: AccountId,
    /// `SHA-256(IDᵢ)` of one normalised identifier.
    pub id_hash: [u8; 32],
    /// Validity.
    pub validity: Validity,
}

/// A record the CA signs: its encoding, label and binding to an account.
pub trait Record: Sized + Clone {
    /// Domain-separation label of the signature.
    const LABEL: &'static str;
    /// Message-type tag of the signed record.
    const TAG: u16;
    /// What it is called in messages.
    const WHAT: &'static str;
    /// The account it names.
    fn account(&self) -> &AccountId;
    /// Its validity window.
    fn validity(&self) -> &Validity;
    /// Its canonical encoding (what is signed).
    fn body(&self) -> Vec<u8>;
    /// Reads the body.
    fn decode_body(r: &mut Reader<'_>) -> tacit_wire::Result<Self>;
}

impl Record for ValidationRecord {
    const LABEL: &'static str = "validation-record";
    const TAG: u16 = tags::VALIDATION_RECORD;
    const WHAT: &'static str = "validation record";

    fn account(&self) -> &AccountId {
        &self.account
    }
    fn validity(&self) -> &Validity {
        &self.validity
    }
    fn body(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.account.encode(&mut w);
        w.put_fixed(&self.id_hash);
        self.validity.encode(&mut w);
        w.into_bytes()
    }
    fn decode_body(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        Ok(ValidationRecord {
            account: AccountId::decode(r)?,
            id_hash: r.array("identifier hash")?,
            validity: Validity::decode(r)?,
        })
    }
}

/// AirDrop's validation record `VR = (UUID, SHA-256(ID₁), …, SHA-256(ID_m))`, Eq. (1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyValidationRecord {
    /// The account.
    pub account: AccountId,
    /// The hashes of *all* the account's identifiers — what the legacy flow leaks.
    pub id_hashes: Vec<[u8; 32]>,
    /// Validity.
    pub validity: Validity,
}

/// Most identifiers a legacy record may hold.
pub const MAX_LEGACY_IDS: usize = 4096;

impl Record for LegacyValidationRecord {
    const LABEL: &'static str = "legacy-validation-record";
    const TAG: u16 = tags::LEGACY_VALIDATION_RECORD;
    const WHAT: &'static str = "legacy validation record";

    fn account(&self) -> &AccountId {
        &self.account
    }
    fn validity(&self) -> &Validity {
        &self.validity
    }
    fn body(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.account.encode(&mut w);
        w.put_count(self.id_hashes.len());
        for h in &self.id_hashes {
            w.put_fixed(h);
        }
        self.validity.encode(&mut w);
        w.into_bytes()
    }
    fn decode_body(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let account = AccountId::decode(r)?;
        let n = r.count("identifier hashes", MAX_LEGACY_IDS, 32)?;
        let mut id_hashes = Vec::with_capacity(n);
        for _ in 0..n {
            id_hashes.push(r.array("identifier hash")?);
        }
        Ok(LegacyValidationRecord {
            account,
            id_hashes,
            validity: Validity::decode(r)?,
        })
    }
}

/// A record with the CA's signature: `(R, sign(σ_VR, R))`, Eq. (2) and (4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed<R: Record> {
    /// The record.
    pub record: R,
    /// The CA's signature.
    pub signature: [u8; SIGNATURE_LEN],
}

/// `VR_σ,i = (VRᵢ, sign(σ_VR, VRᵢ))`, Eq. (4).
pub type SignedValidationRecord = Signed<ValidationRecord>;
/// `VR_σ = (VR, sign(σ_VR, VR))`, Eq. (2).
pub type SignedLegacyValidationRecord = Signed<LegacyValidationRecord>;

impl<R: Record> Signed<R> {
    pub(crate) fn sign(record: R, key: &SigningKey) -> Self {
        let signature = key.sign(&signed_message(R::LABEL, &record.body()));
        Signed { record, signature }
    }

    /// Checks the CA signature, that the record names `peer` (the account in the peer's
    /// TLS certificate) and that it is valid at `now`.
    pub fn verify(&self, ca: &CaPublicKey, peer: &AccountId, now: u64) -> Result<&R> {
        verify_common(
            ca,
            R::WHAT,
            R::LABEL,
            &self.record.body(),
            &self.signature,
            (self.record.account(), self.record.validity()),
            (peer, now),
        )?;
        Ok(&self.record)
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        w.put_envelope(R::TAG);
        w.put_fixed(&self.record.body());
        w.put_fixed(&self.signature);
    }

    /// Reads one.
    pub fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(R::TAG, R::WHAT)?;
        let record = R::decode_body(r)?;
        Ok(Signed {
            record,
            signature: read_signature(r)?,
        })
    }
}

/// `Y_σ = (UUID, y₁, …, y_m)` with the CA's signature: the account's blinded
/// identifiers, padded by the CA with random elements to exactly `m` and in random
/// order (Eq. (5)–(6); one signature over the whole vector instead of one per `yᵢ`,
/// see `docs/drop.md`).
#[derive(Debug, Clone, PartialEq)]
pub struct CertifiedBlindedIds<G: PrimeGroup> {
    /// The account.
    pub account: AccountId,
    /// Exactly `m` elements.
    pub elements: Vec<G::Element>,
    /// Validity.
    pub validity: Validity,
    /// The CA's signature.
    pub signature: [u8; SIGNATURE_LEN],
    /// The elements' encodings, made once (used only while the elements are unchanged).
    memo: EncodingMemo<G>,
}

impl<G: PrimeGroup> CertifiedBlindedIds<G> {
    const LABEL: &'static str = "certified-blinded-ids";

    fn body(account: &AccountId, encoded: &[G::ElementBytes], validity: &Validity) -> Vec<u8> {
        let mut w = Writer::new();
        account.encode(&mut w);
        w.put_u8(G::ID.code());
        w.put_count(encoded.len());
        for e in encoded {
            w.put_fixed(e.as_ref());
        }
        validity.encode(&mut w);
        w.into_bytes()
    }

    /// The canonical encodings of the elements.
    pub fn element_bytes(&self) -> Vec<G::ElementBytes> {
        self.memo.bytes(&self.elements)
    }

    /// These elements as a PSI request under `params`, encodings included.
    pub fn as_request(&self, params: &PsiParams) -> Request<G> {
        Request::with_encodings(*params, self.elements.clone(), &self.element_bytes())
    }

    pub(crate) fn sign(account: AccountId, elements: Vec<G::Element>, validity: Validity, key: &SigningKey) -> Self {
        let memo = EncodingMemo::of(&elements);
        let signature = key.sign(&signed_message(
            Self::LABEL,
            &Self::body(&account, &memo.bytes(&elements), &validity),
        ));
        CertifiedBlindedIds {
            account,
            elements,
            validity,
            signature,
            memo,
        }
    }

    /// Checks the CA signature, the account binding (`peer` is the account of the TLS
    /// certificate), the validity and that there are exactly `m` elements.
    pub fn verify(&self, ca: &CaPublicKey, peer: &AccountId, now: u64, m: usize) -> Result<()> {
        if self.elements.len() != m {
            return Err(Error::InvalidParams(format!(
                "certified blinded identifiers hold {} elements; the bound is {m}",
                self.elements.len()
            )));
        }
        verify_common(
            ca,
            "certified blinded identifiers",
            Self::LABEL,
            &Self::body(&self.account, &self.element_bytes(), &self.validity),
            &self.signature,
            (&self.account, &self.validity),
            (peer, now),
        )
    }

    /// Appends the encoding.
    pub fn encode(&self, w: &mut Writer) {
        w.put_envelope(tags::CERTIFIED_BLINDED_IDS);
        w.put_fixed(&Self::body(&self.account, &self.element_bytes(), &self.validity));
        w.put_fixed(&self.signature);
    }

    /// Reads one holding at most `max` elements.
    pub fn decode(r: &mut Reader<'_>, max: usize) -> Result<Self> {
        r.envelope(tags::CERTIFIED_BLINDED_IDS, "certified blinded identifiers")?;
        let account = AccountId::decode(r)?;
        let g = r.u8()?;
        if g != G::ID.code() {
            return Err(tacit_wire::Error::invalid("group", format!("code {g}; expected {}", G::ID)).into());
        }
        let n = r.count("blinded identifiers", max, G::ELEMENT_LEN)?;
        let mut elements = Vec::with_capacity(n);
        let mut encoded = Vec::with_capacity(n);
        for _ in 0..n {
            let raw = r.fixed("blinded identifier", G::ELEMENT_LEN)?;
            elements.push(G::decode_element(raw)?);
            encoded.push(
                G::ElementBytes::try_from(raw)
                    .map_err(|_| tacit_wire::Error::invalid("blinded identifier", "wrong length"))?,
            );
        }
        let validity = Validity::decode(r)?;
        Ok(CertifiedBlindedIds {
            memo: EncodingMemo::from_parts(&elements, &encoded),
            account,
            elements,
            validity,
            signature: read_signature(r)?,
        })
    }
}
