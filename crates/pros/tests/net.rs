//! The engines over real framed TCP on loopback: FNP PSI, 3PR, and scheduling from
//! two .ics calendars.

use chrono::{Duration, TimeZone, Utc};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use tacit_calendar::{Calendar, Pref, Preferences, SlotSpec, free_slots, rank_slots};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pros::fnp::{PsiParams, Sender};
use tacit_pros::paillier::{PrivateKey, RnPool};
use tacit_pros::schedule::{self, SlotEncoding, Window};
use tacit_pros::threepr::{ReconcileParams, Responder, Scheme, Variant};
use tacit_pros::{Error, net};

fn policy() -> schedule::Policy {
    schedule::Policy {
        min_key_bits: 1024,
        max_key_bits: 4096,
        limits: Default::default(),
        ring_pedersen: tacit_pros::testing::ring_pedersen(),
        insecure_small_keys: false,
    }
}

fn cfg() -> NetConfig {
    NetConfig {
        max_frame: net::MAX_FRAME,
        ..NetConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psi_over_tcp() {
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let p = PsiParams::new(8, 8);
    let server = tokio::spawn(async move {
        let s = Sender::new(&p, &["x", "y", "z"], 1024, 4096, tacit_pros::testing::ring_pedersen()).unwrap();
        let mut c = l.accept().await.unwrap();
        net::psi_serve(&mut c, Arc::new(s), &mut ChaCha20Rng::from_seed([1; 32])).await
    });
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let got = net::psi_query(&mut c, &p, key, &["y", "w"], pool, &mut ChaCha20Rng::from_seed([2; 32]))
        .await
        .unwrap();
    assert_eq!(got, vec![b"y".to_vec()]);
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_over_tcp_and_a_refusal_reaches_the_peer() {
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let p = ReconcileParams {
        scheme: Scheme::Mor,
        variant: Variant::ExplicitCached,
        ..Default::default()
    };
    let server = tokio::spawn(async move {
        let mut out = Vec::new();
        for strict in [false, true] {
            let r = Responder::new(
                p,
                &["d", "c", "b", "a"],
                if strict { 2048 } else { 1024 },
                4096,
                tacit_pros::testing::ring_pedersen(),
            )
            .unwrap();
            let mut c = l.accept().await.unwrap();
            out.push(net::reconcile_responder(&mut c, r, &mut ChaCha20Rng::from_seed([3; 32])).await);
        }
        out
    });
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let got = net::reconcile_initiator(
        &mut c,
        p,
        key.clone(),
        &["a", "x", "c"],
        pool.clone(),
        &mut ChaCha20Rng::from_seed([4; 32]),
    )
    .await
    .unwrap();
    // a: max(0, 3) = 3; c: max(2, 1) = 2 → c
    assert_eq!(got.elements, vec![b"c".to_vec()]);
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let e = net::reconcile_initiator(&mut c, p, key, &["a"], pool, &mut ChaCha20Rng::from_seed([5; 32]))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::PeerRefused(ref m) if m.contains("1024 bits")), "{e}");
    let res = server.await.unwrap();
    assert_eq!(res[0].as_ref().unwrap().elements, vec![b"c".to_vec()]);
    assert!(matches!(res[1], Err(Error::KeySize(_))));
}

fn cal(events: &[(&str, &str)]) -> String {
    let mut s = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\n");
    for (i, (a, b)) in events.iter().enumerate() {
        s.push_str(&format!("BEGIN:VEVENT\r\nUID:{i}\r\nDTSTART;TZID=Europe/Berlin:{a}\r\nDTEND;TZID=Europe/Berlin:{b}\r\nEND:VEVENT\r\n"));
    }
    s.push_str("END:VCALENDAR\r\n");
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_from_two_calendars() {
    let tz = chrono_tz::Europe::Berlin;
    let from = tz.with_ymd_and_hms(2025, 1, 6, 9, 0, 0).unwrap().with_timezone(&Utc);
    let to = tz.with_ymd_and_hms(2025, 1, 6, 13, 0, 0).unwrap().with_timezone(&Utc);
    let alice = Calendar::parse(&cal(&[("20250106T090000", "20250106T103000")]), from, to, tz).unwrap();
    let bob = Calendar::parse(&cal(&[("20250106T110000", "20250106T120000")]), from, to, tz).unwrap();
    let mut spec = SlotSpec::new(from, to, Duration::minutes(30), Duration::minutes(30));
    spec.tz = tz;
    let window = Window {
        from,
        to,
        duration: spec.duration,
        step: spec.step,
        encoding: SlotEncoding::Default,
    };
    let prefs_a = Preferences {
        prefer: vec![],
        avoid: vec![Pref::Morning],
    };
    let slots_a = rank_slots(&free_slots(alice.busy(), &spec), &prefs_a, tz);
    let slots_b = rank_slots(&free_slots(bob.busy(), &spec), &Preferences::default(), tz);
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let w2 = window;
    let server = tokio::spawn(async move {
        let mut c = l.accept().await.unwrap();
        schedule::serve(
            &mut c,
            &w2,
            Scheme::Sor,
            Variant::Implicit,
            &slots_b,
            &policy(),
            &mut ChaCha20Rng::from_seed([6; 32]),
        )
        .await
    });
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let a = schedule::connect(
        &mut c,
        &window,
        Scheme::Sor,
        Variant::Implicit,
        key,
        &slots_a,
        pool,
        &mut ChaCha20Rng::from_seed([7; 32]),
    )
    .await
    .unwrap();
    let b = server.await.unwrap().unwrap();
    assert_eq!(a.slots, b.slots);
    // free for both: 10:30, 12:00, 12:30 (Berlin). Alice avoids mornings:
    // her list starts 12:00, 12:30, 10:30, …; Bob lists 09:00 … 10:30, 12:00, 12:30
    // positions: 10:30 → 2+3, 12:00 → 0+4, 12:30 → 1+5 → 12:00 wins
    assert_eq!(a.slots.len(), 1);
    assert_eq!(
        a.slots[0].start,
        tz.with_ymd_and_hms(2025, 1, 6, 12, 0, 0).unwrap().with_timezone(&Utc)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_refuses_another_window() {
    let from = Utc.with_ymd_and_hms(2025, 1, 6, 9, 0, 0).unwrap();
    let w = Window {
        from,
        to: from + Duration::hours(2),
        duration: Duration::minutes(30),
        step: Duration::minutes(30),
        encoding: SlotEncoding::Default,
    };
    let mut other = w;
    other.step = Duration::minutes(15);
    let slots = free_slots(&[], &SlotSpec::new(w.from, w.to, w.duration, w.step));
    let s2 = slots.clone();
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let mut c = l.accept().await.unwrap();
        schedule::serve(
            &mut c,
            &w,
            Scheme::Sor,
            Variant::Implicit,
            &s2,
            &policy(),
            &mut ChaCha20Rng::from_seed([8; 32]),
        )
        .await
    });
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let e = schedule::connect(
        &mut c,
        &other,
        Scheme::Sor,
        Variant::Implicit,
        key,
        &slots,
        pool,
        &mut ChaCha20Rng::from_seed([9; 32]),
    )
    .await
    .unwrap_err();
    // the peer learns which field differs, not our window; each side words the
    // mismatch from its own point of view (issue 28, item 8)
    assert!(matches!(e, Error::PeerMismatch(_)), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "the peer refused: scheduling window mismatch: we run {}; the peer runs another window (it differs in step)",
            other.describe()
        )
    );
    let b = server.await.unwrap().unwrap_err();
    assert_eq!(
        b.to_string(),
        format!(
            "scheduling window mismatch: we run {}; the peer runs {}",
            w.describe(),
            other.describe()
        )
    );
}

/// Issue 28, item 8: on a parameter mismatch the refused side words the server's
/// refusal from its own point of view (it used to print the server's sentence, with
/// "we" meaning the server).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parameter_mismatch_is_worded_by_each_side_for_itself() {
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let theirs = PsiParams::new(10, 8);
    let server = tokio::spawn(async move {
        let s = Sender::new(&theirs, &["x"], 1024, 4096, tacit_pros::testing::ring_pedersen()).unwrap();
        let mut c = l.accept().await.unwrap();
        let psi = net::psi_serve(&mut c, Arc::new(s), &mut ChaCha20Rng::from_seed([1; 32])).await;
        let r = Responder::new(
            ReconcileParams::default(),
            &["a"],
            256,
            4096,
            tacit_pros::testing::ring_pedersen(),
        )
        .unwrap();
        let mut c = l.accept().await.unwrap();
        (
            psi,
            net::reconcile_responder(&mut c, r, &mut ChaCha20Rng::from_seed([3; 32])).await,
        )
    });
    let ours = PsiParams::new(20, 8);
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let e = net::psi_query(
        &mut c,
        &ours,
        key.clone(),
        &["y"],
        pool.clone(),
        &mut ChaCha20Rng::from_seed([2; 32]),
    )
    .await
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "the peer refused: parameter mismatch: we run FNP with bucketing, hash encoding, bounds m = 20, n = 8; \
         the peer runs FNP with bucketing, hash encoding, bounds m = 10, n = 8"
    );
    let mor = ReconcileParams {
        scheme: Scheme::Mor,
        ..Default::default()
    };
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let e = net::reconcile_initiator(&mut c, mor, key, &["a"], pool, &mut ChaCha20Rng::from_seed([5; 32]))
        .await
        .unwrap_err();
    let (psi, rec) = server.await.unwrap();
    assert_eq!(
        psi.unwrap_err().to_string(),
        "parameter mismatch: we run FNP with bucketing, hash encoding, bounds m = 10, n = 8; \
         the peer runs FNP with bucketing, hash encoding, bounds m = 20, n = 8"
    );
    let (b, a) = (ReconcileParams::default().describe(), mor.describe());
    assert_eq!(
        e.to_string(),
        format!("the peer refused: parameter mismatch: we run {a}; the peer runs {b}")
    );
    assert_eq!(
        rec.unwrap_err().to_string(),
        format!("parameter mismatch: we run {b}; the peer runs {a}")
    );
}

