//! Review of issue 29 (rev29a): the library's key-request client as a passive
//! network attacker sees it.

mod common;

use common::Home;
use std::sync::{Arc, Mutex};
use tacit_discovery::{Authority, authority};
use tacit_net::NetConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TCP relay in front of `to` that keeps a copy of every byte in both directions
/// (what anyone on the path sees).
async fn recording_relay(to: String) -> (String, Arc<Mutex<Vec<u8>>>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = l.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((a, _)) = l.accept().await else { return };
            let b = tokio::net::TcpStream::connect(&to).await.unwrap();
            let (mut ar, mut aw) = a.into_split();
            let (mut br, mut bw) = b.into_split();
            let (s1, s2) = (s.clone(), s.clone());
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = ar.read(&mut buf).await {
                    if n == 0 || bw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    s1.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n) = br.read(&mut buf).await {
                    if n == 0 || aw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    s2.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (at, seen)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// docs/discovery.md, "Threat model": network attackers, passive and active, "do not
/// learn a server's or client's name or key". `authority::fetch_prefix_key` (what
/// `discover id fetch-prefix-key` runs, and the one way the library offers to get a
/// prefix key) speaks plain TCP: the `KeyRequest` carries the member's name and its
/// whole blessing chain (its public key, its root's key) in the clear, so anyone on
/// the path learns who asks (`Home/Phone`) and the key that later identifies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passive_observer_of_a_key_request_learns_neither_name_nor_key() {
    let mut h = Home::new(41);
    let root = Authority::builder_for(h.ibe.clone(), h.roots.clone())
        .sessions(Some(1))
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let (relay, seen) = recording_relay(root.local_addr().to_string()).await;
    let serving = tokio::spawn(root.serve());
    let phone = h.member(true, "SecretPhoneOfAlice", "Home/*");
    let mpk = Arc::new(h.ibe.public().clone());
    authority::fetch_prefix_key(
        &relay,
        phone.principal.clone(),
        phone.blessing.clone(),
        mpk,
        &NetConfig::default(),
    )
    .await
    .unwrap();
    serving.await.unwrap().unwrap();
    let seen = seen.lock().unwrap().clone();
    let key = phone.principal.public_key().to_bytes();
    let (name, has_key) = (contains(&seen, b"SecretPhoneOfAlice"), contains(&seen, &key));
    assert!(
        !name && !has_key,
        "the wire of a key request shows the member's name: {name}, its public key: {has_key}"
    );
}
