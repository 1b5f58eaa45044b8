//! The serving shell (issue 26, item 5): a session that runs past its deadline is
//! dropped, a first message over the bound is refused before it is read, and sessions
//! run side by side.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
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
        let r = Responder::new(ReconcileParams::default(), &["x", "y"], 256, 4096)?;
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
    let k = PrivateKey::generate(256).unwrap();
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
    let (_, q) = a
        .on_accept(&acc, &NO_CHANNEL_BINDING, &mut ChaCha20Rng::seed_from_u64(2))
        .unwrap();
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
