//! Helpers shared by the PROS message decoders.

use crate::paillier::PublicKey;
use crate::{Error, Result};
use tacit_wire::{Decode, Envelope, ErrorMessage, tags};

/// If `bytes` is an [`ErrorMessage`], the peer refused: surface its reason.
pub(crate) fn check_refusal(bytes: &[u8]) -> Result<()> {
    if let Ok(env) = Envelope::peek(bytes)
        && env.tag == tags::ERROR
    {
        let m = ErrorMessage::from_wire(bytes)?;
        return Err(Error::PeerRefused(m.reason));
    }
    Ok(())
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
