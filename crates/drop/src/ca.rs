//! The identity provider (the role Apple plays in the paper) and enrolment.
//!
//! A device creates its account UUID and, for each own identifier `IDᵢ`, a blinding
//! scalar `αᵢ`, the blinded value `yᵢ = αᵢ·H(IDᵢ)` and a Schnorr proof of knowledge of
//! `αᵢ` with base `H(IDᵢ)` (PrivateDrop §4.5: "a simple zero-knowledge protocol must be
//! run with Apple to make sure yᵢ is actually an encryption of a legitimately hashed
//! contact identifier and the client device is in possession of the keys αᵢ"). The
//! CA checks that the account owns each identifier (real SMS / e-mail verification is
//! out of scope: the caller passes an ownership decision, in tacit an operator's
//! confirmation), verifies each proof, and issues
//!
//! * the certified blinded identifiers `Y_σ` (Eq. 5–6): the `yᵢ` at random positions
//!   among `m` slots, the others filled with random group elements, so the vector does
//!   not reveal how many identifiers are real;
//! * one individual validation record `VR_σ,i` per identifier (Eq. 3–4);
//! * the legacy validation record `VR_σ` with all hashes (Eq. 1–2), for the legacy
//!   flow only.
//!
//! `H` is the PSI's hash to the group (RFC 9497 `HashToGroup` in VOPRF mode), so the
//! certified `yᵢ` are exactly the receiver's PSI request.

use crate::account::AccountId;
use crate::records::{
    CaPublicKey, CertifiedBlindedIds, LegacyValidationRecord, SignedLegacyValidationRecord, SignedValidationRecord,
    ValidationRecord, Validity,
};
use crate::x509::{TlsKey, TlsRoot, account_of_certificate, spki_of_certificate, verify_account_certificate};
use crate::{DropParams, Error, Result, identifier_hash, signed_message};
use rand_core::CryptoRngCore;
use std::collections::{HashMap, HashSet};
use tacit_crypto::oprf::Oprf;
use tacit_crypto::rng::shuffle;
use tacit_crypto::schnorr::DlogProof;
use tacit_crypto::sign::SigningKey;
use tacit_crypto::{PrimeGroup, SecretScalar};
use tacit_psi::{CertifiedSlot, ReceiverPrecomputation};

/// Default validity of issued certificates: one year.
pub const DEFAULT_VALIDITY_SECS: u64 = 365 * 24 * 3600;

/// The certification authority: an Ed25519 signing key for records, and an X.509
/// root for the account certificates used in mutual TLS.
#[derive(Debug)]
pub struct CertificateAuthority {
    key: SigningKey,
    tls_root: TlsRoot,
    validity_secs: u64,
}

/// One identifier in an enrolment request.
#[derive(Debug, Clone)]
pub struct EnrollmentEntry<G: PrimeGroup> {
    /// The normalised identifier (E.164 digits or lower-case e-mail).
    pub identifier: String,
    /// `y = α·H(identifier)`.
    pub blinded: G::Element,
    /// Proof of knowledge of `α`.
    pub proof: DlogProof<G>,
}

/// What a device sends to the CA.
#[derive(Debug, Clone)]
pub struct EnrollmentRequest<G: PrimeGroup> {
    /// The account.
    pub account: AccountId,
    /// The device's TLS public key (SubjectPublicKeyInfo, DER), for its account
    /// certificate.
    pub tls_public_key: Vec<u8>,
    /// The parameters (group and `m`).
    pub params: DropParams,
    /// One entry per identifier.
    pub entries: Vec<EnrollmentEntry<G>>,
    /// For an account the CA already registered: an Ed25519 signature over
    /// [`EnrollmentRequest::renewal_message`] with the key of the account's current
    /// certificate. `None` for a new account.
    pub renewal: Option<[u8; 64]>,
}

