//! The library API (`Server::builder()`, `Client::builder()`, `query`) over loopback:
//! an honest run over TLS, trust on first use, the store-kept epoch precomputation,
//! and deviating clients against the library server (an oversized frame, a malformed
//! request, a staller past the deadline) — the protections of `tacit psi serve`
//! come with the builder's defaults.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::Ristretto255;
use tacit_crypto::rng::SecureRng;
use tacit_net::{FramedConn, NetConfig, Protocol, tls};
use tacit_psi::service::Event;
use tacit_psi::{
    Client, PsiParams, Receiver, ReceiverPrecomputation, Reuse, Security, Server, ServerEvent, ServiceError, TLS_NAME,
};
use tacit_store::Store;

fn params() -> PsiParams {
    PsiParams::new(Security::Malicious).with_bounds(4, 64)
}

fn book() -> Vec<String> {
    (0..50).map(|i| format!("contact-{i}")).collect()
}

const IDS: [&str; 3] = ["contact-7", "stranger", "contact-42"];

type Log = Arc<Mutex<Vec<ServerEvent>>>;

fn log() -> (Log, impl Fn(ServerEvent) + Send + Sync + 'static) {
    let log: Log = Arc::default();
    let l = log.clone();
    (log, move |e| l.lock().unwrap().push(e))
}

/// The error and its causes, as the CLI prints them.
fn full(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s = format!("{s}: {c}");
        cause = c.source();
    }
    s
}

fn failures(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ServerEvent::Session(Event::Failed { why, .. }) => Some(why.clone()),
            ServerEvent::Session(Event::Admission(what)) => Some(what.clone()),
            _ => None,
        })
        .collect()
}

/// The server and the client through their builders, over TLS with the server's
/// (fresh, default) key pinned: the intersection, bound to the TLS session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honest_query_through_the_builders_over_tls() {
    let (log, events) = log();
    let server = Server::builder()
        .params(params())
        .set(book())
        .sessions(2)
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, pin) = (
        server.local_addr().to_string(),
        server.fingerprint().expect("TLS by default"),
    );
    assert_eq!(server.distinct(), 50);
    let serving = tokio::spawn(server.serve());
    let mut client = Client::builder().params(params()).pin(pin).build().unwrap();
    let r = client.query(&addr, &IDS).await.unwrap();
    assert_eq!(r.strings(), ["contact-7", "contact-42"]);
    assert!(r.tls);
    assert_eq!(r.server_key, Some(pin));
    assert_eq!(r.recorded_now, None);
    // A client pinning another key refuses the server.
    let other = tls::SelfSigned::generate(TLS_NAME).unwrap().fingerprint().unwrap();
    let e = Client::builder()
        .params(params())
        .pin(other)
        .build()
        .unwrap()
        .query(&addr, &IDS)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &e,
            ServiceError::Query {
                source: tacit_psi::service::QueryError::Net(tacit_net::Error::Tls(_)),
                ..
            }
        ),
        "{e}"
    );
    serving.await.unwrap().unwrap();
    let answered = log
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ServerEvent::Session(Event::Answered { .. })))
        .count();
    assert_eq!(answered, 1);
}

/// `tacit_psi::query` with the default parameters, and a plain-TCP client against
/// the (TLS by default) server, which cannot get an answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_with_defaults_and_no_plain_client_against_a_tls_server() {
    let server = Server::builder().set(book()).bind("127.0.0.1:0").await.unwrap();
    let (addr, pin) = (server.local_addr().to_string(), server.fingerprint().unwrap());
    let serving = tokio::spawn(server.serve());
    let r = tacit_psi::query(&addr, pin, &["contact-3", "nobody"]).await.unwrap();
    assert_eq!(r.strings(), ["contact-3"]);
    let plain = Client::builder().plain_tcp().build().unwrap().query(&addr, &IDS).await;
    assert!(plain.is_err(), "{plain:?}");
    serving.abort();
    // A client must say how it trusts the server.
    let e = Client::builder().build().unwrap_err();
    assert!(e.to_string().contains("pin(fingerprint), tofu(store)"), "{e}");
}

