//! The PIR crates people would otherwise pick from crates.io, measured on the same
//! table shape in the same run as tacit's backends (`tacit bench pir backends`).
//!
//! * `simplepir` 1.0 (XiXinping/simplepir-rs): SimplePIR with q = 2⁶⁴, a square
//!   database of `side²` entries of 8 bits, three entries packed per `u64`.
//! * `chalamet_pir` 0.6 (FrodoPIR + binary fuse filter, key–value): its setup (the
//!   hint, an `n × 1774` matrix product) takes minutes at 2¹⁶ rows on two cores, so it
//!   runs at a smaller shape, next to tacit's `lwe` on that same shape.
//! * `spiral-rs` 0.2.1-alpha.2 (Spiral, Menon and Wu): items of 32 KiB, the smallest
//!   power-of-two database that holds the table.
//!
//! Each peer's server answer is timed with the peer's own code; its random database
//! is built by the peer's own generator (their answer time does not depend on the
//! content).

use crate::util::median;
use std::collections::HashMap;
use std::time::Instant;

use anyhow::{Result, anyhow};

/// One peer measured on one shape.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PeerResult {
    /// Crate name.
    pub name: &'static str,
    /// Rows of the table it was measured on.
    pub rows: u64,
    /// Bytes per row.
    pub row_bytes: u32,
    /// Bytes of the peer's database (its own layout, padding included).
    pub db_bytes: u64,
    /// Peer setup (its hint / preprocessing), seconds; None when not run.
    pub setup_s: Option<f64>,
    /// Median server time for one answer, milliseconds.
    pub peer_server_ms: f64,
    /// Query bytes.
    pub query_bytes: Option<u64>,
    /// Answer bytes.
    pub answer_bytes: Option<u64>,
    /// What was measured and how.
    pub note: String,
}

/// `simplepir` on `rows × row_bytes` bytes: a square database of 8-bit entries.
pub fn simplepir(rows: u64, row_bytes: u32, runs: usize) -> Result<PeerResult> {
    let entries = rows * row_bytes as u64;
    let side = (entries as f64).sqrt().ceil() as usize;
    let db = simplepir::Database::new_random_seed(side, 8, 1);
    let t = Instant::now();
    let packed = db.compress().map_err(|e| anyhow!("simplepir: {e}"))?;
    let setup = t.elapsed().as_secs_f64();
    drop(db);
    let (_, q) = simplepir::query(1, side, 1024, 42, 256);
    let mut times = Vec::new();
    let mut answer_len = 0;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let a = simplepir::answer(&packed, &q);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        answer_len = a.len();
    }
    Ok(PeerResult {
        name: "simplepir",
        rows,
        row_bytes,
        db_bytes: (side * side.div_ceil(3) * 8) as u64,
        setup_s: Some(setup),
        peer_server_ms: median(times),
        query_bytes: Some(side as u64 * 8),
        answer_bytes: Some(answer_len as u64 * 8),
        note: format!(
            "square database {side}x{side} of 8-bit entries packed 3 per u64; setup = packing only (its hint A*D is not needed to time answers and is not computed)"
        ),
    })
}

/// `chalamet_pir` with `rows` keys (8-byte row indices) and `row_bytes`-byte values.
pub fn chalamet(rows: u64, row_bytes: u32, runs: usize) -> Result<PeerResult> {
    let keys: Vec<[u8; 8]> = (0..rows).map(|i| i.to_le_bytes()).collect();
    let vals: Vec<Vec<u8>> = (0..rows)
        .map(|i| {
            (0..row_bytes)
                .map(|j| (i as u32).wrapping_mul(2654435761).wrapping_add(j) as u8)
                .collect()
        })
        .collect();
    let db: HashMap<&[u8], &[u8]> = keys.iter().zip(&vals).map(|(k, v)| (&k[..], &v[..])).collect();
    let seed = [7u8; chalamet_pir::SEED_BYTE_LEN];
    let t = Instant::now();
    let (server, hint, filter) =
        chalamet_pir::server::Server::setup::<3>(&seed, db).map_err(|e| anyhow!("chalamet_pir setup: {e:?}"))?;
    let setup = t.elapsed().as_secs_f64();
    let mut client = chalamet_pir::client::Client::setup(&seed, &hint, &filter)
        .map_err(|e| anyhow!("chalamet_pir client: {e:?}"))?;
    let target = (rows / 2) as usize;
    let q = client
        .query(&keys[target])
        .map_err(|e| anyhow!("chalamet_pir query: {e:?}"))?;
    let mut times = Vec::new();
    let mut resp = Vec::new();
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        resp = server.respond(&q).map_err(|e| anyhow!("chalamet_pir respond: {e:?}"))?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let got = client
        .process_response(&keys[target], &resp)
        .map_err(|e| anyhow!("chalamet_pir decode: {e:?}"))?;
    if got != vals[target] {
        return Err(anyhow!("chalamet_pir returned a wrong value"));
    }
    Ok(PeerResult {
        name: "chalamet_pir",
        rows,
        row_bytes,
        db_bytes: rows * row_bytes as u64,
        setup_s: Some(setup),
        peer_server_ms: median(times),
        query_bytes: Some(q.len() as u64),
        answer_bytes: Some(resp.len() as u64),
        note: "3-wise binary fuse filter, 8-byte keys; full setup (hint) run; value checked".into(),
    })
}

/// `spiral-rs` on the smallest database of 32 KiB items (2^(9+ν₂) of them) that holds
/// `rows × row_bytes` bytes.
pub fn spiral(rows: u64, row_bytes: u32, runs: usize) -> Result<PeerResult> {
    use spiral_rs::client::Client;
    use spiral_rs::server::{generate_random_db_and_get_item, process_query};
    let item = 32768u64;
    let items = (rows * row_bytes as u64).div_ceil(item).max(1);
    let log_items = 64 - (items - 1).leading_zeros() as usize;
    let (nu1, nu2) = (9usize, log_items.saturating_sub(9).max(1));
    let cfg = format!(
        r#"{{"n": 2, "nu_1": {nu1}, "nu_2": {nu2}, "p": 256, "q2_bits": 22, "t_gsw": 7, "t_conv": 3, "t_exp_left": 5, "t_exp_right": 5, "instances": 4, "db_item_size": {item}}}"#
    );
    let params = spiral_rs::util::params_from_json(&cfg);
    let t = Instant::now();
    let (_, db) = generate_random_db_and_get_item(&params, 3);
    let setup = t.elapsed().as_secs_f64();
    let mut client = Client::init(&params);
    let pp = client.generate_keys();
    let q = client.generate_query(3);
    let mut times = Vec::new();
    let mut resp_len = 0;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let r = process_query(&params, &pp, &q, db.as_slice());
        times.push(t.elapsed().as_secs_f64() * 1e3);
        resp_len = r.len();
    }
    Ok(PeerResult {
        name: "spiral-rs",
        rows,
        row_bytes,
        db_bytes: (1u64 << (nu1 + nu2)) * item,
        setup_s: Some(setup),
        peer_server_ms: median(times),
        query_bytes: Some(q.serialize().len() as u64),
        answer_bytes: Some(resp_len as u64),
        note: format!(
            "2^{} items of 32 KiB (nu1={nu1}, nu2={nu2}), p=256, the crate's test parameters; setup = its random preprocessed database; public parameters {} bytes",
            nu1 + nu2,
            pp.serialize().len()
        ),
    })
}