/// What the CA remembers of an account it certified (issue 9: the CA used to certify
/// any UUID a requester named, so an attacker could take over a victim's account).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisteredAccount {
    /// The TLS key (SubjectPublicKeyInfo, DER) of the account's current certificate.
    pub tls_public_key: Vec<u8>,
    /// When the current certificate expires (Unix seconds).
    pub not_after: u64,
    /// When the account was revoked, if it was.
    pub revoked: Option<u64>,
}

/// The CA's registry of accounts. A UUID that is registered is certified again only
/// for a request signed with the key of its current certificate; a revoked one never.
pub trait AccountRegistry {
    /// The account's entry, if registered.
    fn lookup(&mut self, account: &AccountId) -> Result<Option<RegisteredAccount>>;
    /// Records `account`'s new certificate key, atomically with the check that its
    /// current key is still `previous` (`None`: not registered). A concurrent
    /// enrolment that got there first makes this fail.
    fn register(
        &mut self,
        account: &AccountId,
        tls_public_key: &[u8],
        not_after: u64,
        previous: Option<&[u8]>,
    ) -> Result<()>;
}

/// An [`AccountRegistry`] in memory (tests, the demo, a CA that keeps no files). A
/// CA that serves devices keeps its registry in its store instead.
#[derive(Debug, Default)]
pub struct MemoryRegistry(HashMap<AccountId, RegisteredAccount>);

impl MemoryRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks `account` revoked at `now`; `false` if it is not registered.
    pub fn revoke(&mut self, account: &AccountId, now: u64) -> bool {
        match self.0.get_mut(account) {
            Some(a) => {
                a.revoked.get_or_insert(now);
                true
            }
            None => false,
        }
    }
}

impl AccountRegistry for MemoryRegistry {
    fn lookup(&mut self, account: &AccountId) -> Result<Option<RegisteredAccount>> {
        Ok(self.0.get(account).cloned())
    }

    fn register(
        &mut self,
        account: &AccountId,
        tls_public_key: &[u8],
        not_after: u64,
        previous: Option<&[u8]>,
    ) -> Result<()> {
        let current = self.0.get(account).map(|a| a.tls_public_key.as_slice());
        if current != previous {
            return Err(Error::EnrollmentRefused(format!(
                "account {account} changed during enrolment; try again"
            )));
        }
        self.0.insert(
            *account,
            RegisteredAccount {
                tls_public_key: tls_public_key.to_vec(),
                not_after,
                revoked: None,
            },
        );
        Ok(())
    }
}

impl AccountRegistry for tacit_store::Store {
    fn lookup(&mut self, account: &AccountId) -> Result<Option<RegisteredAccount>> {
        Ok(self
            .ca_account(&account.0)
            .map_err(store_err)?
            .map(|a| RegisteredAccount {
                tls_public_key: a.tls_public_key,
                not_after: a.not_after,
                revoked: a.revoked_unix,
            }))
    }

    fn register(
        &mut self,
        account: &AccountId,
        tls_public_key: &[u8],
        not_after: u64,
        previous: Option<&[u8]>,
    ) -> Result<()> {
        match self.ca_register(&account.0, tls_public_key, not_after, previous) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::EnrollmentRefused(format!(
                "account {account} changed during enrolment; try again"
            ))),
            Err(e) => Err(store_err(e)),
        }
    }
}

fn store_err(e: tacit_store::Error) -> Error {
    Error::InvalidParams(format!("CA registry: {e}"))
}

/// The message a CA signs to vouch for its TLS root (issue 9: a device used to store
/// whatever root the enrolment answer carried).
fn root_message(root_cert: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    signed_message("tls-root", &sha2::Sha256::digest(root_cert))
}

/// What the CA issues.
#[derive(Debug, Clone)]
pub struct Issued<G: PrimeGroup> {
    /// `Y_σ`, Eq. (5)–(6).
    pub blinded_ids: CertifiedBlindedIds<G>,
    /// `VR_σ,i` in the order of the request's entries, Eq. (3)–(4).
    pub records: Vec<SignedValidationRecord>,
    /// `VR_σ`, Eq. (1)–(2).
    pub legacy: SignedLegacyValidationRecord,
    /// The account certificate (X.509 DER) for mutual TLS.
    pub account_cert: Vec<u8>,
    /// The CA's root certificate (X.509 DER).
    pub root_cert: Vec<u8>,
    /// The CA's Ed25519 signature over the root certificate's SHA-256, so a device
    /// that trusts the CA key also knows the root is the CA's.
    pub root_signature: [u8; 64],
}

