//! The PSI sender service over loopback TCP and TLS: concurrency, refusals,
//! deadlines, and responses bound to their session.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::Ristretto255;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, FramedListener, NetConfig, tls};
use tacit_psi::service::{self, Event, QueryError, SenderPool, ServiceConfig, Supply};
use tacit_psi::{
    Error, PsiParams, Receiver, ReceiverPrecomputation, Reuse, Security, Sender, SenderKey, SenderPrecomputation,
};

type G = Ristretto255;

fn params() -> PsiParams {
    PsiParams::new(Security::Malicious).with_bounds(4, 64)
}

fn book() -> Vec<String> {
    (0..50).map(|i| format!("contact-{i}")).collect()
}

fn sender(reuse: Reuse, epoch: u64) -> Sender<G> {
    let mut rng = SecureRng::from_os();
    let key = SenderKey::<G>::generate(&mut rng, epoch);
    let pre = SenderPrecomputation::compute(&params(), &key, &book(), reuse, &mut rng).unwrap();
    Sender::new(&params(), key, pre).unwrap()
}

fn net(deadline: Duration) -> NetConfig {
    NetConfig::default().with_deadline(deadline)
}

async fn start(
    supply: Supply<G>,
    max_clients: usize,
    deadline: Duration,
    tls: Option<Arc<tls::ServerConfig>>,
) -> (
    String,
    Arc<Mutex<Vec<Event>>>,
    tokio::task::JoinHandle<tacit_psi::Result<()>>,
) {
    let l = FramedListener::bind("127.0.0.1:0", &net(deadline)).await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let events = Arc::new(Mutex::new(Vec::new()));
    let ev = events.clone();
    let cfg = ServiceConfig {
        max_clients,
        max_per_address: service::DEFAULT_MAX_PER_ADDRESS,
        net: net(deadline),
        tls,
    };
    let task = tokio::spawn(service::serve(
        l,
        Arc::new(supply),
        cfg,
        None,
        Arc::new(move |e| ev.lock().unwrap().push(e)),
    ));
    (addr, events, task)
}

fn ids() -> ReceiverPrecomputation<G> {
    ReceiverPrecomputation::compute(
        &params(),
        &["contact-7", "stranger", "contact-42"],
        &mut SecureRng::from_os(),
    )
    .unwrap()
}

fn items(i: &tacit_psi::Intersection) -> Vec<String> {
    i.items()
        .iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect()
}

/// Issue 10: one client that connects, sends one byte and stalls used to hold every
/// other client for the whole read timeout. Now a burst of honest clients is answered
/// while the staller is still connected. (Its byte is the first of a greeting: a byte
/// that cannot begin one is refused at once, issue 28.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_client_does_not_delay_the_others() {
    let pool = SenderPool::start(2, || Ok(sender(Reuse::FreshPerSession, 1)));
    let (addr, events, task) = start(Supply::Fresh(pool), 16, Duration::from_secs(30), None).await;
    let mut staller = tokio::net::TcpStream::connect(&addr).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut staller, &tacit_net::greeting::MAGIC[..1])
        .await
        .unwrap();
    let mut honest = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let addr = addr.clone();
        honest.spawn(async move { service::query(&addr, &ids(), None, &NetConfig::default()).await });
    }
    while let Some(r) = honest.join_next().await {
        assert_eq!(items(&r.unwrap().unwrap().intersection), ["contact-7", "contact-42"]);
    }
    // The staller still holds its connection: nobody waited for it to time out. (It
    // has the server's greeting to read first.)
    let mut greeting = [0u8; tacit_net::greeting::LEN];
    tokio::io::AsyncReadExt::read_exact(&mut staller, &mut greeting)
        .await
        .unwrap();
    let mut buf = [0u8; 1];
    let still_open = tokio::time::timeout(
        Duration::from_millis(100),
        tokio::io::AsyncReadExt::read(&mut staller, &mut buf),
    )
    .await
    .is_err();
    assert!(
        still_open,
        "the server gave up on the staller before answering the others"
    );
    let answered = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, Event::Answered { .. }))
        .count();
    assert_eq!(answered, 8);
    task.abort();
}

/// Beyond --max-clients a client is refused at once with a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_beyond_the_limit_are_refused_with_a_reason() {
    let supply = Supply::Epoch(Arc::new(sender(Reuse::WithinEpoch, 1)));
    let (addr, events, task) = start(supply, 1, Duration::from_secs(30), None).await;
    let _staller = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    match service::query(&addr, &ids(), None, &NetConfig::default()).await {
        Err(QueryError::Refused(why)) => assert!(why.contains("busy"), "{why}"),
        other => panic!("not refused: {other:?}"),
    }
    assert!(events.lock().unwrap().iter().any(|e| matches!(e, Event::Busy { .. })));
    task.abort();
}

