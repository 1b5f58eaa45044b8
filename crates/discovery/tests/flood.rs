//! Issue 32, item 1: the IBE root service and the auxiliary advertisement service
//! under a flood of idle connections from one address. Both used to take a slot per
//! connection until their cap and then stop accepting, so the flood kept everyone
//! else out until its connections timed out.

mod common;

use common::flood;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::blessing::{Principal, TrustedRoots};
use tacit_discovery::carrier::{AuxStore, fetch_aux, serve_aux};
use tacit_discovery::key_request::KeyAuthority;
use tacit_discovery::prefix::PrefixAuthority;
use tacit_discovery::root_service::{self, RootState};
use tacit_net::{FramedListener, NetConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ibe_root_serves_during_an_idle_flood() {
    let mut rng = SecureRng::from_seed([5; 32]);
    let (home, _) = Principal::new_root(&mut rng, "Home", 4_000_000_000).unwrap();
    let mut roots = TrustedRoots::new();
    roots.add("Home", home.public_key()).unwrap();
    let state = Arc::new(RootState {
        authority: KeyAuthority::new(Arc::new(PrefixAuthority::generate(&mut rng)), roots),
        reload: None,
        events: Arc::new(|_| {}),
    });
    let l = FramedListener::bind("127.0.0.1:0", &NetConfig::default())
        .await
        .unwrap();
    let addr = l.local_addr().unwrap();
    let server = tokio::spawn(root_service::serve(l, state, None));
    let _idle = flood(addr, root_service::MAX_CONNECTIONS + 10).await;
    let lists = tokio::time::timeout(
        Duration::from_secs(5),
        root_service::fetch_revocations(&addr.to_string(), &NetConfig::default()),
    )
    .await
    .expect("the honest client waited past 5 s")
    .unwrap();
    assert!(lists.is_empty());
    assert!(!server.is_finished());
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auxiliary_service_serves_during_an_idle_flood() {
    let store = AuxStore::new();
    store.insert([3; 16], b"advert").unwrap();
    let l = FramedListener::bind("127.0.0.1:0", &NetConfig::default())
        .await
        .unwrap();
    let addr = l.local_addr().unwrap();
    let server = tokio::spawn(serve_aux(l, store));
    let _idle = flood(addr, 80).await;
    let got = tokio::time::timeout(Duration::from_secs(5), fetch_aux(addr, &[3; 16], &NetConfig::default()))
        .await
        .expect("the honest client waited past 5 s")
        .unwrap();
    assert_eq!(got, b"advert");
    server.abort();
}
