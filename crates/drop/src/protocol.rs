//! PrivateDrop's authentication (paper Fig. 4 and §5.3): DO2 → DO3 interleaved in
//! three messages carried by the `StartPSI` and `FinishPSI` exchanges, then `Ask`.
//!
//! ```text
//! AirDrop sender (HTTPS client)                         AirDrop receiver (HTTPS server)
//!   PSI sender in DO2 (address book),                     PSI receiver in DO2 (own IDs),
//!   PSI receiver in DO3 (own IDs)                         PSI sender in DO3 (address book)
//!
//!   StartPSI request: parameters            ─────────▶
//!        ‖ Y_σ(sender)  (its DO3 request)               verify Y_σ (CA, UUID = TLS peer, expiry);
//!                                           ◀─────────  M1 = Y_σ(receiver)          (its DO2 request)
//!   verify Y_σ (CA, UUID = TLS peer, expiry)            [prepare the DO3 answer meanwhile; kept back]
//!   FinishPSI request: M2 = DO2 response    ─────────▶
//!        (answers, proof, u's of AB)
//!                                                       DO2 result = which of my IDs the sender
//!                                                       knows; pick one at random
//!                                           ◀─────────  M3 = DO3 response ‖ [VR_σ,i if DO2 matched]
//!   DO3 result = which of my IDs the receiver knows;
//!   verify VR_σ,i (CA, UUID, hash ∈ my address book)
//!   Ask: [VR_σ,i if DO3 matched] ‖ offer    ─────────▶
//!                                                       verify VR_σ,i; contacts-only mode refuses
//!                                                       a sender it cannot identify as a contact
//! ```
//!
//! The PSI requests are not sent separately: a party's request *is* its certified
//! vector `Y_σ`, so an uncertified input cannot be smuggled in. Each validation record
//! is released only to a peer that proved (through the PSI) to already hold that
//! identifier, and only one record, chosen at random among the matches (§5.3).

use crate::account::AccountId;
use crate::ca::DropIdentity;
use crate::records::{CaPublicKey, CertifiedBlindedIds, SignedValidationRecord};
use crate::{DropParams, Error, Result, identifier_hash};
use rand_core::CryptoRngCore;
use std::collections::HashMap;
use std::sync::Arc;
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::uniform_below;
use tacit_psi::two_way::{Initiator, InitiatorAwaitingM3, Responder, ResponderWithRequest};
use tacit_psi::{Intersection, PsiParams, Response, Sender};
use tacit_wire::{Reader, Writer};

/// Message-type tags (registered in `docs/wire.md`).
pub mod tags {
    /// [`super::StartPsiRequest`].
    pub const START_PSI_REQUEST: u16 = 0x0210;
    /// [`super::StartPsiResponse`] (M1).
    pub const START_PSI_RESPONSE: u16 = 0x0211;
    /// [`super::FinishPsiRequest`] (M2).
    pub const FINISH_PSI_REQUEST: u16 = 0x0212;
    /// [`super::FinishPsiResponse`] (M3), version 2: a record slot of fixed size and
    /// a padded device name (issue 32). Version 1 (`0x0213`) is refused.
    pub const FINISH_PSI_RESPONSE: u16 = 0x0215;
    /// [`super::Ask`], version 2: a record slot of fixed size and a padded device name
    /// (issue 32). Version 1 (`0x0214`) is refused.
    pub const ASK: u16 = 0x0216;
}

/// Who a receiver lets authenticate (AirDrop's setting, §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Discoverability {
    /// Only senders that prove to be in the receiver's address book (the default).
    ContactsOnly,
    /// Anyone; non-contacts are shown by device name only.
    Everyone,
    /// Nobody.
    Off,
}

/// The normalised address book with `SHA-256` of each entry, to recognise validation
/// records.
#[derive(Debug, Clone, Default)]
pub struct AddressBook {
    entries: Vec<String>,
    by_hash: HashMap<[u8; 32], usize>,
}

impl AddressBook {
    /// From normalised identifiers (duplicates ignored).
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Self {
        let mut book = AddressBook::default();
        for e in entries {
            let h = identifier_hash(e.as_ref());
            if let std::collections::hash_map::Entry::Vacant(v) = book.by_hash.entry(h) {
                v.insert(book.entries.len());
                book.entries.push(e.as_ref().to_string());
            }
        }
        book
    }

