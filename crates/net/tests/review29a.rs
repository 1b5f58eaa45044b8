//! Review of issue 29 (rev29a): `tacit_net::channel` as a product engineer uses it.

use tacit_net::channel::Channel;
use tacit_net::{FramedListener, NetConfig, Protocol};

/// `crates/net/src/channel.rs` (module and `Channel` docs): "plain TCP only when
/// asked for by name ([`Channel::insecure_plain_tcp`])"; `pins`: "connecting: at
/// most one, the server's". But every field of `Channel` is public, and a channel
/// whose `identity` is `None` is plain TCP whatever else it says: a product that
/// fills the struct itself with the server's key pinned and a store (and its TLS
/// identity to come later, or `None` by mistake) connects in the clear to whoever
/// answers, the pin silently ignored, and gets `Ok` back. A pin (or a store for
/// trust on first use) on a channel without a key must be refused, or the fields
/// private.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_with_a_pinned_server_key_never_connects_in_the_clear() {
    // An impostor on plain TCP that speaks the greeting.
    let listener = FramedListener::bind("127.0.0.1:0", &NetConfig::default())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let impostor = Channel::insecure_plain_tcp("demo", "demo.invalid", Protocol::ProsReconcile);
    let acceptor = impostor.acceptor().unwrap();
    tokio::spawn(async move {
        let c = listener.accept().await.unwrap();
        let (mut c, _) = acceptor.accept(c).await.unwrap();
        let _ = c.send(b"the impostor's answer").await;
    });
    let real_server_key = [0x5a; 32];
    let mut client = Channel {
        identity: None,
        pins: vec![real_server_key],
        store: Some(tacit_store::Store::open_in_memory().unwrap()),
        prefix: "demo",
        tls_name: "demo.invalid",
        protocol: Protocol::ProsReconcile,
    };
    let r = client.connect(&addr, &NetConfig::default()).await;
    assert!(
        r.is_err(),
        "a channel pinning the server's key connected over plain TCP: {:?}",
        r.map(|(_, peer)| peer.describe())
    );
}
