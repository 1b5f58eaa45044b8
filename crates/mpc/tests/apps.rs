//! The applications of paper §6 between two parties over real TCP connections, each
//! compared with its plaintext reference: availability and location-aware scheduling
//! (OT-extension triples) and set intersection (OT-extension and token triples), and
//! the refusals a deviating or mismatched peer meets.

use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use tacit_crypto::sign::SigningKey;
use tacit_mpc::apps::location::{self, LocationParams, Origin, SlotInput};
use tacit_mpc::apps::psi::{self, PreparedSet};
use tacit_mpc::apps::schedule::{Geo, Kind, Outcome, ScheduleHello, ScheduleInput, Window, run_session};
use tacit_mpc::apps::{availability, paper};
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::TokenTrust;
use tacit_mpc::triples::token::card::{Card, MemoryEeprom, TokenSpec, TokenState};
use tacit_mpc::triples::token::holder::{LocalTokenLink, Pool, TokenHolder, TokenPeer};
use tacit_mpc::{Error, Party};
use tacit_net::{FramedConn, FramedListener, NetConfig};

async fn pair() -> (FramedConn, FramedConn) {
    let cfg = NetConfig::default();
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let addr = l.local_addr().unwrap();
    let (a, b) = tokio::join!(l.accept(), FramedConn::connect(addr, &cfg));
    (a.unwrap(), b.unwrap())
}

fn ot(seed: u64) -> OtSource<ChaCha20Rng> {
    OtSource::new(ChaCha20Rng::seed_from_u64(seed))
}

fn window(n: usize) -> Window {
    let starts: Vec<i64> = (0..n as i64).map(|j| 1_700_000_000 + 900 * j).collect();
    Window {
        days: vec![(1_700_000_000, 1_700_000_000 + 900 * n as i64 + 3600); n],
        starts,
        duration: 1800,
    }
}

async fn schedule_both(
    ha: &ScheduleHello,
    hb: &ScheduleHello,
    ia: &ScheduleInput,
    ib: &ScheduleInput,
) -> (Result<Outcome, Error>, Result<Outcome, Error>) {
    let (mut ca, mut cb) = pair().await;
    let mut ra = ChaCha20Rng::seed_from_u64(1);
    let mut rb = ChaCha20Rng::seed_from_u64(2);
    let (mut sa, mut sb) = (ot(3), ot(4));
    let (a, b) = tokio::join!(
        run_session(&mut ca, Party::A, ha, ia, &mut sa, &mut ra),
        run_session(&mut cb, Party::B, hb, ib, &mut sb, &mut rb),
    );
    (a.map(|x| x.0), b.map(|x| x.0))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// Both parties learn exactly the common free slots.
    #[test]
    fn availability_over_tcp_matches_the_and(a in proptest::collection::vec(any::<bool>(), 56),
                                             b in proptest::collection::vec(any::<bool>(), 56)) {
        let w = window(56);
        let h = ScheduleHello::new(Kind::Availability, &w);
        let (oa, ob) = rt().block_on(schedule_both(&h, &h, &ScheduleInput::Free(a.clone()), &ScheduleInput::Free(b.clone())));
        let want: Vec<usize> = availability::reference(&a, &b).iter().enumerate().filter(|x| *x.1).map(|x| x.0).collect();
        prop_assert_eq!(oa.unwrap(), Outcome::Common(want.clone()));
        prop_assert_eq!(ob.unwrap(), Outcome::Common(want));
    }
}

fn random_slots(rng: &mut ChaCha20Rng, n: usize) -> Vec<SlotInput> {
    let origin = |rng: &mut ChaCha20Rng| {
        (!rng.next_u32().is_multiple_of(4)).then(|| Origin {
            x: 500 + rng.next_u32() % 40,
            y: 500 + rng.next_u32() % 40,
            reach: rng.next_u32() % 16,
        })
    };
    (0..n)
        .map(|_| SlotInput {
            prev: origin(rng),
            next: origin(rng),
        })
        .collect()
}