    /// The entries, in insertion order.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// The entry whose `SHA-256` is `hash`.
    pub fn by_hash(&self, hash: &[u8; 32]) -> Option<&str> {
        self.by_hash.get(hash).map(|&i| self.entries[i].as_str())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A fresh key and precomputation over the book: the PSI sender of one session
    /// (PrivateDrop §4.4; made ahead of the session, off the online path).
    pub fn fresh_sender<G: PrimeGroup>(&self, params: &DropParams) -> Result<Sender<G>> {
        let mut rng = tacit_crypto::rng::SecureRng::from_os();
        let key = tacit_psi::SenderKey::<G>::generate(&mut rng, 1);
        let pre = tacit_psi::SenderPrecomputation::compute(
            &params.psi,
            &key,
            &self.entries,
            tacit_psi::Reuse::FreshPerSession,
            &mut rng,
        )?;
        Ok(Sender::new(&params.psi, key, pre)?)
    }
}

/// What a party concluded about its peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peer {
    /// A mutual contact, identified by the entry of our address book its validation
    /// record names.
    Contact {
        /// The matching address-book entry.
        identifier: String,
    },
    /// Not authenticated: shown by device name only.
    Unknown,
}

/// Everything both parties need besides their own messages.
#[derive(Debug, Clone)]
pub struct Context<G: PrimeGroup> {
    /// Our enrolled identity.
    pub identity: Arc<DropIdentity<G>>,
    /// Our address book.
    pub book: Arc<AddressBook>,
    /// The trusted CA.
    pub ca: CaPublicKey,
    /// The account in the peer's TLS certificate.
    pub peer: AccountId,
    /// The current time (Unix seconds).
    pub now: u64,
    /// Our device name (shown to peers that cannot identify us as a contact).
    pub device_name: String,
}

/// Checks a validation record the peer sent and looks its identifier up in our book.
fn identify<G: PrimeGroup>(ctx: &Context<G>, record: Option<&SignedValidationRecord>) -> Result<Peer> {
    match record {
        None => Ok(Peer::Unknown),
        Some(r) => {
            let rec = r.verify(&ctx.ca, &ctx.peer, ctx.now)?;
            Ok(match ctx.book.by_hash(&rec.id_hash) {
                Some(id) => Peer::Contact {
                    identifier: id.to_string(),
                },
                // A signed record for an identifier we do not hold: the peer showed it to
                // a non-holder, which the protocol never does; treat as unauthenticated.
                None => Peer::Unknown,
            })
        }
    }
}

/// Picks the record of one matched identifier at random (§5.3).
fn pick_record<G: PrimeGroup>(
    identity: &DropIdentity<G>,
    matched: &Intersection,
    rng: &mut impl CryptoRngCore,
) -> Option<SignedValidationRecord> {
    if matched.is_empty() {
        return None;
    }
    let i = uniform_below(rng, matched.len() as u64) as usize;
    identity.record_for(&matched.items()[i]).cloned()
}

// ---------------------------------------------------------------------------
// Messages

/// `StartPSI` request: the parameters the sender runs with and its certified blinded
/// identifiers `Y_σ` (its DO3 request; in the paper it travels in M2, see
/// `docs/drop.md`: moved here so that the receiver can prepare its DO3 answer while
/// the sender computes DO2; the answer is still released only in M3).
#[derive(Debug, Clone, PartialEq)]
pub struct StartPsiRequest<G: PrimeGroup> {
    /// PSI parameters.
    pub params: PsiParams,
    /// `Y_σ` of the sender.
    pub blinded_ids: CertifiedBlindedIds<G>,
}

/// M1: the receiver's certified blinded identifiers (its DO2 request).
#[derive(Debug, Clone, PartialEq)]
pub struct StartPsiResponse<G: PrimeGroup> {
    /// `Y_σ` of the receiver.
    pub blinded_ids: CertifiedBlindedIds<G>,
}

/// M2: the sender's DO2 response.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishPsiRequest<G: PrimeGroup> {
    /// DO2 response.
    pub response: Response<G>,
}

/// M3: the receiver's DO3 response and, if DO2 matched, one validation record; and
/// the receiver's device name (AirDrop shows non-contacts by device name). The record
/// travels in a slot of fixed size ([`RECORD_SLOT_LEN`]) and the name padded
/// ([`NAME_SLOT_LEN`]), so M3 has one length whether or not DO2 matched.
#[derive(Debug, Clone, PartialEq)]
pub struct FinishPsiResponse<G: PrimeGroup> {
    /// DO3 response.
    pub response: Response<G>,
    /// `VR_σ,i` of one identifier of the receiver that the sender knows.
    pub record: Option<SignedValidationRecord>,
    /// The receiver's device name.
    pub receiver_name: String,
}

