//! Adversarial review of issue 27 (the token, its host, the channel): each test plays
//! one attack and asserts what docs/mpc.md claims. A test that fails names a break.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::Party;
use tacit_mpc::driver::TripleSource;
use tacit_mpc::triples::token::card::{Card, MAX_LIVE_SEQUENCES, MemoryEeprom, TokenSpec, TokenState};
use tacit_mpc::triples::token::holder::{LocalTokenLink, Pool, TokenHolder, TokenPeer};
use tacit_mpc::triples::token::{TokenOffer, TokenTrust};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Decode, Encode, ErrorMessage};

async fn pair() -> (FramedConn, FramedConn) {
    let cfg = NetConfig::default();
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let addr = l.local_addr().unwrap();
    let (a, b) = tokio::join!(l.accept(), FramedConn::connect(addr, &cfg));
    (a.unwrap(), b.unwrap())
}

fn manufacture(seed: u64) -> (SigningKey, Card<MemoryEeprom>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ca = SigningKey::generate(&mut rng);
    let st = TokenState::manufacture(&ca, &TokenSpec::software("review fab", [9; 32]), &mut rng).unwrap();
    (ca, Card::new(st, MemoryEeprom::default()).unwrap())
}

/// Break (docs/mpc.md, "Space that cannot be exhausted"; issue 27 item 6: "the token
/// can be bricked"): party a sends RELEASE A for every offered sequence *before* b's
/// seed request arrives. A b that walks away after the offer — a deviating querier of
/// `mpc psi serve --triples token`, which admits any key, or simply an honest b
/// without `--accept-software-token`, which refuses the token at exactly this point —
/// leaves those sequences AReleased on the token. The CLI's parties use an in-memory
/// pool by default (`--pool` absent; `mpc psi serve` and `schedule serve` make a
/// fresh source per session), so nobody ever asks for them again, and `make_room`
/// evicts only Generated sequences: after MAX_LIVE_SEQUENCES such sessions every
/// GENERATE answers 6A84 for good (a restart does not drop AReleased sequences, and
/// no command deletes them).
#[tokio::test]
async fn peers_that_walk_away_after_the_offer_do_not_brick_the_token() {
    let (ca, card) = manufacture(41);
    let mut holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    let (mut ca_conn, mut cb_conn) = pair().await;
    for _ in 0..MAX_LIVE_SEQUENCES {
        // Each session of the CLI opens its own (in-memory) pool.
        holder.pool = Pool::in_memory();
        let walk_away = async {
            let got = cb_conn.recv().await.unwrap();
            TokenOffer::from_wire(&got).unwrap();
            cb_conn
                .send(&ErrorMessage::new("b refuses the token").to_wire())
                .await
                .unwrap();
        };
        let (a, ()) = tokio::join!(holder.triples(&mut ca_conn, Party::A, 1), walk_away);
        assert!(a.is_err());
    }
    // An honest b now: the token must still serve the session.
    holder.pool = Pool::in_memory();
    let trust = TokenTrust::new(ca.verifying_key(), 1_800_000_000).accepting_software();
    let mut peer = TokenPeer::new(trust, ChaCha20Rng::seed_from_u64(5));
    // (b is given 5 s: a that fails here does not tell b, which would otherwise wait
    // for its 30 s read timeout.)
    let (a, b) = tokio::join!(
        holder.triples(&mut ca_conn, Party::A, 1),
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            peer.triples(&mut cb_conn, Party::B, 1)
        )
    );
    let b = b.unwrap_or_else(|_| Err(tacit_mpc::Error::Peer("a fell silent".into())));
    let live = holder.link().card.state().sequences().count();
    assert!(
        a.is_ok() && b.is_ok(),
        "after {MAX_LIVE_SEQUENCES} abandoned setups the token refuses an honest session \
         ({live} live sequences): a: {:?}, b: {:?}",
        a.err().map(|e| e.to_string()),
        b.err().map(|e| e.to_string())
    );
}

/// Review of issue 27 (LOW; docs/mpc.md, "What a querier makes the server compute"):
/// the querier of `mpc psi serve` chooses its set size, and with it the circuit the
/// server builds. A server given a memory bound refuses, before it builds anything, a
/// query whose circuit would not fit — with a reason the querier reads — and serves
/// one that fits; the estimate grows with the query.
#[tokio::test]
async fn a_query_whose_circuit_does_not_fit_the_servers_memory_is_refused_before_it_is_built() {
    use tacit_mpc::apps::psi::{self, PreparedSet, PsiParams};
    use tacit_mpc::triples::ot::OtSource;
    let elems = |n: u64| (0..n).map(|x| (3 * x).to_string()).collect::<Vec<_>>();
    let server = PreparedSet::new(&elems(8), 16).unwrap();
    let small = psi::footprint(&PsiParams {
        sigma: 16,
        n_a: 8,
        n_b: 4,
    })
    .unwrap();
    let large = psi::footprint(&PsiParams {
        sigma: 16,
        n_a: 8,
        n_b: 64,
    })
    .unwrap();
    assert!(small < large, "{small} {large}");
    for (n_b, ok) in [(64u64, false), (4, true)] {
        let querier = PreparedSet::new(&elems(n_b), 16).unwrap();
        let (mut ca, mut cb) = pair().await;
        let (mut ra, mut rb) = (ChaCha20Rng::seed_from_u64(1), ChaCha20Rng::seed_from_u64(2));
        let (mut sa, mut sb) = (
            OtSource::new(ChaCha20Rng::seed_from_u64(3)),
            OtSource::new(ChaCha20Rng::seed_from_u64(4)),
        );
        let (a, b) = tokio::join!(
            psi::serve_within(&mut ca, &server, 1 << 10, Some((small + large) / 2), &mut sa, &mut ra),
            psi::query(&mut cb, &querier, 1 << 10, &mut sb, &mut rb)
        );
        if ok {
            assert!(a.is_ok() && b.is_ok(), "{:?} {:?}", a.err(), b.err());
        } else {
            let e = b.unwrap_err().to_string();
            assert!(e.contains("64 elements") && e.contains("MiB"), "{e}");
            assert!(a.is_err());
        }
    }
}

