//! `lwe-gpu` against the CPU `lwe` server: the same hint, table id and answers, bit
//! for bit, on random tables and random (also malformed-looking) query vectors, for
//! the small-batch kernel, the tensor-core path, tables split into several parts,
//! and row updates. Without a GPU every test prints why it is skipped and checks
//! that the backend refuses in one line.
#![cfg(feature = "gpu")]

mod common;

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_pir::gpu::{self, GpuConfig, GpuLweServer, GpuSelection};
use tacit_pir::lwe::{LweClient, LweParams, LweQuery, LweServer};
use tacit_pir::stream::PipelinedLwe;
use tacit_pir::{Error, PirClient, PirServer, Selection, Table, TableShape};

/// `None` (after printing why) when there is no usable GPU here.
fn gpu_or_skip(test: &str) -> Option<usize> {
    match gpu::available() {
        Ok(n) => Some(n),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "the refusal is one line: {msg:?}");
            assert!(matches!(e, Error::Gpu(_)));
            eprintln!("skipping {test}: {msg}");
            None
        }
    }
}

fn config(gpus: &str, small: usize, chunk: usize) -> GpuConfig {
    GpuConfig {
        gpus: gpus.parse().unwrap(),
        small_batch: small,
        chunk,
    }
}

fn random_queries(server: &LweServer, n: usize, rng: &mut ChaCha20Rng) -> Vec<LweQuery> {
    (0..n)
        .map(|_| LweQuery {
            table_id: server.table_id(),
            values: (0..server.params().cols()).map(|_| rng.next_u32()).collect(),
        })
        .collect()
}