/// The statement context of an enrolment proof: account and slot, so a proof cannot be
/// moved to another account or identifier.
fn proof_context(account: &AccountId, identifier: &str) -> Vec<u8> {
    let mut c = b"tacit-drop-enroll-v1".to_vec();
    c.extend_from_slice(&account.0);
    c.extend_from_slice(identifier.as_bytes());
    c
}

/// Whether `id` is already in tacit's normal form.
fn is_normalised(id: &str) -> bool {
    if id.contains('@') {
        tacit_store::normalize_email(id).is_ok_and(|n| n == id)
    } else {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_digit())
            && tacit_store::normalize_phone(&format!("+{id}"), &tacit_store::NormalizeOptions::new())
                .is_ok_and(|n| n == id)
    }
}

impl CertificateAuthority {
    /// A new CA with random keys.
    pub fn generate(rng: &mut impl CryptoRngCore) -> Result<Self> {
        Ok(CertificateAuthority {
            key: SigningKey::generate(rng),
            tls_root: TlsRoot::generate()?,
            validity_secs: DEFAULT_VALIDITY_SECS,
        })
    }

    /// The CA of a stored 32-byte seed and TLS root.
    pub fn from_parts(seed: &[u8; 32], tls_root: TlsRoot) -> Self {
        CertificateAuthority {
            key: SigningKey::from_seed(seed),
            tls_root,
            validity_secs: DEFAULT_VALIDITY_SECS,
        }
    }

    /// The X.509 root.
    pub fn tls_root(&self) -> &TlsRoot {
        &self.tls_root
    }

    /// The seed, for storage (secret).
    pub fn to_seed(&self) -> zeroize::Zeroizing<[u8; 32]> {
        self.key.to_seed()
    }

    /// Signs `msg` (already domain-separated by the caller) with the CA key.
    pub(crate) fn sign_raw(&self, msg: &[u8]) -> [u8; 64] {
        self.key.sign(msg)
    }

    /// The trust root devices hold.
    pub fn public_key(&self) -> CaPublicKey {
        CaPublicKey(self.key.verifying_key())
    }

    /// Issues certificates valid for `secs` seconds from now on.
    pub fn with_validity(mut self, secs: u64) -> Self {
        self.validity_secs = secs;
        self
    }

