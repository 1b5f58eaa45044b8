//! `expand_message_xmd` (RFC 9380 §5.3.1).
//!
//! ```text
//! ell = ceil(len_in_bytes / b_in_bytes)        ; error if ell > 255 or len_in_bytes > 65535
//! DST_prime = DST || I2OSP(len(DST), 1)        ; DST longer than 255 bytes is first hashed:
//!                                               ; DST = H("H2C-OVERSIZE-DST-" || DST)
//! b_0 = H(Z_pad || msg || I2OSP(len_in_bytes, 2) || I2OSP(0, 1) || DST_prime)
//! b_1 = H(b_0 || I2OSP(1, 1) || DST_prime)
//! b_i = H(strxor(b_0, b_(i-1)) || I2OSP(i, 1) || DST_prime)
//! uniform_bytes = b_1 || ... || b_ell, truncated to len_in_bytes
//! ```

use crate::{Error, Result};
use sha2::Digest;
use sha2::digest::core_api::BlockSizeUser;

/// Expands `msg` (the concatenation of `msg_parts`) under the domain separation tag
/// `dst` (the concatenation of `dst_parts`) to `out.len()` uniform bytes.
///
/// # Errors
/// If `out` is longer than 255 hash outputs or 65535 bytes, or the DST is empty.
pub fn expand_message_xmd<H: Digest + BlockSizeUser>(
    msg_parts: &[&[u8]],
    dst_parts: &[&[u8]],
    out: &mut [u8],
) -> Result<()> {
    let b_in_bytes = <H as Digest>::output_size();
    let s_in_bytes = <H as BlockSizeUser>::block_size();
    let len = out.len();
    let ell = len.div_ceil(b_in_bytes);
    if ell > 255 || len > 65535 || len == 0 {
        return Err(Error::InvalidParameter(
            "expand_message_xmd output must be 1..=min(255 blocks, 65535) bytes",
        ));
    }
    let dst_len: usize = dst_parts.iter().map(|p| p.len()).sum();
    if dst_len == 0 {
        return Err(Error::InvalidParameter("empty domain separation tag"));
    }
    // DST_prime, with the oversize rule.
    let mut dst_prime: Vec<u8> = Vec::with_capacity(dst_len.min(255) + 1);
    if dst_len > 255 {
        let mut h = H::new();
        h.update(b"H2C-OVERSIZE-DST-");
        for p in dst_parts {
            h.update(p);
        }
        dst_prime.extend_from_slice(&h.finalize());
    } else {
        for p in dst_parts {
            dst_prime.extend_from_slice(p);
        }
    }
    dst_prime.push(dst_prime.len() as u8);

    let mut h = H::new();
    h.update(vec![0u8; s_in_bytes]);
    for p in msg_parts {
        h.update(p);
    }
    h.update((len as u16).to_be_bytes());
    h.update([0u8]);
    h.update(&dst_prime);
    let b0 = h.finalize();

    let mut h = H::new();
    h.update(&b0);
    h.update([1u8]);
    h.update(&dst_prime);
    let mut bi = h.finalize();

    let mut written = 0;
    for i in 1..=ell {
        if i > 1 {
            let mut x = b0.clone();
            for (a, b) in x.iter_mut().zip(bi.iter()) {
                *a ^= b;
            }
            let mut h = H::new();
            h.update(&x);
            h.update([i as u8]);
            h.update(&dst_prime);
            bi = h.finalize();
        }
        let take = (len - written).min(b_in_bytes);
        out[written..written + take].copy_from_slice(&bi[..take]);
        written += take;
    }
    Ok(())
}
