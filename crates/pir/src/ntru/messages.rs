//! Wire encodings of the `ntru-paper` messages (tags `0x0610`–`0x0611`, see
//! `docs/wire.md`). A ciphertext is packed as `N·21` bits, coefficient by coefficient,
//! least significant bit first; the unused high bits of the last byte must be zero.
//!
//! ```text
//! Layout = u64 rows || u32 row_bytes || u32 rows_per_group
//! Query  = 01 0610 || Layout || u32 count (= regions) || count × ciphertext (1153 bytes)
//! Answer = 01 0611 || Layout || u32 count (= bit columns) || count × ciphertext
//! ```

use tacit_wire::{Decode, Encode, Reader, Writer};

use super::{NtruLayout, NtruParams};
use crate::backend::TableShape;

/// Tag of [`NtruQuery`].
pub const TAG_QUERY: u16 = 0x0610;
/// Tag of [`NtruAnswer`].
pub const TAG_ANSWER: u16 = 0x0611;

pub(super) const HEADER_LEN: usize = 3 + 16 + 4;
/// The most ciphertexts in one message.
const MAX_CTS: usize = 1 << 24;

/// A query: one ciphertext per region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtruQuery {
    /// The layout the query was made for.
    pub layout: NtruLayout,
    /// The ciphertexts, coefficients `< q`.
    pub cts: Vec<Vec<u32>>,
}

/// An answer: one ciphertext per bit column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtruAnswer {
    /// The layout it was computed over.
    pub layout: NtruLayout,
    /// The ciphertexts.
    pub cts: Vec<Vec<u32>>,
}

fn put_layout(w: &mut Writer, l: &NtruLayout) {
    w.put_u64(l.shape.rows);
    w.put_u32(l.shape.row_bytes);
    w.put_u32(l.group);
}

fn read_layout(r: &mut Reader<'_>) -> tacit_wire::Result<NtruLayout> {
    let rows = r.u64()?;
    let row_bytes = r.u32()?;
    let group = r.u32()?;
    let shape =
        TableShape::new(rows, row_bytes).map_err(|e| tacit_wire::Error::invalid("ntru layout", e.to_string()))?;
    NtruLayout::new(shape, group).map_err(|e| tacit_wire::Error::invalid("ntru layout", e.to_string()))
}

fn put_ct(w: &mut Writer, ct: &[u32]) {
    let p = NtruParams::PAPER;
    let mut out = vec![0u8; p.ciphertext_bytes()];
    let mut bit = 0usize;
    for &c in ct {
        for k in 0..p.log_q {
            if (c >> k) & 1 == 1 {
                out[bit / 8] |= 1 << (bit % 8);
            }
            bit += 1;
        }
    }
    w.put_fixed(&out);
}

fn read_ct(r: &mut Reader<'_>) -> tacit_wire::Result<Vec<u32>> {
    let p = NtruParams::PAPER;
    let bytes = r.fixed("ntru ciphertext", p.ciphertext_bytes())?;
    let total = p.n * p.log_q as usize;
    if !total.is_multiple_of(8) && bytes[bytes.len() - 1] >> (total % 8) != 0 {
        return Err(tacit_wire::Error::invalid(
            "ntru ciphertext",
            "padding bits are not zero",
        ));
    }
    let mut ct = vec![0u32; p.n];
    for (i, c) in ct.iter_mut().enumerate() {
        for k in 0..p.log_q as usize {
            let bit = i * p.log_q as usize + k;
            *c |= (((bytes[bit / 8] >> (bit % 8)) & 1) as u32) << k;
        }
    }
    Ok(ct)
}

fn put_cts(w: &mut Writer, cts: &[Vec<u32>]) {
    w.put_count(cts.len());
    for c in cts {
        put_ct(w, c);
    }
}

fn read_cts(r: &mut Reader<'_>, expected: usize) -> tacit_wire::Result<Vec<Vec<u32>>> {
    let n = r.count("ntru ciphertexts", MAX_CTS, NtruParams::PAPER.ciphertext_bytes())?;
    if n != expected {
        return Err(tacit_wire::Error::invalid(
            "ntru ciphertexts",
            format!("{n} ciphertexts; the layout requires {expected}"),
        ));
    }
    (0..n).map(|_| read_ct(r)).collect()
}

impl Encode for NtruQuery {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_QUERY);
        put_layout(w, &self.layout);
        put_cts(w, &self.cts);
    }
}

impl Decode for NtruQuery {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_QUERY, "ntru query")?;
        let layout = read_layout(r)?;
        let cts = read_cts(r, layout.regions())?;
        Ok(NtruQuery { layout, cts })
    }
}

impl Encode for NtruAnswer {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_ANSWER);
        put_layout(w, &self.layout);
        put_cts(w, &self.cts);
    }
}

impl Decode for NtruAnswer {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_ANSWER, "ntru answer")?;
        let layout = read_layout(r)?;
        let cts = read_cts(r, layout.columns())?;
        Ok(NtruAnswer { layout, cts })
    }
}
