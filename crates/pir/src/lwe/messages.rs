//! Wire encodings of the `lwe` messages (tags `0x0601`–`0x0604`, see `docs/wire.md`).
//!
//! ```text
//! Params     = u64 rows || u32 row_bytes || u8 log_p || u32 slots || u32 cols || seed (16)
//! Hint       = 01 0601 || Params || u32 count (= m·1024) || count × u32
//! Query      = 01 0602 || table_id (32) || u32 count (= ℓ) || count × u32
//! Answer     = 01 0603 || table_id (32) || u32 count (= m) || count × u32
//! HintUpdate = 01 0604 || old_id (32) || new_id (32) || u32 first_row || u32 count (= d·1024) || count × u32
//! ```
//!
//! Decoders bound every count by the protocol maxima and by the bytes that remain
//! before allocating; a query or answer is then checked against the receiver's
//! parameters (length, table id) by the server or client.

use std::sync::Arc;

use sha2::Digest;
use tacit_wire::{Decode, Encode, Reader, Writer};

use super::{LWE_N, LweParams, MAX_COLS, MAX_HINT_ELEMS, MAX_MATRIX_ROWS, TableId};
use crate::backend::TableShape;

/// Tag of [`LweHint`].
pub const TAG_HINT: u16 = 0x0601;
/// Tag of [`LweQuery`].
pub const TAG_QUERY: u16 = 0x0602;
/// Tag of [`LweAnswer`].
pub const TAG_ANSWER: u16 = 0x0603;
/// Tag of [`LweHintUpdate`].
pub const TAG_HINT_UPDATE: u16 = 0x0604;

const PARAMS_LEN: usize = 8 + 4 + 1 + 4 + 4 + 16;

/// What a client downloads once per table: the parameters and `H = D·A`.
#[derive(Clone, PartialEq, Eq)]
pub struct LweHint {
    /// The parameters.
    pub params: LweParams,
    /// `H`, row-major, `m × 1024`.
    pub h: Arc<Vec<u32>>,
}

impl core::fmt::Debug for LweHint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LweHint")
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

/// A client's query: `A·s + e + Δ·u`, for one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LweQuery {
    /// The table the query is for.
    pub table_id: TableId,
    /// `ℓ` elements of `Z_{2³²}`.
    pub values: Vec<u32>,
}

/// The server's answer `D·query`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LweAnswer {
    /// The table it was computed over.
    pub table_id: TableId,
    /// `m` elements of `Z_{2³²}`.
    pub values: Vec<u32>,
}

/// The hint rows of one slot after a row update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LweHintUpdate {
    /// The table id before the update.
    pub old_id: TableId,
    /// The table id after it.
    pub new_id: TableId,
    /// The first hint row replaced (`slot · d`).
    pub first_row: u32,
    /// `d × 1024` new hint values.
    pub rows: Vec<u32>,
}

fn put_params(w: &mut Writer, p: &LweParams) {
    w.put_u64(p.shape.rows);
    w.put_u32(p.shape.row_bytes);
    w.put_u8(p.log_p as u8);
    w.put_u32(p.slots);
    w.put_u32(p.cols);
    w.put_fixed(&p.seed);
}

#[cfg(test)]
fn params_bytes(p: &LweParams) -> Vec<u8> {
    let mut w = Writer::with_capacity(PARAMS_LEN);
    put_params(&mut w, p);
    w.into_bytes()
}

fn read_params(r: &mut Reader<'_>) -> tacit_wire::Result<LweParams> {
    let rows = r.u64()?;
    let row_bytes = r.u32()?;
    let log_p = r.u8()? as u32;
    let slots = r.u32()?;
    let cols = r.u32()?;
    let seed = r.array::<16>("seed of A")?;
    let shape =
        TableShape::new(rows, row_bytes).map_err(|e| tacit_wire::Error::invalid("lwe parameters", e.to_string()))?;
    let p = LweParams {
        shape,
        log_p,
        slots,
        cols,
        seed,
    };
    p.check()
        .map_err(|e| tacit_wire::Error::invalid("lwe parameters", e.to_string()))?;
    Ok(p)
}

fn put_u32s(w: &mut Writer, v: &[u32]) {
    w.put_count(v.len());
    // Big-endian in blocks through a stack buffer (the byte swaps vectorise).
    let mut buf = [0u8; 4096];
    for chunk in v.chunks(1024) {
        for (d, x) in buf.chunks_exact_mut(4).zip(chunk) {
            d.copy_from_slice(&x.to_be_bytes());
        }
        w.put_fixed(&buf[..4 * chunk.len()]);
    }
}

fn read_u32s(r: &mut Reader<'_>, what: &'static str, max: usize) -> tacit_wire::Result<Vec<u32>> {
    let n = r.count(what, max, 4)?;
    let bytes = r.fixed(what, 4 * n)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Feeds the hint's encoding to a hasher without building it.
pub(super) fn hash_hint(hasher: &mut sha2::Sha256, params: &LweParams, h: &[u32]) {
    let mut head = Writer::new();
    head.put_envelope(TAG_HINT);
    put_params(&mut head, params);
    head.put_count(h.len());
    hasher.update(head.into_bytes());
    let mut buf = Vec::with_capacity(4 * 4096);
    for chunk in h.chunks(4096) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_be_bytes());
        }
        hasher.update(&buf);
    }
}