/// Trust on first use: the first query records the server's key in the store; a
/// server at the same address with another key is refused, with the typed error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_on_first_use_records_then_refuses_a_changed_key() {
    let first = Server::builder()
        .params(params())
        .set(book())
        .sessions(2)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = first.local_addr().to_string();
    let key = first.fingerprint().unwrap();
    let serving = tokio::spawn(first.serve());
    let mut client = Client::builder()
        .params(params())
        .tofu(Store::open_in_memory().unwrap())
        .build()
        .unwrap();
    let r = client.query(&addr, &IDS).await.unwrap();
    assert_eq!(r.recorded_now, Some(key));
    assert_eq!(client.recorded_key(&addr).unwrap(), Some(key));
    let r = client.query(&addr, &IDS).await.unwrap();
    assert_eq!((r.recorded_now, r.strings().len()), (None, 2));
    serving.await.unwrap().unwrap();

    // The same address, another key.
    let second = Server::builder()
        .params(params())
        .set(book())
        .sessions(1)
        .bind(addr.as_str())
        .await
        .unwrap();
    assert_ne!(second.fingerprint(), Some(key));
    let serving = tokio::spawn(second.serve());
    let e = client.query(&addr, &IDS).await.unwrap_err();
    assert!(matches!(e, ServiceError::KeyChanged { .. }), "{e}");
    assert!(
        e.to_string().contains("differs from the one recorded on first use"),
        "{e}"
    );
    assert_eq!(
        client.recorded_key(&addr).unwrap(),
        Some(key),
        "the recorded key was replaced"
    );
    serving.await.unwrap().unwrap();
}

/// A deviating client that announces a frame larger than the parameters' largest
/// message is cut off on the header (nothing is read or allocated for it), and an
/// honest client is answered after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_request_is_refused_on_its_header() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (log, events) = log();
    let server = Server::builder()
        .params(params())
        .set(book())
        .plain_tcp()
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let serving = tokio::spawn(server.serve());
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut hello = tacit_net::Greeting::v1(Protocol::Psi).encode(0).to_vec();
    hello.extend_from_slice(&(1u32 << 30).to_be_bytes());
    s.write_all(&hello).await.unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest)).await;
    assert!(
        read.is_ok(),
        "the server kept the connection of an oversized request open"
    );
    let r = Client::builder()
        .params(params())
        .plain_tcp()
        .build()
        .unwrap()
        .query(&addr, &IDS)
        .await;
    assert_eq!(r.unwrap().strings(), ["contact-7", "contact-42"]);
    let why = failures(&log);
    assert!(
        why.iter().any(|w| w.contains("announced a 1073741824-byte message")),
        "{why:?}"
    );
    serving.abort();
}

/// A deviating client over TLS whose request is malformed — truncated, or with a
/// blinded element that is not a valid point — gets a one-line refusal; the server
/// computes nothing for it and goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_over_tls_are_refused_with_a_reason() {
    let (log, events) = log();
    let server = Server::builder()
        .params(params())
        .set(book())
        .reuse(Reuse::WithinEpoch)
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, pin) = (server.local_addr().to_string(), server.fingerprint().unwrap());
    let serving = tokio::spawn(server.serve());
    let pre = ReceiverPrecomputation::<Ristretto255>::compute(&params(), &IDS, &mut SecureRng::from_os()).unwrap();
    let honest = Receiver::start(&pre).1;
    let truncated = honest[..honest.len() - 1].to_vec();
    let mut bad_point = honest.clone();
    let last = bad_point.len() - 1;
    bad_point[last - 31..=last].fill(0xff); // not a canonical ristretto255 encoding
    for request in [truncated, bad_point] {
        let net = NetConfig::default().speaking(Protocol::Psi);
        let client = tls::checked_server_client(tls::pinned(pin)).unwrap();
        let mut conn = FramedConn::connect_tls(addr.as_str(), &net, client, TLS_NAME)
            .await
            .unwrap();
        conn.send(&request).await.unwrap();
        let answer = conn.recv().await.unwrap();
        match tacit_wire::Refusal::peek(&answer) {
            Some(Ok(tacit_wire::Refusal::Words(w))) => assert!(w.contains("malformed") || w.contains("invalid"), "{w}"),
            other => panic!("not a refusal: {other:?}"),
        }
    }
    // the server reports a refusal just after sending it: wait (up to 10 s) for both
    let refused = |why: &Vec<String>| why.iter().filter(|w| w.starts_with("refused: ")).count();
    let mut why = failures(&log);
    for _ in 0..500 {
        if refused(&why) >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        why = failures(&log);
    }
    assert_eq!(refused(&why), 2, "{why:?}");
    let r = Client::builder()
        .params(params())
        .pin(pin)
        .build()
        .unwrap()
        .query(&addr, &IDS)
        .await;
    assert_eq!(r.unwrap().strings(), ["contact-7", "contact-42"]);
    serving.abort();
}