#[test]
fn without_a_gpu_setup_refuses_in_one_line() {
    if gpu::available().is_ok() {
        eprintln!("a GPU is present; the refusal path is not reachable here");
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let table = Table::random(TableShape::new(100, 8).unwrap(), &mut rng);
    let params = LweParams::new(table.shape(), [0; 16]).unwrap();
    let e = GpuLweServer::setup(&table, params, GpuConfig::default()).unwrap_err();
    assert!(matches!(e, Error::Gpu(_)));
    assert!(!e.to_string().contains('\n'));
}

#[test]
fn gpu_answers_equal_cpu_answers() {
    let Some(n) = gpu_or_skip("gpu_answers_equal_cpu_answers") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let all: String = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    for &(rows, bytes) in &[(1u64, 1u32), (997, 13), (20_000, 41), (70_001, 16)] {
        let table = Table::random(TableShape::new(rows, bytes).unwrap(), &mut rng);
        let mut seed = [0u8; 16];
        rng.fill_bytes(&mut seed);
        let params = LweParams::new(table.shape(), seed).unwrap();
        let cpu = LweServer::setup(&table, params).unwrap();
        for gpus in ["0", "0,0,0", all.as_str()] {
            for (small, chunk) in [(8, 2048), (0, 5)] {
                let g = GpuLweServer::setup(&table, params, config(gpus, small, chunk)).unwrap();
                assert_eq!(g.hint().h, cpu.hint().h, "hint, {rows}x{bytes} on {gpus}");
                assert_eq!(g.table_id(), cpu.table_id());
                for nq in [1, 2, 3, 8, 9, 17] {
                    let qs = random_queries(&cpu, nq, &mut rng);
                    let want = cpu.answer_batch(&qs).unwrap();
                    let got = g.answer_batch(&qs).unwrap();
                    assert_eq!(got, want, "{rows}x{bytes}, {nq} queries, gpus {gpus}, small {small}");
                }
            }
        }
    }
}

/// Wide rows of `D` (2 500 columns, 64 rows): the one- and two-query kernel's
/// unrolled loads and its shared-memory layout, on one part and on two.
#[test]
fn gpu_wide_rows_equal_cpu_answers() {
    let Some(_) = gpu_or_skip("gpu_wide_rows_equal_cpu_answers") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let table = Table::random(TableShape::new(20_003, 8).unwrap(), &mut rng);
    let params = LweParams::with_slots(table.shape(), 8, [9; 16]).unwrap();
    assert!(params.cols() > 2048 && !params.cols().is_multiple_of(16));
    let cpu = LweServer::setup(&table, params).unwrap();
    for gpus in ["0", "0,0"] {
        let g = GpuLweServer::setup(&table, params, config(gpus, 8, 64)).unwrap();
        assert_eq!(g.hint().h, cpu.hint().h);
        for nq in [1, 2, 3, 5, 8, 9, 70] {
            let qs = random_queries(&cpu, nq, &mut rng);
            assert_eq!(
                g.answer_batch(&qs).unwrap(),
                cpu.answer_batch(&qs).unwrap(),
                "{nq} on {gpus}"
            );
        }
    }
}

/// Issue 30, item 2: two parts on one GPU (`--gpus 0,0`) read every chunk from one
/// shared page-locked buffer and write their rows into one result buffer. Their
/// answers are the CPU server's, bit for bit: through `answer_batch` (chunks in a
/// pipeline), through the pipeline driven by hand (every slot busy, then finished out
/// of order), and as TracEdge responses, byte for byte.
#[test]
fn gpu_shared_gather_two_parts_on_one_gpu() {
    let Some(_) = gpu_or_skip("gpu_shared_gather_two_parts_on_one_gpu") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(31);
    for &(rows, bytes) in &[(20_000u64, 41u32), (70_001, 16)] {
        let table = Table::random(TableShape::new(rows, bytes).unwrap(), &mut rng);
        let params = LweParams::new(table.shape(), [4; 16]).unwrap();
        let cpu = LweServer::setup(&table, params).unwrap();
        let g = GpuLweServer::setup(&table, params, config("0,0", 8, 64)).unwrap();
        let parts = g.parts();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.0 == 0) && parts[1].1 == parts[0].2);
        assert_eq!(g.hint().h, cpu.hint().h);
        for nq in [1, 2, 9, 64, 65, 200] {
            let qs = random_queries(&cpu, nq, &mut rng);
            assert_eq!(
                g.answer_batch(&qs).unwrap(),
                cpu.answer_batch(&qs).unwrap(),
                "{nq} queries"
            );
        }
        // By hand: a chunk per slot fills them, one more waits; finished out of order.
        let chunks: Vec<Vec<LweQuery>> = [64usize, 1, 30, 7, 12, 5][..tacit_pir::gpu::SLOTS]
            .iter()
            .map(|&n| random_queries(&cpu, n, &mut rng))
            .collect();
        let mut tickets = Vec::new();
        for qs in &chunks {
            let fill = |j: usize, dst: &mut [u32]| dst.copy_from_slice(&qs[j].values);
            let t = g.submit(qs.len(), &mut |st| st.fill_par(&fill)).unwrap();
            tickets.push(t.expect("a free slot"));
        }
        let mut called = false;
        assert!(g.submit(1, &mut |_| called = true).unwrap().is_none());
        assert!(!called, "no slot, no fill");
        // Every odd slot first, then the even ones from the last.
        let mut order: Vec<usize> = (0..tacit_pir::gpu::SLOTS)
            .filter(|i| i % 2 == 1)
            .chain((0..tacit_pir::gpu::SLOTS).filter(|i| i % 2 == 0).rev())
            .collect();
        let mut tickets: Vec<Option<tacit_pir::stream::Ticket>> = tickets.into_iter().map(Some).collect();
        for i in order.drain(..) {
            let want = cpu.answer_batch(&chunks[i]).unwrap();
            let mut got = Vec::new();
            g.finish(tickets[i].take().unwrap(), &mut |a| {
                got = (0..a.len()).map(|j| a.get(j).to_vec()).collect();
            })
            .unwrap();
            let want: Vec<Vec<u32>> = want.into_iter().map(|a| a.values).collect();
            assert_eq!(got, want, "chunk {i}");
        }
        // A ticket of another server is refused.
        let other = GpuLweServer::setup(&table, params, config("0", 8, 64)).unwrap();
        let qs = random_queries(&cpu, 3, &mut rng);
        let fill = |j: usize, dst: &mut [u32]| dst.copy_from_slice(&qs[j].values);
        let t = other.submit(3, &mut |st| st.fill_par(&fill)).unwrap().unwrap();
        assert!(matches!(g.finish(t, &mut |_| {}), Err(Error::Gpu(_))));
    }
    // TracEdge on the two parts: the responses are the CPU server's, byte for byte.
    let rows = [0u64, 5, 77, 120, 199];
    let mut a = common::world(41, |t, p| LweServer::setup(t, p).unwrap());
    let mut b = common::world(41, |t, p| {
        tacit_pir::LweAnyServer::setup(
            t,
            p,
            &tacit_pir::LweBackend::Gpu(GpuConfig {
                gpus: "0,0".parse().unwrap(),
                small_batch: 8,
                chunk: 4,
            }),
        )
        .unwrap()
    });
    let (_, _, mut ss_a, qs_a) = common::sessions(&mut a, &rows);
    let (subs, mut cs_b, ss_b, qs_b) = common::sessions(&mut b, &rows);
    assert_eq!(qs_a, qs_b);
    let want: Vec<Vec<u8>> = {
        use tacit_pir::tracedge::{Queries, ServerSession};
        use tacit_wire::Encode;
        let mut items: Vec<(&mut ServerSession, &Queries)> = ss_a.iter_mut().zip(qs_a.iter()).collect();
        a.server
            .respond_batch(&mut items)
            .into_iter()
            .map(|r| r.unwrap().to_wire())
            .collect()
    };
    let items = ss_b
        .into_iter()
        .zip(&qs_b)
        .map(|(s, q)| (s, tacit_pir::tracedge::QueriesFrame::of(q)))
        .collect();
    for (i, (mut ss, r)) in b.server.respond_frames(items).into_iter().enumerate() {
        let bytes = r.unwrap();
        assert_eq!(bytes, want[i], "session {i}");
        common::complete(&mut b, &subs[i], &mut cs_b[i], &mut ss, &bytes);
    }
}