/// A client that gives the server `read_timeout` per message and `deadline` in all.
fn patient(read_timeout: std::time::Duration, deadline: std::time::Duration) -> NetConfig {
    NetConfig {
        read_timeout,
        deadline: Some(deadline),
        ..cfg()
    }
}

/// Issue 28, item 10: a server that computes for longer than the client's timeout per
/// message (here 1.5 s against 0.4 s) keeps the client waiting with keep-alives, and
/// the client gets its answer. Before keep-alives the client gave up ("the peer sent
/// nothing for 0.4 s").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_honest_server_is_not_cut_off() {
    use std::time::Duration;
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let p = PsiParams::new(8, 8);
    let server = tokio::spawn(async move {
        let s = Arc::new(Sender::new(&p, &["x", "y", "z"], 1024, 4096, tacit_pros::testing::ring_pedersen()).unwrap());
        let mut c = l.accept().await.unwrap();
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        let (opening, setup) = s.open(&mut rng);
        net::send(&mut c, &setup).await.unwrap();
        let q = net::recv_at_most(&mut c, s.max_query_len()).await.unwrap();
        let binding = net::binding_of(&c);
        // the honest answer, after a long computation announced by keep-alives
        let slow = async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let (a, pk) = s.respond(&opening, &q, &binding, &mut rng).unwrap();
            a.to_bytes(&pk)
        };
        let a = c.working(Duration::from_millis(100), slow).await;
        net::send(&mut c, &a).await.unwrap();
    });
    let cfg = patient(Duration::from_millis(400), Duration::from_secs(60));
    let mut c = FramedConn::connect(addr, &cfg).await.unwrap();
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let got = net::psi_query(&mut c, &p, key, &["y", "w"], pool, &mut ChaCha20Rng::from_seed([2; 32]))
        .await
        .unwrap();
    assert_eq!(got, vec![b"y".to_vec()]);
    assert!(c.keepalives_seen() >= 5, "{} keep-alives", c.keepalives_seen());
    server.await.unwrap();
}