/// Encoded size of a hint.
pub(super) fn hint_len(p: &LweParams) -> usize {
    3 + PARAMS_LEN + 4 + 4 * p.matrix_rows() * LWE_N
}

/// Encoded size of a query or answer with `n` elements.
pub(super) fn query_len(n: usize) -> usize {
    3 + 32 + 4 + 4 * n
}

impl Encode for LweHint {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_HINT);
        put_params(w, &self.params);
        put_u32s(w, &self.h);
    }
}

impl Decode for LweHint {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_HINT, "lwe hint")?;
        let params = read_params(r)?;
        let h = read_u32s(r, "lwe hint", MAX_HINT_ELEMS as usize)?;
        let expected = params.matrix_rows() * LWE_N;
        if h.len() != expected {
            return Err(tacit_wire::Error::invalid(
                "lwe hint",
                format!("{} elements; the parameters require {expected}", h.len()),
            ));
        }
        Ok(LweHint { params, h: Arc::new(h) })
    }
}

impl Encode for LweQuery {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_QUERY);
        w.put_fixed(&self.table_id);
        put_u32s(w, &self.values);
    }
}

impl Decode for LweQuery {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        let (table_id, bytes) = read_query_raw(r)?;
        let values = bytes
            .chunks_exact(4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(LweQuery { table_id, values })
    }
}

/// Reads an [`LweQuery`] without converting its values: its table id and the
/// big-endian bytes of its values. It accepts exactly what [`LweQuery::decode`]
/// accepts (which is built on it).
pub fn read_query_raw<'a>(r: &mut Reader<'a>) -> tacit_wire::Result<([u8; 32], &'a [u8])> {
    r.envelope(TAG_QUERY, "lwe query")?;
    let table_id = r.array::<32>("table id")?;
    let n = r.count("lwe query", MAX_COLS as usize, 4)?;
    let bytes = r.fixed("lwe query", 4 * n)?;
    Ok((table_id, bytes))
}

/// `dst[i] = u32::from_be_bytes(src[4i..4i+4])` for `i < dst.len()` (`src` holds at
/// least `4·dst.len()` bytes); one pass, the swaps vectorise.
pub fn be_bytes_to_u32s(src: &[u8], dst: &mut [u32]) {
    for (d, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *d = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
}

impl Encode for LweAnswer {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_ANSWER);
        w.put_fixed(&self.table_id);
        put_u32s(w, &self.values);
    }
}

impl Decode for LweAnswer {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_ANSWER, "lwe answer")?;
        let table_id = r.array::<32>("table id")?;
        let values = read_u32s(r, "lwe answer", MAX_MATRIX_ROWS as usize)?;
        Ok(LweAnswer { table_id, values })
    }
}

impl Encode for LweHintUpdate {
    fn encode(&self, w: &mut Writer) {
        w.put_envelope(TAG_HINT_UPDATE);
        w.put_fixed(&self.old_id);
        w.put_fixed(&self.new_id);
        w.put_u32(self.first_row);
        put_u32s(w, &self.rows);
    }
}

impl Decode for LweHintUpdate {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Self> {
        r.envelope(TAG_HINT_UPDATE, "lwe hint update")?;
        let old_id = r.array::<32>("old table id")?;
        let new_id = r.array::<32>("new table id")?;
        let first_row = r.u32()?;
        // A row of at most 2¹⁶ bytes has at most 2¹⁹ one-bit symbols.
        let rows = read_u32s(r, "lwe hint update", (1 << 19) * LWE_N)?;
        if rows.is_empty() || rows.len() % LWE_N != 0 {
            return Err(tacit_wire::Error::invalid(
                "lwe hint update",
                format!("{} values are not whole hint rows", rows.len()),
            ));
        }
        Ok(LweHintUpdate {
            old_id,
            new_id,
            first_row,
            rows,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_roundtrip_and_validation() {
        let p = LweParams::new(TableShape::new(1000, 41).unwrap(), [3; 16]).unwrap();
        let b = params_bytes(&p);
        assert_eq!(b.len(), PARAMS_LEN);
        let mut r = Reader::new(&b);
        assert_eq!(read_params(&mut r).unwrap(), p);
        r.finish().unwrap();
        // Inconsistent column count.
        let mut bad = b.clone();
        bad[17 + 3] ^= 1;
        assert!(read_params(&mut Reader::new(&bad)).is_err());
        // log p = 0 and 9.
        for lp in [0u8, 9] {
            let mut bad = b.clone();
            bad[12] = lp;
            assert!(read_params(&mut Reader::new(&bad)).is_err());
        }
    }

    #[test]
    fn query_roundtrip_and_truncation() {
        let q = LweQuery {
            table_id: [7; 32],
            values: vec![1, 2, 0xdead_beef],
        };
        let b = q.to_wire();
        assert_eq!(b.len(), query_len(3));
        assert_eq!(LweQuery::from_wire(&b).unwrap(), q);
        for cut in 0..b.len() {
            assert!(LweQuery::from_wire(&b[..cut]).is_err());
        }
        let mut longer = b.clone();
        longer.push(0);
        assert!(LweQuery::from_wire(&longer).is_err());
        // An answer is not a query.
        let a = LweAnswer {
            table_id: [7; 32],
            values: vec![1],
        };
        assert!(LweQuery::from_wire(&a.to_wire()).is_err());
    }
}
