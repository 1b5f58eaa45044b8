//! The serving shell (issue 26, item 5): a session that runs past its deadline is
//! dropped, a first message over the bound is refused before it is read, and sessions
//! run side by side.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pros::paillier::{PrivateKey, RnPool};
use tacit_pros::service::{self, Event, ServiceConfig};
use tacit_pros::threepr::{Hello, Initiator, ReconcileParams, Reconciled, Responder};
use tacit_pros::{NO_CHANNEL_BINDING, net};

type Log = Arc<Mutex<Vec<Result<Reconciled, String>>>>;

async fn serve(deadline: Duration, sessions: u64, max_clients: usize) -> (String, Log, tokio::task::JoinHandle<()>) {
    let net = NetConfig {
        max_frame: Hello::max_len(4096),
        read_timeout: Duration::from_secs(30),
        deadline: Some(deadline),
        ..NetConfig::default()
    };
    let l = FramedListener::bind("127.0.0.1:0", &net).await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let log: Log = Arc::default();
    let log2 = log.clone();
    let cfg = ServiceConfig {
        max_clients,
        net,
        tls: None,
    };
    let handler = |mut c: FramedConn| async move {
        let r = Responder::new(
            ReconcileParams::default(),
            &["x", "y"],
            1024,
            4096,
            tacit_pros::testing::ring_pedersen(),
        )?;
        net::reconcile_responder(&mut c, r, &mut ChaCha20Rng::seed_from_u64(1)).await
    };
    let events = Arc::new(move |e: Event<Reconciled>| {
        if let Event::Done { result, .. } = e {
            log2.lock().unwrap().push(result);
        }
    });
    let h = tokio::spawn(async move {
        service::serve(l, cfg, Some(sessions), handler, events).await.unwrap();
    });
    (addr, log, h)
}

fn key() -> PrivateKey {
    let k = PrivateKey::generate(1024).unwrap();
    k.modulus_proof().unwrap();
    k
}

/// A peer that answers each step just under the per-message timeout held B for
/// `(2n − 1)` timeouts; the per-session deadline now ends the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_its_deadline_is_dropped() {
    let (addr, log, server) = serve(Duration::from_millis(800), 1, 4).await;
    let k = key();
    let pool = Arc::new(RnPool::new(k.public()).unwrap());
    let (a, hello) = Initiator::start(ReconcileParams::default(), k, &["y", "z"], pool).unwrap();
    let mut c = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
    c.send(&hello).await.unwrap();
    let acc = c.recv().await.unwrap();
    let (_, fac, q) = a
        .on_accept(&acc, &NO_CHANNEL_BINDING, &mut ChaCha20Rng::seed_from_u64(2))
        .unwrap();
    c.send(&fac).await.unwrap();
    // well within the 30 s per-message timeout, past the session's deadline
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let _ = c.send(&q).await;
    server.await.unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 1);
    let e = log[0].as_ref().unwrap_err();
    assert!(e.contains("deadline"), "{e}");
}

/// The first message is bounded by the protocol (a hello at the largest key size),
/// not 256 MiB: a peer announcing more is refused from the frame header.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_message_over_the_bound_is_refused_from_its_header() {
    let (addr, log, server) = serve(Duration::from_secs(10), 1, 4).await;
    let mut raw = tokio::net::TcpStream::connect(addr.as_str()).await.unwrap();
    use tokio::io::AsyncWriteExt;
    raw.write_all(&(100u32 << 20).to_be_bytes()).await.unwrap();
    server.await.unwrap();
    let log = log.lock().unwrap();
    let e = log[0].as_ref().unwrap_err();
    assert!(e.contains("limit is"), "{e}");
    assert!(e.contains(&Hello::max_len(4096).to_string()), "{e}");
}

/// Two sessions at once: an idle connection does not delay an honest one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_does_not_delay_another() {
    let (addr, log, server) = serve(Duration::from_secs(5), 2, 4).await;
    let idle = tokio::net::TcpStream::connect(addr.as_str()).await.unwrap();
    let k = key();
    let pool = Arc::new(RnPool::new(k.public()).unwrap());
    let mut c = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
    let r = net::reconcile_initiator(
        &mut c,
        ReconcileParams::default(),
        k,
        &["y", "z"],
        pool,
        &mut ChaCha20Rng::seed_from_u64(3),
    )
    .await
    .unwrap();
    assert_eq!(r.elements, vec![b"y".to_vec()]);
    drop(idle);
    server.await.unwrap();
    let log = log.lock().unwrap();
    assert!(
        log.iter()
            .any(|r| r.as_ref().is_ok_and(|r| r.elements == vec![b"y".to_vec()]))
    );
}

/// Review of issue 26. docs/pros.md: "at most `--max-clients` at once"; the service shell:
/// "a session past its deadline is dropped at its next message, after the round it is
/// computing". The deadline drops the session's future and its permit, but the
/// blocking work it started (a whole FNP answer in `net::psi_serve`, a round in 3PR)
/// runs on: a client that sends one message and waits out the deadline starts a
/// computation that outlives its session, and the next client gets the permit. Here
/// the handler has the drivers' shape (one `spawn_blocking` per message); with
/// `max_clients = 1` and a 300 ms deadline, five clients in a row left five
/// computations running at once (fails on the code before the fix: peak 5). Now the
/// step holds the session's compute slot until it returns, and the next clients are
/// refused as busy meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_past_the_deadline_is_counted_against_max_clients() {
    let net = NetConfig {
        max_frame: 1 << 16,
        read_timeout: Duration::from_secs(30),
        deadline: Some(Duration::from_millis(300)),
        ..NetConfig::default()
    };
    let l = FramedListener::bind("127.0.0.1:0", &net).await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a2, p2) = (active.clone(), peak.clone());
    let handler = move |mut c: FramedConn| {
        let (active, peak) = (a2.clone(), p2.clone());
        async move {
            let msg = c.recv().await?;
            // the shape of net::psi_serve: the whole answer on the blocking pool,
            // through the drivers' helper
            tacit_pros::net::blocking(move || {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(1500));
                active.fetch_sub(1, Ordering::SeqCst);
                Ok(msg.len())
            })
            .await?;
            c.send(b"answer").await?;
            Ok::<_, tacit_pros::Error>(())
        }
    };
    let cfg = ServiceConfig {
        max_clients: 1,
        net,
        tls: None,
    };
    let events = Arc::new(|_e: Event<()>| {});
    let server = tokio::spawn(async move { service::serve(l, cfg, Some(5), handler, events).await });
    for _ in 0..5 {
        let mut c = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
        c.send(b"query").await.unwrap();
        // wait until the server drops us at its deadline
        let _ = c.recv().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let peak_now = peak.load(Ordering::SeqCst);
    server.abort();
    assert!(
        peak_now <= 1,
        "max_clients = 1, yet {peak_now} sessions' computations ran at once (each outlived its dropped session)"
    );
}
