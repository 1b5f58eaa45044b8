//! End-to-end tests of the `lwe` backend: retrieval and weighted sums against the
//! plain computation, batches, updates, and deviating peers.

use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_pir::lwe::{LweAnswer, LweClient, LweHint, LweHintUpdate, LweParams, LweQuery, LweServer};
use tacit_pir::{Error, PirClient, PirServer, Selection, Table, TableShape};
use tacit_wire::{Decode, Encode};

fn setup(rows: u64, row_bytes: u32, seed: u64) -> (Table, LweServer, LweClient, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let table = Table::random(TableShape::new(rows, row_bytes).unwrap(), &mut rng);
    let mut a_seed = [0u8; 16];
    rng.fill_bytes(&mut a_seed);
    let server = LweServer::setup(&table, LweParams::new(table.shape(), a_seed).unwrap()).unwrap();
    let client = LweClient::new(server.hint()).unwrap();
    (table, server, client, rng)
}

#[test]
fn every_row_of_a_small_table() {
    let (table, server, client, mut rng) = setup(37, 5, 1);
    for i in 0..37 {
        let (st, q) = client.query(&Selection::row(i), &mut rng).unwrap();
        let a = server.answer(&q).unwrap();
        assert_eq!(client.decode(&st, &a).unwrap().to_row_bytes(5), table.row(i).unwrap());
    }
}

#[test]
fn batch_answers_equal_single_answers() {
    let (table, server, client, mut rng) = setup(300, 41, 2);
    let rows = [0u64, 7, 150, 299, 7];
    let (states, queries): (Vec<_>, Vec<_>) = rows
        .iter()
        .map(|&i| client.query(&Selection::row(i), &mut rng).unwrap())
        .unzip();
    let batch = server.answer_batch(&queries).unwrap();
    for ((i, st), (q, a)) in rows.iter().zip(&states).zip(queries.iter().zip(&batch)) {
        assert_eq!(&server.answer(q).unwrap(), a);
        assert_eq!(client.decode(st, a).unwrap().to_row_bytes(41), table.row(*i).unwrap());
    }
}

/// The reference pieces (for other implementations, e.g. on a GPU) reproduce the
/// server's hint, table id and answers exactly.
#[test]
fn reference_reproduces_hint_id_and_answers() {
    use tacit_pir::lwe::{LWE_N, reference};
    let (table, server, client, mut rng) = setup(150, 9, 6);
    let p = *server.params();
    let (m, l) = (p.matrix_rows(), p.cols());
    let d = reference::centred_matrix(&p, &table).unwrap();
    // H = D·A, column by column of A.
    let mut a = vec![0u32; l * LWE_N];
    for c in 0..l {
        reference::a_row(&p.seed(), c, &mut a[c * LWE_N..(c + 1) * LWE_N]);
    }
    let mut h = vec![0u32; m * LWE_N];
    for j in 0..LWE_N {
        let col: Vec<u32> = (0..l).map(|c| a[c * LWE_N + j]).collect();
        for (r, v) in reference::answer(&d, l, &col).into_iter().enumerate() {
            h[r * LWE_N + j] = v;
        }
    }
    assert_eq!(&h[..], &server.hint().h[..]);
    assert_eq!(reference::table_id(&p, &h), server.table_id());
    let (_, q) = client
        .query(&Selection::weighted(&[(4, 3)]).unwrap(), &mut rng)
        .unwrap();
    assert_eq!(reference::answer(&d, l, &q.values), server.answer(&q).unwrap().values);
}

#[test]
fn messages_roundtrip_on_the_wire() {
    let (table, server, client, mut rng) = setup(100, 16, 3);
    let hint = LweHint::from_wire(&server.hint().to_wire()).unwrap();
    assert_eq!(server.hint().to_wire().len() as u64, server.sizes().hint_bytes);
    let client2 = LweClient::new(hint).unwrap();
    assert_eq!(client2.table_id(), client.table_id());
    let (st, q) = client2.query(&Selection::row(42), &mut rng).unwrap();
    let qb = q.to_wire();
    assert_eq!(qb.len() as u64, server.sizes().query_bytes);
    let a = server.answer(&LweQuery::from_wire(&qb).unwrap()).unwrap();
    let ab = a.to_wire();
    assert_eq!(ab.len() as u64, server.sizes().answer_bytes);
    let got = client2.decode(&st, &LweAnswer::from_wire(&ab).unwrap()).unwrap();
    assert_eq!(got.to_row_bytes(16), table.row(42).unwrap());
}