#[test]
fn gpu_extreme_values_and_real_queries() {
    let Some(_) = gpu_or_skip("gpu_extreme_values_and_real_queries") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    // All-0xff rows centre to +127 (p = 256) and all-zero rows to -128.
    let shape = TableShape::new(4_000, 41).unwrap();
    let mut data = vec![0u8; shape.table_bytes() as usize];
    for (i, b) in data.iter_mut().enumerate() {
        *b = if (i / 41) % 2 == 0 { 0xff } else { 0 };
    }
    let table = Table::from_bytes(data, 41).unwrap();
    let params = LweParams::new(shape, [3; 16]).unwrap();
    let cpu = LweServer::setup(&table, params).unwrap();
    let g = GpuLweServer::setup(&table, params, config("0", 8, 64)).unwrap();
    for v in [0u32, u32::MAX, 0x8080_8080, 0x7f7f_7f7f, 0x8000_0000] {
        let q = vec![
            LweQuery {
                table_id: cpu.table_id(),
                values: vec![v; params.cols()]
            };
            12
        ];
        assert_eq!(
            g.answer_batch(&q).unwrap(),
            cpu.answer_batch(&q).unwrap(),
            "value {v:#x}"
        );
        assert_eq!(g.answer_batch(&q[..1]).unwrap(), cpu.answer_batch(&q[..1]).unwrap());
    }
    // A real client decodes the GPU's answers.
    let client = LweClient::new(g.hint()).unwrap();
    for row in [0u64, 1, 1999, 3999] {
        let (st, q) = client.query(&Selection::row(row), &mut rng).unwrap();
        let a = g.answer(&q).unwrap();
        assert_eq!(
            client.decode(&st, &a).unwrap().to_row_bytes(41),
            table.row(row).unwrap()
        );
    }
}

#[test]
fn gpu_updates_match_cpu_updates() {
    let Some(_) = gpu_or_skip("gpu_updates_match_cpu_updates") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let table = Table::random(TableShape::new(5_000, 41).unwrap(), &mut rng);
    let params = LweParams::new(table.shape(), [5; 16]).unwrap();
    let mut cpu = LweServer::setup(&table, params).unwrap();
    let mut g = GpuLweServer::setup(&table, params, config("0,0", 8, 64)).unwrap();
    for row in [0u64, 2_500, 4_999] {
        let mut bytes = vec![0u8; 41];
        rng.fill_bytes(&mut bytes);
        let a = cpu.update_row(row, &bytes).unwrap();
        let b = g.update_row(row, &bytes).unwrap();
        assert_eq!(a, b);
        let qs = random_queries(&cpu, 10, &mut rng);
        assert_eq!(g.answer_batch(&qs).unwrap(), cpu.answer_batch(&qs).unwrap());
    }
    // Wrong table and wrong length are refused like the CPU server refuses them.
    let mut q = random_queries(&cpu, 1, &mut rng);
    q[0].table_id[0] ^= 1;
    assert!(matches!(g.answer(&q[0]), Err(Error::WrongTable { .. })));
    let mut q = random_queries(&cpu, 1, &mut rng);
    q[0].values.pop();
    assert!(matches!(g.answer(&q[0]), Err(Error::WrongLength { .. })));
    assert!(matches!("9".parse::<GpuSelection>(), Ok(GpuSelection::List(_))));
    assert!(GpuLweServer::setup(&table, params, config("63", 8, 64)).is_err());
}

