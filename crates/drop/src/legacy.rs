//! The original AirDrop authentication (paper §2.4, Fig. 1), kept for comparison: the
//! sender's `Discover` request carries its full validation record — the hashes of all
//! its identifiers — to any receiver, and a receiver that knows the sender returns its
//! own. These hashes are what [`crate::attack`] reverses (§3.3, §3.4).

use crate::protocol::{AddressBook, Discoverability, MAX_NAME, Peer};
use crate::records::{CaPublicKey, SignedLegacyValidationRecord};
use crate::{AccountId, Error, Result};
use tacit_wire::{Reader, Writer};

/// Message-type tags.
pub mod tags {
    /// [`super::DiscoverRequest`].
    pub const DISCOVER_REQUEST: u16 = 0x0220;
    /// [`super::DiscoverResponse`].
    pub const DISCOVER_RESPONSE: u16 = 0x0221;
}

/// `POST /Discover`: the sender's validation record `VR_σ`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverRequest {
    /// The sender's record (all its identifier hashes).
    pub record: SignedLegacyValidationRecord,
    /// Device name.
    pub sender_name: String,
}

/// The receiver's answer: its own `VR_σ` if it knows the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoverResponse {
    /// The receiver's record, only if a sender hash matched its address book.
    pub record: Option<SignedLegacyValidationRecord>,
    /// Device name.
    pub receiver_name: String,
}

impl DiscoverRequest {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::DISCOVER_REQUEST);
        self.record.encode(&mut w);
        w.put_str(&self.sender_name);
        w.into_bytes()
    }

    /// Decodes.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::DISCOVER_REQUEST, "Discover request")?;
        let record = SignedLegacyValidationRecord::decode(&mut r)?;
        let sender_name = r.str("sender name", MAX_NAME)?.to_string();
        r.finish()?;
        Ok(DiscoverRequest { record, sender_name })
    }
}

impl DiscoverResponse {
    /// Encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::DISCOVER_RESPONSE);
        match &self.record {
            Some(r) => {
                w.put_u8(1);
                r.encode(&mut w);
            }
            None => w.put_u8(0),
        }
        w.put_str(&self.receiver_name);
        w.into_bytes()
    }

    /// Decodes.
    pub fn from_bytes(b: &[u8]) -> Result<Self> {
        let mut r = Reader::new(b);
        r.envelope(tags::DISCOVER_RESPONSE, "Discover response")?;
        let record = if r.bool("record flag")? {
            Some(SignedLegacyValidationRecord::decode(&mut r)?)
        } else {
            None
        };
        let receiver_name = r.str("receiver name", MAX_NAME)?.to_string();
        r.finish()?;
        Ok(DiscoverResponse { record, receiver_name })
    }
}

fn match_record(
    record: &SignedLegacyValidationRecord,
    book: &AddressBook,
    ca: &CaPublicKey,
    peer: &AccountId,
    now: u64,
) -> Result<Peer> {
    let rec = record.verify(ca, peer, now)?;
    Ok(rec
        .id_hashes
        .iter()
        .find_map(|h| book.by_hash(h))
        .map(|id| Peer::Contact {
            identifier: id.to_string(),
        })
        .unwrap_or(Peer::Unknown))
}

/// The legacy receiver's answer to `Discover`.
#[allow(clippy::too_many_arguments)]
pub fn receiver_on_discover(
    own: &SignedLegacyValidationRecord,
    receiver_name: &str,
    book: &AddressBook,
    ca: &CaPublicKey,
    peer: &AccountId,
    now: u64,
    mode: Discoverability,
    request: &[u8],
) -> Result<(Peer, Vec<u8>)> {
    if mode == Discoverability::Off {
        return Err(Error::NotDiscoverable("discoverability is off"));
    }
    let req = DiscoverRequest::from_bytes(request)?;
    let sender = match_record(&req.record, book, ca, peer, now)?;
    if mode == Discoverability::ContactsOnly && sender == Peer::Unknown {
        return Err(Error::NotDiscoverable("this receiver accepts contacts only"));
    }
    let record = match sender {
        Peer::Contact { .. } => Some(own.clone()),
        Peer::Unknown => None,
    };
    let resp = DiscoverResponse {
        record,
        receiver_name: receiver_name.to_string(),
    };
    Ok((sender, resp.to_bytes()))
}

/// The legacy sender's view of the receiver after `Discover`.
pub fn sender_on_response(
    book: &AddressBook,
    ca: &CaPublicKey,
    peer: &AccountId,
    now: u64,
    response: &[u8],
) -> Result<(Peer, String)> {
    let resp = DiscoverResponse::from_bytes(response)?;
    let receiver = match &resp.record {
        Some(r) => match_record(r, book, ca, peer, now)?,
        None => Peer::Unknown,
    };
    Ok((receiver, resp.receiver_name))
}