#[test]
fn location_over_tcp_matches_the_reference() {
    let n = 12;
    let geo = Geo {
        params: LocationParams::new(n),
        origin: (52.52, 13.405),
        unit_m: 250.0,
    };
    let w = window(n);
    let h = ScheduleHello::new(Kind::Location(geo), &w);
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    let mut found = 0;
    for _ in 0..4 {
        let (a, b) = (random_slots(&mut rng, n), random_slots(&mut rng, n));
        let want = location::reference(&LocationParams::new(n), &a, &b);
        found += want.is_some() as usize;
        let (oa, ob) = rt().block_on(schedule_both(
            &h,
            &h,
            &ScheduleInput::Located(a),
            &ScheduleInput::Located(b),
        ));
        assert_eq!(oa.unwrap(), Outcome::Located(want));
        assert_eq!(ob.unwrap(), Outcome::Located(want));
    }
    assert!(found > 0, "the random calendars never met; the test would not test");
}

#[test]
fn mismatched_schedules_are_refused_by_both() {
    let n = 8;
    let geo = Geo {
        params: LocationParams::new(n),
        origin: (52.52, 13.405),
        unit_m: 250.0,
    };
    let free = ScheduleInput::Free(vec![true; n]);
    let w = window(n);
    let mut later = window(n);
    later.starts[3] += 60;
    let mut longer = window(n);
    longer.duration += 900;
    let mut other_geo = geo;
    other_geo.unit_m = 500.0;
    for (hb, why) in [
        (ScheduleHello::new(Kind::Availability, &later), "windows differ"),
        (
            ScheduleHello::new(Kind::Availability, &longer),
            "meeting lengths differ",
        ),
        (ScheduleHello::new(Kind::Location(geo), &w), "with locations"),
    ] {
        let ha = ScheduleHello::new(Kind::Availability, &w);
        let ib = match hb.kind {
            Kind::Location(_) => ScheduleInput::Located(vec![SlotInput::default(); n]),
            Kind::Availability => free.clone(),
        };
        let (oa, ob) = rt().block_on(schedule_both(&ha, &hb, &free, &ib));
        for e in [oa.unwrap_err(), ob.unwrap_err()] {
            assert!(e.to_string().contains(why), "{e} lacks {why:?}");
        }
    }
    let ha = ScheduleHello::new(Kind::Location(geo), &w);
    let hb = ScheduleHello::new(Kind::Location(other_geo), &w);
    let li = ScheduleInput::Located(vec![SlotInput::default(); n]);
    let (oa, ob) = rt().block_on(schedule_both(&ha, &hb, &li, &li));
    assert!(oa.unwrap_err().to_string().contains("grid units differ"));
    assert!(ob.unwrap_err().to_string().contains("grid units differ"));
}