    /// Processes an enrolment request at time `now`. `owns(identifier)` is the
    /// ownership decision (verified SMS / e-mail in a deployment; an operator's
    /// confirmation in tacit). `registry` holds the accounts this CA certified: a new
    /// UUID is registered to the request's TLS key; a registered one is certified
    /// again only for a request signed with its current certificate's key
    /// ([`DeviceEnrollment::renew`]), and a revoked one never.
    pub fn enroll<G: PrimeGroup>(
        &self,
        req: &EnrollmentRequest<G>,
        owns: &dyn Fn(&str) -> bool,
        registry: &mut dyn AccountRegistry,
        now: u64,
        rng: &mut impl CryptoRngCore,
    ) -> Result<Issued<G>> {
        let previous = match registry.lookup(&req.account)? {
            None if req.renewal.is_some() => {
                return Err(Error::EnrollmentRefused(format!(
                    "account {} is not registered with this CA; enrol it as a new account",
                    req.account
                )));
            }
            None => None,
            Some(a) if a.revoked.is_some() => {
                return Err(Error::EnrollmentRefused(format!("account {} is revoked", req.account)));
            }
            Some(a) => {
                let sig = req.renewal.ok_or_else(|| {
                    Error::EnrollmentRefused(format!(
                        "account {} is already registered; enrolling it again needs a request signed \
                         with the key of its current certificate",
                        req.account
                    ))
                })?;
                crate::x509::verify_with_spki(&a.tls_public_key, &req.renewal_message(), &sig).map_err(|_| {
                    Error::EnrollmentRefused(format!(
                        "the renewal of account {} is not signed with the key of its current certificate",
                        req.account
                    ))
                })?;
                Some(a.tls_public_key)
            }
        };
        let m = req.params.max_ids();
        req.params.psi.validate()?;
        if req.params.psi.group != G::ID {
            return Err(Error::EnrollmentRefused(format!(
                "request is for group {}",
                req.params.psi.group
            )));
        }
        if req.entries.is_empty() {
            return Err(Error::EnrollmentRefused("no identifiers to certify".into()));
        }
        if req.entries.len() > m {
            return Err(Error::EnrollmentRefused(format!(
                "{} identifiers; an account may certify at most {m}",
                req.entries.len()
            )));
        }
        let oprf = Oprf::<G>::new(req.params.psi.security.mode());
        let mut seen = HashSet::new();
        for (i, e) in req.entries.iter().enumerate() {
            if !is_normalised(&e.identifier) {
                return Err(Error::EnrollmentRefused(format!(
                    "identifier {} is not in normal form",
                    i + 1
                )));
            }
            if !seen.insert(e.identifier.as_str()) {
                return Err(Error::EnrollmentRefused(format!("identifier {} appears twice", i + 1)));
            }
            if !owns(&e.identifier) {
                return Err(Error::EnrollmentRefused(format!(
                    "ownership of identifier {} was not confirmed",
                    i + 1
                )));
            }
            let base = oprf.hash_to_group(e.identifier.as_bytes())?;
            e.proof
                .verify(&base, &e.blinded, &proof_context(&req.account, &e.identifier))
                .map_err(|_| Error::EnrollmentRefused(format!("proof for identifier {} does not verify", i + 1)))?;
        }
        let validity = Validity {
            not_before: now,
            not_after: now.saturating_add(self.validity_secs),
        };
        // Real yᵢ and CA-chosen random elements, in random order.
        let mut elements: Vec<G::Element> = req.entries.iter().map(|e| e.blinded).collect();
        while elements.len() < m {
            elements.push(G::mul_base(&G::random_scalar(rng)));
        }
        shuffle(rng, &mut elements);
        let blinded_ids = CertifiedBlindedIds::sign(req.account, elements, validity, &self.key);
        let records = req
            .entries
            .iter()
            .map(|e| {
                SignedValidationRecord::sign(
                    ValidationRecord {
                        account: req.account,
                        id_hash: identifier_hash(&e.identifier),
                        validity,
                    },
                    &self.key,
                )
            })
            .collect();
        let account_cert = self.tls_root.issue(&req.account, &req.tls_public_key, &validity)?;
        let root_cert = self.tls_root.cert_der();
        let root_signature = self.key.sign(&root_message(&root_cert));
        registry.register(
            &req.account,
            &req.tls_public_key,
            validity.not_after,
            previous.as_deref(),
        )?;
        let legacy = SignedLegacyValidationRecord::sign(
            LegacyValidationRecord {
                account: req.account,
                id_hashes: req.entries.iter().map(|e| identifier_hash(&e.identifier)).collect(),
                validity,
            },
            &self.key,
        );
        Ok(Issued {
            blinded_ids,
            records,
            legacy,
            account_cert,
            root_cert,
            root_signature,
        })
    }
}

/// A device's side of enrolment: holds the secrets `αᵢ` until the CA answers.
#[derive(Debug)]
pub struct DeviceEnrollment<G: PrimeGroup> {
    alphas: Vec<SecretScalar<G>>,
    tls_key: TlsKey,
    request: EnrollmentRequest<G>,
}

impl<G: PrimeGroup> DeviceEnrollment<G> {
    /// A new account enrolling `identifiers` (already normalised).
    pub fn new(params: &DropParams, identifiers: &[&str], rng: &mut impl CryptoRngCore) -> Result<Self> {
        Self::for_account(params, AccountId::random(rng), identifiers, rng)
    }