/// TracEdge key-table rows with the scalar multiplications on the GPU equal the CPU's
/// byte for byte (flagged rows included, one part and two), and a key that is no
/// public key is refused with the CPU's message.
#[test]
fn gpu_key_table_rows_equal_cpu_rows() {
    use tacit_pir::tracedge::keytable::{self, Flagged, SubscriberSecret, TableKey};
    let Some(_) = gpu_or_skip("gpu_key_table_rows_equal_cpu_rows") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(16);
    let key = TableKey::random(&mut rng);
    let second = TableKey::random(&mut rng);
    let n = 3_000;
    let keys: Vec<[u8; 32]> = (0..n)
        .map(|_| SubscriberSecret::random(&mut rng).public_bytes())
        .collect();
    let flagged_rows = [0u64, 17, 2_999];
    let flagged = || {
        Some(Flagged {
            key: &second,
            rows: &flagged_rows,
        })
    };
    let cpu = keytable::build_rows(&key, 7, &keys, flagged(), &|_| {}).unwrap();
    // Informational: the kernel's resources and speed (the bench measures it at 10⁷).
    let many = keys.repeat(100);
    let m =
        tacit_pir::gpu::ristretto::mul_encode(&"0".parse().unwrap(), &key.ephemeral_scalar(), &many, &|_| {}).unwrap();
    eprintln!(
        "ristretto_mul: {} registers, {} bytes local memory per thread, compiled and loaded in {:.2} s, {:.3} s on the GPU for {} keys",
        m.stats.regs,
        m.stats.local_bytes,
        m.stats.compile_s,
        m.stats.gpu_s,
        many.len()
    );
    for gpus in ["0", "0,0"] {
        let sel: GpuSelection = gpus.parse().unwrap();
        let done = std::sync::atomic::AtomicU64::new(0);
        let (gpu, _) = keytable::build_rows_gpu(&sel, &key, 7, &keys, flagged(), &|k| {
            done.fetch_max(k, std::sync::atomic::Ordering::Relaxed);
        })
        .unwrap();
        assert!(gpu == cpu, "rows differ on --gpus {gpus}");
        assert_eq!(done.into_inner(), n as u64);
    }
    // The identity, and a negative (odd) encoding.
    for (row, bad_key) in [(1234, [0u8; 32]), (2000, [1u8; 32])] {
        let mut bad = keys.clone();
        bad[row] = bad_key;
        let sel: GpuSelection = "0".parse().unwrap();
        let e = keytable::build_rows_gpu(&sel, &key, 7, &bad, None, &|_| {}).unwrap_err();
        let c = keytable::build_rows(&key, 7, &bad, None, &|_| {}).unwrap_err();
        assert_eq!(e.to_string(), c.to_string());
        assert!(e.to_string().contains(&format!("row {row}")), "{e}");
    }
}

/// The paper's per-column kernel (`gpu::ntru`) sums a transformed column against a
/// transformed query exactly as the CPU does, for any block parameter β.
#[test]
fn gpu_ntru_column_equals_cpu() {
    let Some(_) = gpu_or_skip("gpu_ntru_column_equals_cpu") else {
        return;
    };
    let mut rng = ChaCha20Rng::seed_from_u64(439);
    let (col, q) = tacit_pir::ntru::random_transformed(301, &mut rng);
    let want = tacit_pir::ntru::column_accumulate(&col, &q);
    let mut g = gpu::ntru::GpuColumn::new(0, &col, &q).unwrap();
    for beta in [1, 7, 64, 96, 301, 1000] {
        assert!(g.accumulate(beta).unwrap() == want, "β = {beta}");
    }
    assert!(g.accumulate(0).is_err());
}