fn set(v: &[u64]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

async fn psi_both<SA: tacit_mpc::driver::TripleSource, SB: tacit_mpc::driver::TripleSource>(
    a: &PreparedSet,
    b: &PreparedSet,
    mut sa: SA,
    mut sb: SB,
) -> (Result<psi::PsiReport, Error>, Result<psi::PsiResult, Error>) {
    let (mut ca, mut cb) = pair().await;
    let mut ra = ChaCha20Rng::seed_from_u64(11);
    let mut rb = ChaCha20Rng::seed_from_u64(12);
    tokio::join!(
        psi::serve(&mut ca, a, 1 << 10, &mut sa, &mut ra),
        psi::query(&mut cb, b, 1 << 10, &mut sb, &mut rb),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    /// The querier learns exactly the intersection (OT-extension triples); the server
    /// learns no output.
    #[test]
    fn psi_over_tcp_matches_the_intersection(xs in proptest::collection::btree_set(0u64..64, 1..20),
                                             ys in proptest::collection::btree_set(0u64..64, 1..20)) {
        let xs: Vec<u64> = xs.into_iter().collect();
        let ys: Vec<u64> = ys.into_iter().collect();
        let a = PreparedSet::new(&set(&xs), 24).unwrap();
        let b = PreparedSet::new(&set(&ys), 24).unwrap();
        let (ra, rb) = rt().block_on(psi_both(&a, &b, ot(5), ot(6)));
        let ra = ra.unwrap();
        prop_assert!(ra.run.outputs.values.is_empty());
        let mut want: Vec<String> = set(&ys.iter().copied().filter(|y| xs.contains(y)).collect::<Vec<_>>());
        want.sort();
        prop_assert_eq!(rb.unwrap().elements, want);
    }
}

#[test]
fn psi_with_token_triples_and_hashed_elements() {
    let mut rng = ChaCha20Rng::seed_from_u64(21);
    let ca = SigningKey::generate(&mut rng);
    let card = Card::new(
        TokenState::manufacture(&ca, &TokenSpec::software("tacit test fab", [0; 32]), &mut rng).unwrap(),
        MemoryEeprom::default(),
    )
    .unwrap();
    let a = PreparedSet::new(
        &[
            "alice@example.org".into(),
            "carol@example.org".into(),
            "dave@example.org".into(),
        ],
        32,
    )
    .unwrap();
    let b = PreparedSet::new(
        &[
            "carol@example.org".into(),
            "erin@example.org".into(),
            "alice@example.org".into(),
        ],
        32,
    )
    .unwrap();
    let (ra, rb) = rt().block_on(async {
        let holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
            .await
            .unwrap();
        let trust = TokenTrust::new(ca.verifying_key(), 0).accepting_software();
        let peer = TokenPeer::new(trust, ChaCha20Rng::seed_from_u64(22));
        psi_both(&a, &b, holder, peer).await
    });
    let ra = ra.unwrap();
    let rb = rb.unwrap();
    assert_eq!(
        rb.elements,
        vec!["alice@example.org".to_string(), "carol@example.org".to_string()]
    );
    // 3·3 / 2^32
    assert!((rb.report.false_positive_bound - 9.0 / 2f64.powi(32)).abs() < 1e-15);
    assert_eq!(ra.params, rb.report.params);
}

#[test]
fn psi_refuses_other_lengths_and_oversized_queries() {
    let a = PreparedSet::new(&set(&[1, 2, 3]), 24).unwrap();
    let b = PreparedSet::new(&set(&[1, 2, 3]), 32).unwrap();
    let (ra, rb) = rt().block_on(psi_both(&a, &b, ot(1), ot(2)));
    assert!(ra.unwrap_err().to_string().contains("24-bit"));
    assert!(rb.unwrap_err().to_string().contains("24-bit"));
    // A query larger than the server takes.
    let big = PreparedSet::new(&set(&(0..2000).collect::<Vec<_>>()), 24).unwrap();
    let (ra, rb) = rt().block_on(psi_both(&a, &big, ot(1), ot(2)));
    assert!(ra.unwrap_err().to_string().contains("at most 1024"));
    assert!(rb.unwrap_err().to_string().contains("at most 1024"));
}

#[test]
fn every_table_point_is_no_larger_than_the_papers() {
    for (_, n) in paper::WINDOWS {
        let s = location::size(&LocationParams::new(n)).unwrap();
        let p = paper::location(n).unwrap();
        assert!(
            s.and_gates <= p.and_gates,
            "location {n}: {} > {}",
            s.and_gates,
            p.and_gates
        );
    }
    for sigma in paper::PSI_BITS {
        for n in paper::PSI_SIZES {
            let s = psi::size(&psi::PsiParams { sigma, n_a: n, n_b: n }).unwrap();
            let p = paper::psi(sigma, n).unwrap();
            assert!(s.and_gates <= p, "psi σ={sigma} n={n}: {} > {p}", s.and_gates);
        }
    }
}