    /// Enrols `identifiers` again for the account of `current` (new keys, new
    /// certificates), signing the request with the key of its current certificate so
    /// the CA knows the request comes from the account's holder.
    pub fn renew(
        current: &DropIdentity<G>,
        params: &DropParams,
        identifiers: &[&str],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        let mut e = Self::for_account(params, current.account, identifiers, rng)?;
        let sig = current.tls_key.sign(&e.request.renewal_message())?;
        e.request.renewal = Some(sig);
        Ok(e)
    }

    /// Enrols `identifiers` under a UUID of the caller's choosing, unsigned: the CA
    /// refuses this for a registered account. Use [`DeviceEnrollment::new`] for a new
    /// account and [`DeviceEnrollment::renew`] for an existing one.
    pub fn for_account(
        params: &DropParams,
        account: AccountId,
        identifiers: &[&str],
        rng: &mut impl CryptoRngCore,
    ) -> Result<Self> {
        params.psi.validate()?;
        if identifiers.len() > params.max_ids() {
            return Err(Error::InvalidParams(format!(
                "{} identifiers; the bound m is {}",
                identifiers.len(),
                params.max_ids()
            )));
        }
        let oprf = Oprf::<G>::new(params.psi.security.mode());
        let mut alphas = Vec::new();
        let mut entries = Vec::new();
        for id in identifiers {
            let alpha = SecretScalar::<G>::random(rng);
            let base = oprf.hash_to_group(id.as_bytes())?;
            let proof = DlogProof::prove(&base, &alpha, &proof_context(&account, id), rng)?;
            entries.push(EnrollmentEntry {
                identifier: id.to_string(),
                blinded: G::mul(&base, alpha.expose()),
                proof,
            });
            alphas.push(alpha);
        }
        let tls_key = TlsKey::generate()?;
        Ok(DeviceEnrollment {
            alphas,
            request: EnrollmentRequest {
                account,
                tls_public_key: tls_key.spki_der()?,
                params: *params,
                entries,
                renewal: None,
            },
            tls_key,
        })
    }

    /// The request to send to the CA.
    pub fn request(&self) -> &EnrollmentRequest<G> {
        &self.request
    }

    /// Checks what the CA issued and assembles the device's identity.
    pub fn finish(self, issued: Issued<G>, ca: &CaPublicKey, now: u64) -> Result<DropIdentity<G>> {
        let req = &self.request;
        let m = req.params.max_ids();
        issued.blinded_ids.verify(ca, &req.account, now, m)?;
        issued.legacy.verify(ca, &req.account, now)?;
        if issued.records.len() != req.entries.len() {
            return Err(Error::BadCertificate("set of validation records"));
        }
        for (r, e) in issued.records.iter().zip(&req.entries) {
            let rec = r.verify(ca, &req.account, now)?;
            if rec.id_hash != identifier_hash(&e.identifier) {
                return Err(Error::BadCertificate("validation record"));
            }
        }
        ca.0.verify(&root_message(&issued.root_cert), &issued.root_signature)
            .map_err(|_| Error::BadCertificate("TLS root certificate"))?;
        if account_of_certificate(&issued.account_cert)? != req.account
            || spki_of_certificate(&issued.account_cert)? != req.tls_public_key
        {
            return Err(Error::BadCertificate("account certificate"));
        }
        verify_account_certificate(&issued.account_cert, &issued.root_cert, now)?;
        // Map certified slots back to our αᵢ: each yᵢ must appear exactly once.
        let mut used = vec![false; req.entries.len()];
        let mut slots = Vec::with_capacity(m);
        for y in &issued.blinded_ids.elements {
            match req.entries.iter().position(|e| e.blinded == *y) {
                Some(i) if !used[i] => {
                    used[i] = true;
                    slots.push(CertifiedSlot::Real {
                        input: req.entries[i].identifier.as_bytes().to_vec(),
                        blind: self.alphas[i].clone(),
                    });
                }
                Some(_) => return Err(Error::BadCertificate("certified blinded identifiers (duplicate)")),
                None => slots.push(CertifiedSlot::Dummy { blinded: *y }),
            }
        }
        if used.iter().any(|u| !u) {
            return Err(Error::BadCertificate("certified blinded identifiers (one is missing)"));
        }
        let precomputation = ReceiverPrecomputation::from_certified_slots(&req.params.psi, slots)?;
        Ok(DropIdentity {
            account: req.account,
            params: req.params,
            identifiers: req.entries.iter().map(|e| e.identifier.clone()).collect(),
            precomputation,
            blinded_ids: issued.blinded_ids,
            records: issued.records,
            legacy: issued.legacy,
            tls_key: self.tls_key,
            account_cert: issued.account_cert,
            root_cert: issued.root_cert,
        })
    }
}