/// Review of the issue-27 fixes ("the memory check of `mpc psi serve` per session,
/// not in total"): the sessions of one server share one budget. A querier whose
/// session has reserved its circuit (it sent its hello and is running) leaves less for
/// the next: a second query that would fit the budget alone, but not beside the
/// first, is refused before anything is built, and the refusal names the sizes in
/// units a person reads (a budget of a few hundred KiB is not "0 MiB"). When the first
/// session ends its reservation is given back and the same query is served. Before the
/// fix each session compared its footprint with the same free memory, so both passed.
#[tokio::test]
async fn sessions_side_by_side_share_one_memory_budget() {
    use tacit_mpc::apps::psi::{self, MemoryBudget, PreparedSet, PsiHello, PsiParams};
    use tacit_mpc::triples::ot::OtSource;
    let elems = |n: u64| (0..n).map(|x| (3 * x).to_string()).collect::<Vec<_>>();
    let server = PreparedSet::new(&elems(8), 16).unwrap();
    let querier = PreparedSet::new(&elems(4), 16).unwrap();
    let need = psi::footprint(&PsiParams {
        sigma: 16,
        n_a: 8,
        n_b: 4,
    })
    .unwrap();
    let total = need + need / 2;
    let budget = MemoryBudget::new(total);
    let (mut a1, mut b1) = pair().await;
    let (mut a2, mut b2) = pair().await;
    let first = async {
        let mut src = OtSource::new(ChaCha20Rng::seed_from_u64(3));
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        psi::serve_reserving(&mut a1, &server, 1 << 10, Some(&budget), &mut src, &mut rng).await
    };
    let rest = {
        let budget = budget.clone();
        let (server, querier) = (&server, &querier);
        async move {
            // The first querier: its hello, then silence (its session holds the
            // reservation while it waits for the querier's GMW hello).
            b1.send(
                &PsiHello {
                    sigma: 16,
                    set_size: 4,
                    hashed: false,
                }
                .to_wire(),
            )
            .await
            .unwrap();
            while budget.left() == total {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            let (mut sa, mut sb) = (
                OtSource::new(ChaCha20Rng::seed_from_u64(5)),
                OtSource::new(ChaCha20Rng::seed_from_u64(6)),
            );
            let (mut ra, mut rb) = (ChaCha20Rng::seed_from_u64(7), ChaCha20Rng::seed_from_u64(8));
            let second = tokio::join!(
                psi::serve_reserving(&mut a2, server, 1 << 10, Some(&budget), &mut sa, &mut ra),
                psi::query(&mut b2, querier, 1 << 10, &mut sb, &mut rb)
            );
            drop(b1);
            second
        }
    };
    let (r1, (s2, q2)) = tokio::join!(first, rest);
    assert!(r1.is_err(), "the silent querier's session ended");
    assert!(
        s2.is_err() && q2.is_err(),
        "a second query was served beside the first though both do not fit: {:?}",
        q2.as_ref().map(|r| r.elements.len())
    );
    let e = q2.unwrap_err().to_string();
    assert!(e.contains("4 elements") && e.contains("now"), "{e}");
    assert!(!e.contains(" 0 MiB"), "{e}");
    assert!(e.contains(&psi::human_bytes(need)), "{e}");
    assert_eq!(budget.left(), total, "the reservations were not given back");
    // The same query, alone now: served.
    let (mut a3, mut b3) = pair().await;
    let (mut sa, mut sb) = (
        OtSource::new(ChaCha20Rng::seed_from_u64(9)),
        OtSource::new(ChaCha20Rng::seed_from_u64(10)),
    );
    let (mut ra, mut rb) = (ChaCha20Rng::seed_from_u64(11), ChaCha20Rng::seed_from_u64(12));
    let (s3, q3) = tokio::join!(
        psi::serve_reserving(&mut a3, &server, 1 << 10, Some(&budget), &mut sa, &mut ra),
        psi::query(&mut b3, &querier, 1 << 10, &mut sb, &mut rb)
    );
    assert!(s3.is_ok() && q3.is_ok(), "{:?} {:?}", s3.err(), q3.err());
    assert_eq!(budget.left(), total);
    assert_eq!(psi::human_bytes(300 << 10), "300 KiB");
    assert_eq!(psi::human_bytes((1 << 20) - (13 << 10)), "1011 KiB");
    assert_eq!(psi::human_bytes(3 << 20), "3.0 MiB");
}