/// Issue 28, item 10: a deviating server that answers nothing but keep-alives is cut
/// off at the client's overall deadline (here 2 s), not held forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_sending_only_keepalives_is_cut_off_at_the_deadline() {
    use std::time::Duration;
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let p = PsiParams::new(8, 8);
    let server = tokio::spawn(async move {
        let s = Sender::new(&p, &["x"], 1024, 4096, tacit_pros::testing::ring_pedersen()).unwrap();
        let mut c = l.accept().await.unwrap();
        let (_opening, setup) = s.open(&mut ChaCha20Rng::from_seed([1; 32]));
        net::send(&mut c, &setup).await.unwrap();
        let _q = net::recv_at_most(&mut c, s.max_query_len()).await.unwrap();
        // "work is under way", for ever
        c.working(Duration::from_millis(100), std::future::pending::<()>())
            .await;
    });
    let cfg = patient(Duration::from_millis(400), Duration::from_secs(2));
    let mut c = FramedConn::connect(addr, &cfg).await.unwrap();
    let key = PrivateKey::generate(1024).unwrap();
    let pool = Arc::new(RnPool::new(key.public()).unwrap());
    let e = net::psi_query(&mut c, &p, key, &["y"], pool, &mut ChaCha20Rng::from_seed([2; 32]))
        .await
        .unwrap_err();
    assert_eq!(e.to_string(), "the exchange did not finish within its 2.0 s deadline");
    assert!(c.keepalives_seen() >= 5, "{} keep-alives", c.keepalives_seen());
    drop(c);
    server.abort();
}

/// Review rev26b: the other direction of the keep-alive claim (docs/pros.md, "Long
/// sessions"): a deviating client that sends the FNP server nothing but keep-alives
/// after its setup holds the session only until the server's deadline (here 2 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sending_only_keepalives_is_cut_off_at_the_servers_deadline() {
    use std::time::{Duration, Instant};
    let scfg = patient(Duration::from_millis(400), Duration::from_secs(2));
    let l = FramedListener::bind("127.0.0.1:0", &scfg).await.unwrap();
    let addr = l.local_addr().unwrap();
    let p = PsiParams::new(8, 8);
    let server = tokio::spawn(async move {
        let s = Arc::new(Sender::new(&p, &["x"], 1024, 4096, tacit_pros::testing::ring_pedersen()).unwrap());
        let mut c = l.accept().await.unwrap();
        let start = Instant::now();
        let r = net::psi_serve(&mut c, s, &mut ChaCha20Rng::from_seed([1; 32])).await;
        (r.is_err(), start.elapsed())
    });
    let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
    let _setup = net::recv_at_most(&mut c, net::MAX_FRAME).await.unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(8) && !server.is_finished() {
        if c.send_keepalive().await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (failed, took) = tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server still holds the session")
        .unwrap();
    assert!(failed, "the server finished a session without a query");
    assert!(
        took < Duration::from_secs(4),
        "cut off after {took:?}, not at its 2 s deadline"
    );
}