/// `Ask`: the sender's validation record (if DO3 matched, in a slot of fixed size),
/// its padded device name, and what it offers: its length depends on the offer only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// `VR_σ,i` of one identifier of the sender that the receiver knows.
    pub record: Option<SignedValidationRecord>,
    /// The sender's device name.
    pub sender_name: String,
    /// The offered files.
    pub files: Vec<FileOffer>,
}

/// One offered file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOffer {
    /// File name (no directories).
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    /// Media type.
    pub media_type: String,
    /// SHA-256 of the content.
    pub sha256: [u8; 32],
}

/// Longest device name, in bytes of UTF-8.
pub const MAX_NAME: usize = 255;

/// Encoded size of a signed individual validation record: envelope (3), account (16),
/// `SHA-256(IDᵢ)` (32), validity (16), signature (64).
pub const RECORD_LEN: usize = 3 + 16 + 32 + 16 + 64;

/// Encoded size of the record slot of M3 and `Ask`: a flag and [`RECORD_LEN`] bytes,
/// whether or not a record is in it (issue 32: TLS does not hide lengths, so a slot
/// that is there only on a match told an observer who is in whose address book).
pub const RECORD_SLOT_LEN: usize = 1 + RECORD_LEN;

/// Encoded size of a device name: its length and the name, zero-padded to
/// [`MAX_NAME`] bytes (so the name's length does not show in the message's).
pub const NAME_SLOT_LEN: usize = 1 + MAX_NAME;
/// Most files per `Ask`.
pub const MAX_FILES: usize = 1024;

fn put_params(w: &mut Writer, p: &PsiParams) {
    w.put_u8(p.group.code());
    w.put_u32(p.max_receiver);
    w.put_u32(p.max_sender);
    w.put_u16(p.lambda);
}

fn expect_params(r: &mut Reader<'_>, ours: &PsiParams) -> Result<()> {
    let g = r.u8()?;
    let (m, n, l) = (r.u32()?, r.u32()?, r.u16()?);
    if g != ours.group.code() || m != ours.max_receiver || n != ours.max_sender || l != ours.lambda {
        return Err(tacit_psi::Error::ParamsMismatch {
            ours: ours.to_string(),
            theirs: format!("group code {g}, m = {m}, n = {n}, λ = {l}"),
        }
        .into());
    }
    Ok(())
}

/// The record slot: `u8 flag ‖ record` with a record, `u8 0 ‖ RECORD_LEN zero bytes`
/// without: [`RECORD_SLOT_LEN`] bytes either way.
fn put_record(w: &mut Writer, r: &Option<SignedValidationRecord>) {
    match r {
        Some(r) => {
            let mut inner = Writer::with_capacity(RECORD_LEN);
            r.encode(&mut inner);
            let inner = inner.into_bytes();
            debug_assert_eq!(inner.len(), RECORD_LEN);
            w.put_u8(1);
            w.put_fixed(&inner);
        }
        None => {
            w.put_u8(0);
            w.put_fixed(&[0u8; RECORD_LEN]);
        }
    }
}

fn read_record(r: &mut Reader<'_>) -> Result<Option<SignedValidationRecord>> {
    let present = r.bool("record flag")?;
    let slot: [u8; RECORD_LEN] = r.array("record slot")?;
    if !present {
        if slot.iter().any(|&b| b != 0) {
            return Err(tacit_wire::Error::invalid("record slot", "an empty slot must be zero").into());
        }
        return Ok(None);
    }
    let mut inner = Reader::new(&slot);
    let record = SignedValidationRecord::decode(&mut inner)?;
    inner.finish()?;
    Ok(Some(record))
}

/// A device name in its slot: `u8 len ‖ name ‖ zeros`, [`NAME_SLOT_LEN`] bytes. A name
/// longer than [`MAX_NAME`] bytes is cut at a character boundary.
fn put_name(w: &mut Writer, name: &str) {
    let mut end = name.len().min(MAX_NAME);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    let mut slot = [0u8; NAME_SLOT_LEN];
    slot[0] = end as u8;
    slot[1..1 + end].copy_from_slice(&name.as_bytes()[..end]);
    w.put_fixed(&slot);
}

