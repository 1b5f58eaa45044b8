//! Review of issue 29 (rev29c): the library client against a network attacker.

use std::time::Duration;
use tacit_psi::{Client, PsiParams, Security, Server, ServiceError};
use tacit_store::Store;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn params() -> PsiParams {
    PsiParams::new(Security::Malicious).with_bounds(4, 64)
}

/// `ServiceError::KeyChanged` ("the key of ADDR differs from the one recorded on
/// first use"; the CLI adds "run `tacit psi forget`") is returned for *any* TLS
/// failure once a key is recorded (client.rs: `(QueryError::Net(Tls(_)), Some(_))`).
/// A network attacker who answers the ClientHello with a 7-byte TLS alert — no key — makes
/// the client tell its user the server's key changed, which is the cue to forget the
/// recorded key; the next query is then a first use the attacker can take (MITM).
/// The key never changed: the error must say what happened, not that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_alert_without_a_key_is_not_reported_as_a_changed_key() {
    let book: Vec<String> = (0..20).map(|i| format!("c{i}")).collect();
    let server = Server::builder()
        .params(params())
        .set(&book)
        .sessions(1)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let key = server.fingerprint().unwrap();
    let serving = tokio::spawn(server.serve());
    let mut client = Client::builder()
        .params(params())
        .tofu(Store::open_in_memory().unwrap())
        .deadline(Duration::from_secs(10))
        .build()
        .unwrap();
    let r = client.query(&addr, &["c1", "x"]).await.unwrap();
    assert_eq!(r.recorded_now, Some(key));
    serving.await.unwrap().unwrap();

    // The attacker now holds the address: it reads the greeting and ClientHello and
    // answers with a TLS alert (handshake_failure): it presents no key at all.
    let l = tokio::net::TcpListener::bind(addr.as_str()).await.unwrap();
    let attacker = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut buf = vec![0u8; 4096];
        let _ = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await;
        // A TLS alert record: fatal handshake_failure (sent in the clear, no key).
        let _ = s.write_all(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]).await;
        let _ = tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await;
    });
    let e = client.query(&addr, &["c1", "x"]).await.unwrap_err();
    attacker.abort();
    assert!(
        !matches!(e, ServiceError::KeyChanged { .. }),
        "no key was presented, yet the client reports a changed key: {e}"
    );
}