/// Everything a device holds after enrolment. The identifiers are wiped on drop (the
/// `αᵢ` by the precomputation's `SecretScalar`s, the TLS key by [`TlsKey`]); `Debug`
/// shows the account and the parameters only.
#[derive(Clone)]
pub struct DropIdentity<G: PrimeGroup> {
    /// The account (in the TLS certificate).
    pub account: AccountId,
    /// The parameters.
    pub params: DropParams,
    identifiers: Vec<String>,
    precomputation: ReceiverPrecomputation<G>,
    /// `Y_σ`.
    pub blinded_ids: CertifiedBlindedIds<G>,
    /// `VR_σ,i`, one per identifier, in identifier order.
    pub records: Vec<SignedValidationRecord>,
    /// `VR_σ` (legacy flow only).
    pub legacy: SignedLegacyValidationRecord,
    /// The TLS key of the account certificate.
    pub tls_key: TlsKey,
    /// The account certificate (X.509 DER).
    pub account_cert: Vec<u8>,
    /// The CA's root certificate (X.509 DER): the TLS trust anchor.
    pub root_cert: Vec<u8>,
}

impl<G: PrimeGroup> core::fmt::Debug for DropIdentity<G> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DropIdentity")
            .field("account", &self.account)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl<G: PrimeGroup> Drop for DropIdentity<G> {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.identifiers);
    }
}

impl<G: PrimeGroup> DropIdentity<G> {
    /// The own identifiers, normalised.
    pub fn identifiers(&self) -> &[String] {
        &self.identifiers
    }

    /// The PSI receiver precomputation whose request is exactly `Y_σ`.
    pub fn precomputation(&self) -> &ReceiverPrecomputation<G> {
        &self.precomputation
    }

    /// The individual validation record of identifier `i`.
    pub fn record_for(&self, identifier: &[u8]) -> Option<&SignedValidationRecord> {
        let i = self.identifiers.iter().position(|x| x.as_bytes() == identifier)?;
        self.records.get(i)
    }
}

// ---------------------------------------------------------------------------
// Encodings (docs/wire.md): enrolment travels between processes or as files, and the
// identity is kept in the store.

/// Message-type tags of enrolment and stored identities.
pub mod tags {
    /// [`super::EnrollmentRequest`], version 2 (with the renewal signature; version 1
    /// was 0x0230 and is refused).
    pub const ENROLLMENT_REQUEST: u16 = 0x0233;
    /// [`super::Issued`], version 2 (with the signed TLS root; version 1 was 0x0231
    /// and is refused).
    pub const ISSUED: u16 = 0x0234;
    /// [`super::DropIdentity`] (contains the blinding scalars: keep it in the store).
    pub const IDENTITY: u16 = 0x0232;
}

/// Longest identifier accepted.
pub const MAX_IDENTIFIER: usize = 320;
/// Longest certificate or key (DER) accepted.
pub const MAX_DER: usize = 8192;

use tacit_wire::{Reader, Writer};