fn read_name(r: &mut Reader<'_>, what: &'static str) -> Result<String> {
    let slot: [u8; NAME_SLOT_LEN] = r.array(what)?;
    let len = slot[0] as usize;
    if slot[1 + len..].iter().any(|&b| b != 0) {
        return Err(tacit_wire::Error::invalid(what, "the padding after the name must be zero").into());
    }
    let name = core::str::from_utf8(&slot[1..1 + len]).map_err(|_| tacit_wire::Error::invalid(what, "not UTF-8"))?;
    Ok(name.to_string())
}

impl<G: PrimeGroup> StartPsiRequest<G> {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::START_PSI_REQUEST);
        put_params(&mut w, &self.params);
        self.blinded_ids.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes and checks the parameters equal ours (at most `m` blinded identifiers).
    pub fn from_bytes(b: &[u8], params: &DropParams) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::START_PSI_REQUEST, "StartPSI request")?;
        expect_params(&mut r, &params.psi)?;
        let blinded_ids = CertifiedBlindedIds::decode(&mut r, params.max_ids())?;
        r.finish()?;
        Ok(StartPsiRequest {
            params: params.psi,
            blinded_ids,
        })
    }
}

impl<G: PrimeGroup> StartPsiResponse<G> {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::START_PSI_RESPONSE);
        self.blinded_ids.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes (at most `m` blinded identifiers).
    pub fn from_bytes(b: &[u8], params: &DropParams) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::START_PSI_RESPONSE, "StartPSI response")?;
        let blinded_ids = CertifiedBlindedIds::decode(&mut r, params.max_ids())?;
        r.finish()?;
        Ok(StartPsiResponse { blinded_ids })
    }
}

impl<G: PrimeGroup> FinishPsiRequest<G> {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::FINISH_PSI_REQUEST);
        self.response.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes against our parameters.
    pub fn from_bytes(b: &[u8], params: &DropParams) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::FINISH_PSI_REQUEST, "FinishPSI request")?;
        let response = Response::decode(&mut r, &params.psi)?;
        r.finish()?;
        Ok(FinishPsiRequest { response })
    }
}

impl<G: PrimeGroup> FinishPsiResponse<G> {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::FINISH_PSI_RESPONSE);
        self.response.encode(&mut w);
        put_record(&mut w, &self.record);
        put_name(&mut w, &self.receiver_name);
        w.into_bytes()
    }

    /// Decodes against our parameters.
    pub fn from_bytes(b: &[u8], params: &DropParams) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::FINISH_PSI_RESPONSE, "FinishPSI response")?;
        let response = Response::decode(&mut r, &params.psi)?;
        let record = read_record(&mut r)?;
        let receiver_name = read_name(&mut r, "receiver name")?;
        r.finish()?;
        Ok(FinishPsiResponse {
            response,
            record,
            receiver_name,
        })
    }
}

impl Ask {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::ASK);
        put_record(&mut w, &self.record);
        put_name(&mut w, &self.sender_name);
        w.put_count(self.files.len());
        for f in &self.files {
            w.put_str(&f.name);
            w.put_u64(f.size);
            w.put_str(&f.media_type);
            w.put_fixed(&f.sha256);
        }
        w.into_bytes()
    }

    /// Decodes.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::ASK, "Ask")?;
        let record = read_record(&mut r)?;
        let sender_name = read_name(&mut r, "sender name")?;
        let n = r.count("files", MAX_FILES, 4 + 8 + 4 + 32)?;
        let mut files = Vec::with_capacity(n);
        for _ in 0..n {
            files.push(FileOffer {
                name: r.str("file name", MAX_NAME)?.to_string(),
                size: r.u64()?,
                media_type: r.str("media type", MAX_NAME)?.to_string(),
                sha256: r.array("file hash")?,
            });
        }
        r.finish()?;
        Ok(Ask {
            record,
            sender_name,
            files,
        })
    }
}

// ---------------------------------------------------------------------------
// The AirDrop sender

/// The AirDrop sender before `StartPSI`.
#[derive(Debug)]
pub struct DropSender;

/// The sender waiting for M1.
#[derive(Debug)]
pub struct SenderAwaitingM1<G: PrimeGroup> {
    ctx: Context<G>,
    book_sender: Sender<G>,
}

/// The sender waiting for M3.
#[derive(Debug)]
pub struct SenderAwaitingM3<G: PrimeGroup> {
    ctx: Context<G>,
    do3: InitiatorAwaitingM3<G>,
}

/// What the sender knows after authentication.
#[derive(Debug, Clone)]
pub struct SenderOutcome {
    /// The receiver, if it proved to be a mutual contact.
    pub receiver: Peer,
    /// Our own identifiers the receiver holds (DO3 result).
    pub known_by_receiver: Vec<String>,
    /// Our validation record to put in `Ask` (only if DO3 matched).
    pub ask_record: Option<SignedValidationRecord>,
    /// The receiver's device name.
    pub receiver_name: String,
}

