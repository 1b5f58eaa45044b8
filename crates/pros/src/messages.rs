//! Helpers shared by the PROS message decoders.

use crate::facproof::MIN_PEER_KEY_BITS;
use crate::paillier::PublicKey;
use crate::{Error, Result};

/// If `bytes` is a refusal, the peer refused: surface its reason, or the mismatch it
/// names worded from our side.
pub(crate) fn check_refusal(bytes: &[u8]) -> Result<()> {
    match tacit_wire::Refusal::peek(bytes) {
        None => Ok(()),
        Some(r) => Err(match r? {
            tacit_wire::Refusal::Words(w) => Error::PeerRefused(w),
            tacit_wire::Refusal::Mismatch(m) => Error::PeerMismatch(m),
        }),
    }
}

/// The refusal to send the peer for `e`: a typed [`tacit_wire::Mismatch`] for
/// [`Error::Mismatch`], the words otherwise.
pub(crate) fn refusal_of(e: &Error) -> Vec<u8> {
    use tacit_wire::Encode;
    match e {
        Error::Mismatch(m) => m.to_wire(),
        e => tacit_wire::ErrorMessage::new(e.to_string()).to_wire(),
    }
}

/// Whether a party takes peer keys below [`MIN_PEER_KEY_BITS`]: never, unless it was
/// built with an `accept_insecure_small_keys` of its own (no message can ask for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum KeyFloor {
    /// Peer keys below [`MIN_PEER_KEY_BITS`] are refused, whatever the minimum.
    #[default]
    FactorProof,
    /// The paper's small keys (for reproducing its tables): Π^fac bounds nothing.
    InsecureSmallKeys,
}

impl KeyFloor {
    /// The smallest peer key accepted for a configured minimum `min`.
    pub(crate) fn min_bits(self, min: u32) -> u32 {
        match self {
            KeyFloor::FactorProof => min.max(MIN_PEER_KEY_BITS),
            KeyFloor::InsecureSmallKeys => min,
        }
    }
}

/// Refuses a peer key outside `min..=max` bits, and below [`MIN_PEER_KEY_BITS`] (the
/// smallest key whose factors Π^fac bounds) whatever `min` is, unless `floor` is
/// [`KeyFloor::InsecureSmallKeys`].
pub(crate) fn check_key_bits(key: &PublicKey, min: u32, max: u32, floor: KeyFloor) -> Result<()> {
    let bits = key.bits();
    let min = floor.min_bits(min);
    if bits < MIN_PEER_KEY_BITS && floor == KeyFloor::FactorProof {
        return Err(Error::KeySize(format!(
            "the peer's key has {bits} bits; below {MIN_PEER_KEY_BITS} bits the no-small-factor proof bounds \
             nothing, so we accept {min} to {max} bits"
        )));
    }
    check_key_range(key, min, max)
}

/// Refuses a peer key outside `min..=max` bits, as given (a decoder's bounds; the
/// party that uses the key applies [`check_key_bits`]).
pub(crate) fn check_key_range(key: &PublicKey, min: u32, max: u32) -> Result<()> {
    if key.bits() < min || key.bits() > max {
        return Err(Error::KeySize(format!(
            "the peer's key has {} bits; we accept {min} to {max} bits",
            key.bits()
        )));
    }
    Ok(())
}