fn read_params(r: &mut Reader<'_>) -> Result<DropParams> {
    let psi = tacit_psi::PsiParams::decode(r)?;
    if psi.security != tacit_psi::Security::Malicious {
        return Err(Error::InvalidParams(
            "PrivateDrop runs the malicious-secure PSI only".into(),
        ));
    }
    Ok(DropParams { psi })
}

impl<G: PrimeGroup> EnrollmentRequest<G> {
    /// What a renewal signs: the whole request but the signature, domain-separated.
    pub fn renewal_message(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode_body(&mut w);
        signed_message("renewal", &w.into_bytes())
    }

    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::ENROLLMENT_REQUEST);
        self.encode_body(&mut w);
        match &self.renewal {
            None => w.put_u8(0),
            Some(sig) => {
                w.put_u8(1);
                w.put_fixed(sig);
            }
        }
        w.into_bytes()
    }

    fn encode_body(&self, w: &mut Writer) {
        self.account.encode(w);
        w.put_var_bytes(&self.tls_public_key);
        self.params.psi.encode(w);
        w.put_count(self.entries.len());
        for e in &self.entries {
            w.put_str(&e.identifier);
            w.put_fixed(G::element_bytes(&e.blinded).as_ref());
            w.put_fixed(&e.proof.to_bytes());
        }
    }

    /// Decodes a request from an untrusted device.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::ENROLLMENT_REQUEST, "enrolment request")?;
        let account = AccountId::decode(&mut r)?;
        let tls_public_key = r.var_bytes("TLS public key", MAX_DER)?.to_vec();
        let params = read_params(&mut r)?;
        params.psi.expect_group_id(G::ID)?;
        let n = r.count("identifiers", params.max_ids(), 4 + G::ELEMENT_LEN + 2 * G::SCALAR_LEN)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let identifier = r.str("identifier", MAX_IDENTIFIER)?.to_string();
            let blinded = G::decode_element(r.fixed("blinded identifier", G::ELEMENT_LEN)?)?;
            let proof = DlogProof::from_bytes(r.fixed("proof", 2 * G::SCALAR_LEN)?)?;
            entries.push(EnrollmentEntry {
                identifier,
                blinded,
                proof,
            });
        }
        let renewal = match r.u8()? {
            0 => None,
            1 => Some(r.array("renewal signature")?),
            x => return Err(tacit_wire::Error::invalid("renewal flag", format!("{x} is not 0 or 1")).into()),
        };
        r.finish()?;
        Ok(EnrollmentRequest {
            account,
            tls_public_key,
            params,
            entries,
            renewal,
        })
    }
}

impl<G: PrimeGroup> Issued<G> {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::ISSUED);
        self.blinded_ids.encode(&mut w);
        w.put_count(self.records.len());
        for r in &self.records {
            r.encode(&mut w);
        }
        self.legacy.encode(&mut w);
        w.put_var_bytes(&self.account_cert);
        w.put_var_bytes(&self.root_cert);
        w.put_fixed(&self.root_signature);
        w.into_bytes()
    }

    /// Decodes what a CA issued for parameters `params`.
    pub fn from_bytes(b: &[u8], params: &DropParams) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::ISSUED, "issued certificates")?;
        let blinded_ids = CertifiedBlindedIds::decode(&mut r, params.max_ids())?;
        let n = r.count("validation records", params.max_ids(), 1)?;
        let mut records = Vec::with_capacity(n);
        for _ in 0..n {
            records.push(SignedValidationRecord::decode(&mut r)?);
        }
        let legacy = SignedLegacyValidationRecord::decode(&mut r)?;
        let account_cert = r.var_bytes("account certificate", MAX_DER)?.to_vec();
        let root_cert = r.var_bytes("root certificate", MAX_DER)?.to_vec();
        let root_signature = r.array("root signature")?;
        r.finish()?;
        Ok(Issued {
            blinded_ids,
            records,
            legacy,
            account_cert,
            root_cert,
            root_signature,
        })
    }
}