impl DropSender {
    /// Starts: `book_sender` is the PSI sender over our address book (its
    /// precomputation made ahead of time).
    pub fn start<G: PrimeGroup>(ctx: Context<G>, book_sender: Sender<G>) -> Result<(SenderAwaitingM1<G>, Vec<u8>)> {
        if *book_sender.params() != ctx.identity.params.psi {
            return Err(Error::InvalidParams(
                "address-book precomputation made for other parameters".into(),
            ));
        }
        let start = StartPsiRequest {
            params: ctx.identity.params.psi,
            blinded_ids: ctx.identity.blinded_ids.clone(),
        };
        Ok((SenderAwaitingM1 { ctx, book_sender }, start.to_bytes()))
    }
}

impl<G: PrimeGroup> SenderAwaitingM1<G> {
    /// Handles M1: verifies the receiver's certified inputs, answers DO2 and sends our
    /// DO3 request (M2).
    pub fn on_m1(self, m1: &[u8], rng: &mut impl CryptoRngCore) -> Result<(SenderAwaitingM3<G>, Vec<u8>)> {
        let params = self.ctx.identity.params;
        let m1 = StartPsiResponse::<G>::from_bytes(m1, &params)?;
        m1.blinded_ids
            .verify(&self.ctx.ca, &self.ctx.peer, self.ctx.now, params.max_ids())?;
        let request = m1.blinded_ids.as_request(&params.psi);
        let initiator = Initiator::new(self.book_sender, self.ctx.identity.precomputation().clone())?;
        let (do3, bundle) = initiator.on_m1_typed(&request, rng)?;
        if bundle.request.blinded != self.ctx.identity.blinded_ids.elements {
            return Err(Error::UncertifiedInput);
        }
        let m2 = FinishPsiRequest {
            response: bundle.response,
        };
        Ok((SenderAwaitingM3 { ctx: self.ctx, do3 }, m2.to_bytes()))
    }
}

impl<G: PrimeGroup> SenderAwaitingM3<G> {
    /// Handles M3: the DO3 result and the receiver's identity.
    pub fn on_m3(self, m3: &[u8], rng: &mut impl CryptoRngCore) -> Result<SenderOutcome> {
        let m3 = FinishPsiResponse::<G>::from_bytes(m3, &self.ctx.identity.params)?;
        let known = self.do3.on_m3_typed(&m3.response)?;
        let receiver = identify(&self.ctx, m3.record.as_ref())?;
        Ok(SenderOutcome {
            receiver,
            known_by_receiver: known
                .items()
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect(),
            ask_record: pick_record(&self.ctx.identity, &known, rng),
            receiver_name: m3.receiver_name,
        })
    }
}

// ---------------------------------------------------------------------------
// The AirDrop receiver

/// The AirDrop receiver before `StartPSI`.
#[derive(Debug)]
pub struct DropReceiver;

/// The receiver waiting for M2; it already holds the sender's DO3 request.
#[derive(Debug)]
pub struct ReceiverAwaitingM2<G: PrimeGroup> {
    ctx: Context<G>,
    mode: Discoverability,
    do2: ResponderWithRequest<G>,
}

/// The receiver waiting for `Ask`.
#[derive(Debug)]
pub struct ReceiverAwaitingAsk<G: PrimeGroup> {
    ctx: Context<G>,
    mode: Discoverability,
    /// Our identifiers the sender holds (DO2 result).
    pub known_by_sender: Vec<String>,
}

/// What the receiver knows after `Ask`.
#[derive(Debug, Clone)]
pub struct ReceiverOutcome {
    /// The sender, if it proved to be a mutual contact.
    pub sender: Peer,
    /// Our identifiers the sender holds (DO2 result).
    pub known_by_sender: Vec<String>,
    /// The sender's device name and offer.
    pub ask: Ask,
}

/// A `StartPSI` request that passed every check (discoverability, decoding, the
/// sender's certified inputs): only now is an address-book precomputation spent on it
/// ([`CheckedStart::respond`]).
#[derive(Debug)]
pub struct CheckedStart<G: PrimeGroup> {
    ctx: Context<G>,
    mode: Discoverability,
    start: StartPsiRequest<G>,
}

