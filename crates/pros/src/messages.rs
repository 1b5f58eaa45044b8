//! Helpers shared by the PROS message decoders.

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

/// Refuses a peer key outside `min..=max` bits.
pub(crate) fn check_key_bits(key: &PublicKey, min: u32, max: u32) -> Result<()> {
    if key.bits() < min || key.bits() > max {
        return Err(Error::KeySize(format!(
            "the peer's key has {} bits; we accept {min} to {max} bits",
            key.bits()
        )));
    }
    Ok(())
}
