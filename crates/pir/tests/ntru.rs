//! End-to-end tests of `ntru-paper`: retrieval and Multiple Row Selection against the
//! plain computation, batches, updates, the wire, and the executed attack.

use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_pir::ntru::{NtruAnswer, NtruClient, NtruLayout, NtruQuery, NtruServer, attack};
use tacit_pir::{Error, PirClient, PirServer, Selection, Table, TableShape};
use tacit_wire::{Decode, Encode};

fn setup(rows: u64, row_bytes: u32, group: u32, seed: u64) -> (Table, NtruServer, NtruClient, ChaCha20Rng) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let table = Table::random(TableShape::new(rows, row_bytes).unwrap(), &mut rng);
    let layout = NtruLayout::new(table.shape(), group).unwrap();
    let server = NtruServer::setup(&table, layout).unwrap();
    let client = NtruClient::new(layout, &mut rng);
    (table, server, client, rng)
}

#[test]
fn rows_across_regions_and_groups() {
    let (table, server, client, mut rng) = setup(1000, 2, 1, 1);
    let rows = [0u64, 438, 439, 999];
    let (states, queries): (Vec<_>, Vec<_>) = rows
        .iter()
        .map(|&i| client.query(&Selection::row(i), &mut rng).unwrap())
        .unzip();
    let answers = server.answer_batch(&queries).unwrap();
    for ((i, st), (q, a)) in rows.iter().zip(&states).zip(queries.iter().zip(&answers)) {
        assert_eq!(&server.answer(q).unwrap(), a);
        assert_eq!(client.decode(st, a).unwrap().to_row_bytes(2), table.row(*i).unwrap());
    }
    // Grouped rows (the square layout): 3 rows per group.
    let (table, server, client, mut rng) = setup(1400, 1, 3, 2);
    for i in [0u64, 1, 2, 1316, 1399] {
        let (st, q) = client.query(&Selection::row(i), &mut rng).unwrap();
        let a = server.answer(&q).unwrap();
        assert_eq!(client.decode(&st, &a).unwrap().to_row_bytes(1), table.row(i).unwrap());
    }
}

#[test]
fn wire_roundtrip_update_and_bad_input() {
    let (mut table, mut server, client, mut rng) = setup(500, 1, 1, 3);
    let (st, q) = client.query(&Selection::row(470), &mut rng).unwrap();
    let qb = q.to_wire();
    assert_eq!(qb.len() as u64, server.sizes().query_bytes);
    let q2 = NtruQuery::from_wire(&qb).unwrap();
    assert_eq!(q2, q);
    let a = server.answer(&q2).unwrap();
    let ab = a.to_wire();
    assert_eq!(ab.len() as u64, server.sizes().answer_bytes);
    assert_eq!(NtruAnswer::from_wire(&ab).unwrap(), a);
    // Truncated, extended and non-canonical messages are refused.
    assert!(NtruQuery::from_wire(&qb[..qb.len() - 1]).is_err());
    let mut longer = qb.clone();
    longer.push(0);
    assert!(NtruQuery::from_wire(&longer).is_err());
    let mut padded = qb.clone();
    let last = padded.len() - 1;
    padded[last] |= 0x80;
    assert!(NtruQuery::from_wire(&padded).is_err());
    assert!(NtruQuery::from_wire(&ab).is_err());
    // A query for another layout is refused by the server.
    let other = NtruLayout::new(TableShape::new(501, 1).unwrap(), 1).unwrap();
    let mut bad = q.clone();
    bad.layout = other;
    assert!(matches!(server.answer(&bad), Err(Error::WrongTable { .. })));
    // An update changes the answer.
    server.update_row(470, &[0x5a]).unwrap();
    table.set_row(470, &[0x5a]).unwrap();
    let a = server.answer(&q).unwrap();
    assert_eq!(client.decode(&st, &a).unwrap().to_row_bytes(1), vec![0x5a]);
    // Rows that cannot be combined.
    let sel = Selection::weighted(&[(1, 1), (2, 1)]).unwrap();
    assert!(matches!(client.query(&sel, &mut rng), Err(Error::NotCombinable { .. })));
}

/// The leak, executed: the server recovers the queried row from the query alone.
#[test]
fn attack_recovers_the_queried_row_from_the_query() {
    let (_, _, client, mut rng) = setup(2000, 1, 1, 4);
    for i in [5u64, 439, 1234, 1999] {
        let (_, q) = client.query(&Selection::row(i), &mut rng).unwrap();
        let got = attack::recover_row(&q, client.public_key());
        // Evaluation at 1 names exactly the region of the row, with weight 1.
        assert_eq!(got.selected_regions, vec![((i / 439) as usize, 1)]);
        assert_eq!(got.offset, Some((i % 439) as usize));
        assert_eq!(got.first_row, Some(i));
    }
    // With grouped rows, the attack finds the group.
    let (_, _, client, mut rng) = setup(2000, 1, 4, 5);
    let (_, q) = client.query(&Selection::row(1001), &mut rng).unwrap();
    assert_eq!(attack::recover_row(&q, client.public_key()).first_row, Some(1000));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// A weighted query over rows at one offset of different regions decodes to
    /// Σ wᵢ·bitᵢ mod 3, bit by bit.
    #[test]
    fn multiple_row_selection_matches_the_plain_sum(
        seed in any::<u64>(), offset in 0u64..439, weights in proptest::collection::vec(1u32..5, 1..4),
    ) {
        let (table, server, client, mut rng) = setup(439 * 4, 1, 1, seed);
        let entries: Vec<(u64, u32)> = weights.iter().enumerate().map(|(r, &w)| (r as u64 * 439 + offset, w)).collect();
        let sel = Selection::weighted(&entries).unwrap();
        let (st, q) = client.query(&sel, &mut rng).unwrap();
        let got = client.decode(&st, &server.answer(&q).unwrap()).unwrap();
        prop_assert_eq!(got.symbols, client.symbols().weighted_sum(&table, &sel).unwrap());
    }
}