impl DropReceiver {
    /// Handles `StartPSI`: answers with our certified blinded identifiers (M1).
    /// [`DropReceiver::check_start`] then [`CheckedStart::respond`].
    pub fn on_start<G: PrimeGroup>(
        ctx: Context<G>,
        mode: Discoverability,
        book_sender: Sender<G>,
        start: &[u8],
    ) -> Result<(ReceiverAwaitingM2<G>, Vec<u8>)> {
        Self::check_start(ctx, mode, start)?.respond(book_sender)
    }

    /// Checks a `StartPSI` request before any PSI work (issue 32, item 4; PrivateDrop
    /// orders its messages so that a sender does its share first, §4.4): refused when
    /// discoverability is off, when it does not decode under our parameters, or when
    /// the sender's certified inputs do not verify (CA signature, account = TLS peer,
    /// expiry, exactly `m` values).
    pub fn check_start<G: PrimeGroup>(ctx: Context<G>, mode: Discoverability, start: &[u8]) -> Result<CheckedStart<G>> {
        if mode == Discoverability::Off {
            return Err(Error::NotDiscoverable("discoverability is off"));
        }
        let params = ctx.identity.params;
        let start = StartPsiRequest::<G>::from_bytes(start, &params)?;
        start
            .blinded_ids
            .verify(&ctx.ca, &ctx.peer, ctx.now, params.max_ids())?;
        Ok(CheckedStart { ctx, mode, start })
    }
}

impl<G: PrimeGroup> CheckedStart<G> {
    /// Answers the checked request with our certified blinded identifiers (M1);
    /// `book_sender` is the PSI sender over our address book for this session.
    pub fn respond(self, book_sender: Sender<G>) -> Result<(ReceiverAwaitingM2<G>, Vec<u8>)> {
        let CheckedStart { ctx, mode, start } = self;
        let params = ctx.identity.params;
        let (do2, request) = Responder::start_typed(book_sender, ctx.identity.precomputation())?;
        if request.blinded != ctx.identity.blinded_ids.elements {
            return Err(Error::UncertifiedInput);
        }
        let do2 = do2.with_request(start.blinded_ids.as_request(&params.psi))?;
        let m1 = StartPsiResponse {
            blinded_ids: ctx.identity.blinded_ids.clone(),
        };
        Ok((ReceiverAwaitingM2 { ctx, mode, do2 }, m1.to_bytes()))
    }
}

impl<G: PrimeGroup> ReceiverAwaitingM2<G> {
    /// Computes the DO3 answer now, while the sender works on DO2. It is kept inside
    /// this state and released in M3 only after DO2 verified. A receiver that wants
    /// to spend work only on senders that did their DO2 share first skips this (the
    /// answer is then computed in [`ReceiverAwaitingM2::on_m2`]).
    pub fn prepare_answer(&mut self, rng: &mut impl CryptoRngCore) -> Result<()> {
        Ok(self.do2.answer_now(rng)?)
    }

    /// Handles M2: learns the DO2 result, answers DO3 (or releases the prepared
    /// answer) and attaches one validation record if DO2 matched (M3).
    pub fn on_m2(self, m2: &[u8], rng: &mut impl CryptoRngCore) -> Result<(ReceiverAwaitingAsk<G>, Vec<u8>)> {
        let params = self.ctx.identity.params;
        let m2 = FinishPsiRequest::<G>::from_bytes(m2, &params)?;
        let (known, response) = self.do2.on_response_typed(&m2.response, rng)?;
        let m3 = FinishPsiResponse {
            response,
            record: pick_record(&self.ctx.identity, &known, rng),
            receiver_name: self.ctx.device_name.clone(),
        };
        Ok((
            ReceiverAwaitingAsk {
                ctx: self.ctx,
                mode: self.mode,
                known_by_sender: known
                    .items()
                    .iter()
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .collect(),
            },
            m3.to_bytes(),
        ))
    }
}

impl<G: PrimeGroup> ReceiverAwaitingAsk<G> {
    /// Handles `Ask`: identifies the sender from its validation record and applies the
    /// discoverability policy.
    pub fn on_ask(self, ask: &[u8]) -> Result<ReceiverOutcome> {
        let ask = Ask::from_bytes(ask)?;
        let sender = identify(&self.ctx, ask.record.as_ref())?;
        if self.mode == Discoverability::ContactsOnly && sender == Peer::Unknown {
            return Err(Error::NotDiscoverable("this receiver accepts contacts only"));
        }
        Ok(ReceiverOutcome {
            sender,
            known_by_sender: self.known_by_sender,
            ask,
        })
    }
}