impl<G: PrimeGroup> DeviceEnrollment<G> {
    /// Encoding of the pending enrolment (contains the secrets `αᵢ`), so an offline
    /// enrolment can wait for the CA's answer.
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let mut w = Writer::new();
        w.put_var_bytes(&self.request.to_bytes());
        w.put_var_bytes(self.tls_key.pkcs8_der());
        w.put_count(self.alphas.len());
        for a in &self.alphas {
            w.put_fixed(&a.to_bytes());
        }
        zeroize::Zeroizing::new(w.into_bytes())
    }

    /// Decodes a pending enrolment.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        let request = EnrollmentRequest::<G>::from_bytes(r.var_bytes("enrolment request", 1 << 20)?)?;
        let tls_key = TlsKey::from_pkcs8(r.var_bytes("TLS key", MAX_DER)?)?;
        let n = r.count("blinding scalars", request.entries.len(), G::SCALAR_LEN)?;
        if n != request.entries.len() {
            return Err(Error::InvalidParams("pending enrolment is inconsistent".into()));
        }
        let mut alphas = Vec::with_capacity(n);
        for _ in 0..n {
            alphas.push(SecretScalar::from_bytes(r.fixed("blinding scalar", G::SCALAR_LEN)?)?);
        }
        r.finish()?;
        Ok(DeviceEnrollment {
            alphas,
            tls_key,
            request,
        })
    }
}

impl<G: PrimeGroup> DropIdentity<G> {
    /// Encoding for the store (contains the blinding scalars).
    pub fn to_bytes(&self) -> zeroize::Zeroizing<Vec<u8>> {
        let mut w = Writer::new();
        w.put_envelope(tags::IDENTITY);
        self.account.encode(&mut w);
        self.params.psi.encode(&mut w);
        w.put_count(self.identifiers.len());
        for i in &self.identifiers {
            w.put_str(i);
        }
        w.put_var_bytes(&self.precomputation.to_bytes());
        self.blinded_ids.encode(&mut w);
        w.put_count(self.records.len());
        for r in &self.records {
            r.encode(&mut w);
        }
        self.legacy.encode(&mut w);
        w.put_var_bytes(self.tls_key.pkcs8_der());
        w.put_var_bytes(&self.account_cert);
        w.put_var_bytes(&self.root_cert);
        zeroize::Zeroizing::new(w.into_bytes())
    }

    /// Decodes a stored identity.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::IDENTITY, "stored identity")?;
        let account = AccountId::decode(&mut r)?;
        let params = read_params(&mut r)?;
        params.psi.expect_group_id(G::ID)?;
        let n = r.count("identifiers", params.max_ids(), 4)?;
        let mut identifiers = Vec::with_capacity(n);
        for _ in 0..n {
            identifiers.push(r.str("identifier", MAX_IDENTIFIER)?.to_string());
        }
        let precomputation = ReceiverPrecomputation::from_bytes(r.var_bytes("precomputation", 1 << 20)?)?;
        let blinded_ids = CertifiedBlindedIds::decode(&mut r, params.max_ids())?;
        let nr = r.count("validation records", params.max_ids(), 1)?;
        let mut records = Vec::with_capacity(nr);
        for _ in 0..nr {
            records.push(SignedValidationRecord::decode(&mut r)?);
        }
        let legacy = SignedLegacyValidationRecord::decode(&mut r)?;
        let tls_key = TlsKey::from_pkcs8(r.var_bytes("TLS key", MAX_DER)?)?;
        let account_cert = r.var_bytes("account certificate", MAX_DER)?.to_vec();
        let root_cert = r.var_bytes("root certificate", MAX_DER)?.to_vec();
        r.finish()?;
        if records.len() != identifiers.len() || precomputation.request_elements() != blinded_ids.elements {
            return Err(Error::InvalidParams("stored identity is inconsistent".into()));
        }
        Ok(DropIdentity {
            account,
            params,
            identifiers,
            precomputation,
            blinded_ids,
            records,
            legacy,
            tls_key,
            account_cert,
            root_cert,
        })
    }
}