/// A client that completes the TLS handshake and then stalls holds the only slot
/// (`max_clients(1)`) only until the session deadline: then an honest client is
/// answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staller_past_the_deadline_frees_its_slot() {
    let (log, events) = log();
    let server = Server::builder()
        .params(params())
        .set(book())
        .max_clients(1)
        .deadline(Duration::from_millis(400))
        .on_event(events)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (addr, pin) = (server.local_addr().to_string(), server.fingerprint().unwrap());
    let serving = tokio::spawn(server.serve());
    let net = NetConfig::default().speaking(Protocol::Psi);
    let client = tls::checked_server_client(tls::pinned(pin)).unwrap();
    let staller = FramedConn::connect_tls(addr.as_str(), &net, client, TLS_NAME)
        .await
        .unwrap();
    // While the staller holds the slot, a client is refused as busy.
    let mut honest = Client::builder().params(params()).pin(pin).build().unwrap();
    let e = honest.query(&addr, &IDS).await.unwrap_err();
    assert!(full(&e).contains("the server is busy"), "{}", full(&e));
    tokio::time::sleep(Duration::from_millis(800)).await;
    let r = honest.query(&addr, &IDS).await.unwrap();
    assert_eq!(r.strings(), ["contact-7", "contact-42"]);
    drop(staller);
    let why = failures(&log);
    assert!(why.iter().any(|w| w.contains("deadline")), "{why:?}");
    serving.abort();
}

/// `address_book(store)` with an epoch: the first server makes and stores the key
/// and precomputation, the next reuses them, and a changed address book makes new
/// ones; a set over the bound is refused before anything is bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_book_epoch_is_stored_once_and_reused() {
    let dir = std::env::temp_dir().join(format!("tacit-psi-api-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("store.sqlite3");
    let card = |mail: &str| format!("BEGIN:VCARD\nVERSION:3.0\nFN:X\nEMAIL:{mail}\nEND:VCARD\n");
    let opts = tacit_store::NormalizeOptions::new();
    Store::open(&path)
        .unwrap()
        .import_vcard(&card("ann@example.com"), &opts)
        .unwrap();
    let run = || async {
        let (log, events) = log();
        let server = Server::builder()
            .params(params())
            .address_book(Store::open(&path).unwrap())
            .reuse(Reuse::WithinEpoch)
            .plain_tcp()
            .sessions(1)
            .on_event(events)
            .bind("127.0.0.1:0")
            .await
            .unwrap();
        let addr = server.local_addr().to_string();
        let serving = tokio::spawn(server.serve());
        let r = Client::builder().params(params()).plain_tcp().build().unwrap();
        let mut r = r;
        let found = r.query(&addr, &["ann@example.com", "bo@example.com"]).await.unwrap();
        serving.await.unwrap().unwrap();
        let what = log
            .lock()
            .unwrap()
            .iter()
            .find_map(|e| match e {
                ServerEvent::Stored { .. } => Some("stored"),
                ServerEvent::ReusedStored { .. } => Some("reused"),
                _ => None,
            })
            .unwrap();
        (what, found.strings())
    };
    assert_eq!(run().await, ("stored", vec!["ann@example.com".to_string()]));
    assert_eq!(run().await, ("reused", vec!["ann@example.com".to_string()]));
    Store::open(&path)
        .unwrap()
        .import_vcard(&card("bo@example.com"), &opts)
        .unwrap();
    assert_eq!(
        run().await,
        (
            "stored",
            vec!["ann@example.com".to_string(), "bo@example.com".to_string()]
        )
    );

    let too_many: Vec<String> = (0..65).map(|i| i.to_string()).collect();
    let e = Server::builder()
        .params(params())
        .set(too_many)
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::SetTooLarge { distinct: 65, max: 64 }), "{e}");
    let e = Server::builder()
        .params(params())
        .address_book(Store::open_in_memory().unwrap())
        .bind("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(matches!(e, ServiceError::EmptyAddressBook), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