/// A session that runs past its deadline is cut off and frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_past_its_deadline_frees_its_slot() {
    let supply = Supply::Epoch(Arc::new(sender(Reuse::WithinEpoch, 1)));
    let (addr, events, task) = start(supply, 1, Duration::from_millis(300), None).await;
    let staller = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let r = service::query(&addr, &ids(), None, &NetConfig::default())
        .await
        .unwrap();
    assert_eq!(items(&r.intersection), ["contact-7", "contact-42"]);
    drop(staller);
    let ev = events.lock().unwrap();
    assert!(
        ev.iter().any(|e| match e {
            Event::Failed { why, .. } => why.contains("deadline") || why.contains("nothing"),
            Event::Admission(what) => what.contains("deadline"),
            _ => false,
        }),
        "{ev:?}"
    );
    task.abort();
}

/// Issue 9, defect 7: over TLS with the server's key pinned, the query works and the
/// proof is bound to the session; a client pinning another key refuses the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_pinned_key_and_session_bound_proofs() {
    let id = tls::SelfSigned::generate("tacit-psi.invalid").unwrap();
    let supply = Supply::Epoch(Arc::new(sender(Reuse::WithinEpoch, 1)));
    let (addr, _, task) = start(supply, 4, Duration::from_secs(30), Some(id.server_config().unwrap())).await;
    let client = tls::checked_server_client(tls::pinned(id.fingerprint().unwrap())).unwrap();
    let r = service::query(
        &addr,
        &ids(),
        Some((client, "tacit-psi.invalid")),
        &NetConfig::default(),
    )
    .await
    .unwrap();
    assert!(r.tls);
    assert_eq!(items(&r.intersection), ["contact-7", "contact-42"]);
    let other = tls::SelfSigned::generate("tacit-psi.invalid").unwrap();
    let wrong = tls::checked_server_client(tls::pinned(other.fingerprint().unwrap())).unwrap();
    let e = service::query(&addr, &ids(), Some((wrong, "tacit-psi.invalid")), &NetConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(e, QueryError::Net(tacit_net::Error::Tls(_))), "{e}");
    // a plain client cannot talk to a TLS server
    assert!(
        service::query(&addr, &ids(), None, &NetConfig::default())
            .await
            .is_err()
    );
    task.abort();
}

/// A response bound to one session fails in any other: a relay or a substituted
/// response is caught by the proof.
#[test]
fn a_response_from_another_session_fails_the_proof() {
    let mut rng = SecureRng::from_os();
    let s = sender(Reuse::WithinEpoch, 1);
    let pre = ids();
    let (waiting, request) = Receiver::start(&pre);
    let response = s.respond_bound(&request, b"binding of session A", &mut rng).unwrap();
    assert!(matches!(
        waiting.on_response_bound(&response, b"binding of session B"),
        Err(Error::ProofFailed)
    ));
    let (waiting, request) = Receiver::start(&pre);
    let response = s.respond_bound(&request, b"binding of session A", &mut rng).unwrap();
    assert!(matches!(waiting.on_response(&response), Err(Error::ProofFailed)));
    let (waiting, request) = Receiver::start(&pre);
    let response = s.respond_bound(&request, b"binding of session A", &mut rng).unwrap();
    assert_eq!(
        waiting
            .on_response_bound(&response, b"binding of session A")
            .unwrap()
            .len(),
        2
    );
}

/// Issue 32, item 1: idle connections from one address filled every slot, and honest
/// clients were refused as busy until those timed out. Now an address gets its share
/// and a newcomer from another address takes a slot from the busiest one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_from_one_address_does_not_keep_honest_clients_out() {
    let supply = Supply::Epoch(Arc::new(sender(Reuse::WithinEpoch, 1)));
    let (addr, _events, task) = start(supply, 4, Duration::from_secs(30), None).await;
    let mut idle = Vec::new();
    for _ in 0..10 {
        if let Ok(c) = tacit_net::guard::connect_from("127.0.0.2".parse().unwrap(), addr.parse().unwrap()).await {
            idle.push(c);
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..3 {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            service::query(&addr, &ids(), None, &NetConfig::default()),
        )
        .await
        .expect("waited past 5 s")
        .expect("refused");
        assert_eq!(items(&r.intersection), ["contact-7", "contact-42"]);
    }
    task.abort();
}