#[test]
fn update_changes_the_row_and_the_hint() {
    let (mut table, mut server, mut client, mut rng) = setup(200, 12, 4);
    let new_row = [0xabu8; 12];
    let old_id = client.table_id();
    let up = server.update_row(77, &new_row).unwrap();
    table.set_row(77, &new_row).unwrap();
    // A client with the old hint is refused with a clear error.
    let (_, q) = client.query(&Selection::row(77), &mut rng).unwrap();
    assert!(matches!(server.answer(&q), Err(Error::WrongTable { .. })));
    // The update travels on the wire and brings the client up to date.
    client
        .apply_update(&LweHintUpdate::from_wire(&up.to_wire()).unwrap())
        .unwrap();
    assert_ne!(client.table_id(), old_id);
    assert_eq!(client.table_id(), server.table_id());
    // Same hint as a full rebuild over the new table.
    let rebuilt = LweServer::setup(&table, *server.params()).unwrap();
    assert_eq!(rebuilt.table_id(), server.table_id());
    for i in [76u64, 77, 78, 0] {
        let (st, q) = client.query(&Selection::row(i), &mut rng).unwrap();
        let a = server.answer(&q).unwrap();
        assert_eq!(client.decode(&st, &a).unwrap().to_row_bytes(12), table.row(i).unwrap());
    }
    // Applying the same update twice is refused (made for another table state).
    assert!(matches!(client.apply_update(&up), Err(Error::WrongTable { .. })));
}

#[test]
fn deviating_peers_are_refused() {
    let (_, server, client, mut rng) = setup(64, 8, 5);
    let (st, q) = client.query(&Selection::row(3), &mut rng).unwrap();
    // A query for another table.
    let mut other = q.clone();
    other.table_id[0] ^= 1;
    assert!(matches!(server.answer(&other), Err(Error::WrongTable { .. })));
    // A short query.
    let mut short = q.clone();
    short.values.pop();
    assert!(matches!(server.answer(&short), Err(Error::WrongLength { .. })));
    // A batch with one bad query is refused whole.
    assert!(server.answer_batch(&[q.clone(), short]).is_err());
    // An answer for another table, or of the wrong length.
    let a = server.answer(&q).unwrap();
    let mut bad = a.clone();
    bad.table_id[31] ^= 1;
    assert!(matches!(client.decode(&st, &bad), Err(Error::WrongTable { .. })));
    let mut bad = a.clone();
    bad.values.push(0);
    assert!(matches!(client.decode(&st, &bad), Err(Error::WrongLength { .. })));
    // A hint whose parameters do not match its length.
    let mut hb = server.hint().to_wire();
    hb.truncate(hb.len() - 4);
    assert!(LweHint::from_wire(&hb).is_err());
    // Rows outside the table and rows that cannot be combined.
    assert!(matches!(
        client.query(&Selection::row(64), &mut rng),
        Err(Error::RowOutOfRange { .. })
    ));
    let slots = client.params().slots() as u64;
    let sel = Selection::weighted(&[(0, 1), (1, 1)]).unwrap();
    if slots > 1 {
        assert!(matches!(client.query(&sel, &mut rng), Err(Error::NotCombinable { .. })));
    }
}

#[test]
fn parameters_meet_the_correctness_bound() {
    for &(rows, bytes) in &[(1u64, 1u32), (10_000_000, 41), (10_000_000, 16), (1 << 30, 1)] {
        let p = LweParams::new(TableShape::new(rows, bytes).unwrap(), [0; 16]).unwrap();
        assert!(p.failure_log2() <= -40.0, "{rows}x{bytes}: {}", p.failure_log2());
        // Up to the paper's 10^7 rows the plaintext modulus is 2^8; wider matrices get less.
        assert_eq!(p.log_p(), if rows <= 10_000_000 { 8 } else { 7 }, "{rows}x{bytes}");
    }
    // A matrix too wide for p = 256 gets a smaller p.
    let p = LweParams::with_slots(TableShape::new(1 << 34, 1).unwrap(), 1 << 12, [0; 16]);
    if let Ok(p) = p {
        assert!(p.failure_log2() <= -40.0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// A weighted query over rows of one slot decodes to Σ wᵢ·rowᵢ mod p, symbol by symbol.
    #[test]
    fn weighted_sums_match_the_plain_computation(
        rows in 20u64..400, bytes in 1u32..24, seed in any::<u64>(),
        picks in proptest::collection::vec((any::<u16>(), 1u32..1000), 1..6),
    ) {
        let (table, server, client, mut rng) = setup(rows, bytes, seed);
        let slots = client.params().slots() as u64;
        let slot = seed % slots;
        let cols = rows.div_ceil(slots);
        let mut entries: Vec<(u64, u32)> = Vec::new();
        for (c, w) in picks {
            let i = (c as u64 % cols) * slots + slot;
            if i < rows && !entries.iter().any(|e| e.0 == i) {
                entries.push((i, w));
            }
        }
        prop_assume!(!entries.is_empty());
        let sel = Selection::weighted(&entries).unwrap();
        let (st, q) = client.query(&sel, &mut rng).unwrap();
        let got = client.decode(&st, &server.answer(&q).unwrap()).unwrap();
        let want = client.symbols().weighted_sum(&table, &sel).unwrap();
        prop_assert_eq!(got.symbols, want);
    }

    /// Any single row of a random table is retrieved exactly.
    #[test]
    fn single_rows_match_the_table(rows in 1u64..600, bytes in 1u32..50, seed in any::<u64>(), pick in any::<u64>()) {
        let (table, server, client, mut rng) = setup(rows, bytes, seed);
        let i = pick % rows;
        let (st, q) = client.query(&Selection::row(i), &mut rng).unwrap();
        let got = client.decode(&st, &server.answer(&q).unwrap()).unwrap();
        prop_assert_eq!(got.to_row_bytes(bytes), table.row(i).unwrap().to_vec());
    }
}
