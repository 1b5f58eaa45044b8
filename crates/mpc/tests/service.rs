//! The library's builders (`Session`, `token::Token`, `apps::psi::{Server, Query}`,
//! `apps::schedule::{Server, Client}`) between two parties over loopback: honest runs
//! with both triple sources, and deviating peers against them — the protections the
//! CLI had (concurrent handshakes with a deadline, pinned keys, the paired host
//! only, the semi-honest acknowledgement, the querier's size bound, a channel
//! required) hold for a library user.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::apps::psi::{self, PreparedSet};
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes, bits_from_u64, u64_from_bits};
use tacit_mpc::circuit::{LayeredCircuit, bristol};
use tacit_mpc::driver::{InsecureSharedDealer, SessionConfig, dealer_seed, run};
use tacit_mpc::gmw::{PartyInputs, default_owners};
use tacit_mpc::service::{HANDSHAKE_TIMEOUT, PEER_TLS_NAME, TokenAccess};
use tacit_mpc::token::card::{Card, MemoryEeprom, TokenSpec, TokenState};
use tacit_mpc::token::{Token, TokenTrust};
use tacit_mpc::{Channel, Error, Event, Party, Session, Triples, shipped};
use tacit_net::tls::{SelfSigned, pinned};
use tacit_net::{FramedConn, NetConfig, Protocol};

const AES_CT: &str = "69c4e0d86a7b0430d8cdb78070b4c55a";

fn aes() -> Arc<LayeredCircuit> {
    Arc::new(LayeredCircuit::new(bristol::parse(shipped::AES_128).unwrap()))
}

fn adder() -> Arc<LayeredCircuit> {
    Arc::new(LayeredCircuit::new(bristol::parse(shipped::ADDER64).unwrap()))
}

fn hex_bits(h: &str) -> Vec<bool> {
    bits_from_be_bytes(&hex::decode(h).unwrap())
}

/// Party a's and party b's keys, and each one's channel pinning the other.
fn keys() -> (SelfSigned, SelfSigned, Channel, Channel) {
    let (a, b) = (
        SelfSigned::generate("a.invalid").unwrap(),
        SelfSigned::generate("b.invalid").unwrap(),
    );
    let ca = Channel::tls(&a, pinned(b.fingerprint().unwrap())).unwrap();
    let cb = Channel::tls(&b, pinned(a.fingerprint().unwrap())).unwrap();
    (a, b, ca, cb)
}

#[tokio::test]
async fn sessions_over_pinned_tls_compute_aes_with_ot_triples() {
    let lc = aes();
    let (ka, kb, ca, cb) = keys();
    let a = Session::builder(lc.clone())
        .inputs(vec![hex_bits("000102030405060708090a0b0c0d0e0f")])
        .channel(ca)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = a.local_addr().to_string();
    let b = Session::builder(lc)
        .inputs(vec![hex_bits("00112233445566778899aabbccddeeff")])
        .triples(Triples::Ot)
        .channel(cb)
        .connect(&addr);
    let (oa, ob) = tokio::join!(a.run(), b);
    let (oa, ob) = (oa.unwrap(), ob.unwrap());
    for o in [&oa, &ob] {
        assert_eq!(hex::encode(be_bytes_from_bits(&o.outputs()[0])), AES_CT);
    }
    // Each side saw the other's pinned key.
    assert_eq!(oa.peer_key, Some(kb.fingerprint().unwrap()));
    assert_eq!(ob.peer_key, Some(ka.fingerprint().unwrap()));
    assert_eq!((oa.party, ob.party), (Party::A, Party::B));
}

/// The paired host's key of the tests' tokens.
fn host_key() -> &'static SelfSigned {
    static K: std::sync::OnceLock<SelfSigned> = std::sync::OnceLock::new();
    K.get_or_init(|| SelfSigned::generate("tacit-host.invalid").unwrap())
}

fn manufacture(seed: u64) -> (SigningKey, Card<MemoryEeprom>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ca = SigningKey::generate(&mut rng);
    let spec = TokenSpec::software("tacit test fab", host_key().fingerprint().unwrap());
    let st = TokenState::manufacture(&ca, &spec, &mut rng).unwrap();
    (ca, Card::new(st, MemoryEeprom::default()).unwrap())
}

fn trust(ca: &SigningKey) -> TokenTrust {
    TokenTrust::new(ca.verifying_key(), 1_800_000_000).accepting_software()
}

/// A library token server on loopback: its address and link key.
async fn token_server(card: Card<MemoryEeprom>) -> (String, [u8; 32]) {
    let t = Token::builder(card).listen("127.0.0.1:0").bind().await.unwrap();
    let (addr, link) = (t.local_addr().to_string(), t.link_fingerprint());
    tokio::spawn(t.serve());
    (addr, link)
}

/// Party a with its token (the library's token server) and party b checking the
/// token's certificate compute AES; `b_trusts` is the CA party b trusts.
async fn aes_with_token(seed: u64, b_trusts: Option<SigningKey>) -> (Result<String, Error>, Result<String, Error>) {
    let lc = aes();
    let (ca_key, card) = manufacture(seed);
    let (token, link) = token_server(card).await;
    let access = TokenAccess::pinned(token, host_key(), link).unwrap();
    let (_, _, ca, cb) = keys();
    let a = Session::builder(lc.clone())
        .inputs(vec![hex_bits("000102030405060708090a0b0c0d0e0f")])
        .triples(Triples::Token(access))
        .channel(ca)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = a.local_addr().to_string();
    let b = Session::builder(lc)
        .inputs(vec![hex_bits("00112233445566778899aabbccddeeff")])
        .triples(Triples::TokenPeer(trust(b_trusts.as_ref().unwrap_or(&ca_key))))
        .channel(cb)
        .connect(&addr);
    let (oa, ob) = tokio::join!(a.run(), b);
    let ct = |o: tacit_mpc::SessionOutput| hex::encode(be_bytes_from_bits(&o.outputs()[0]));
    (oa.map(ct), ob.map(ct))
}

#[tokio::test]
async fn sessions_compute_aes_with_triples_from_a_library_token_server() {
    let (a, b) = aes_with_token(40, None).await;
    assert_eq!(a.unwrap(), AES_CT);
    assert_eq!(b.unwrap(), AES_CT);
}

/// A deviating party a whose token comes from another manufacturer: party b's
/// session refuses the certificate, and neither gets an output.
#[tokio::test]
async fn a_session_refuses_a_token_of_another_manufacturer() {
    let (other, _) = manufacture(42);
    let (a, b) = aes_with_token(41, Some(other)).await;
    assert!(matches!(b, Err(Error::Untrusted(_))), "{b:?}");
    assert!(a.is_err());
}

/// A probe of the library token with a key of its own gets no link (the handshake
/// admits only the paired host); a host pinning another link key does not connect;
/// the paired host does.
#[tokio::test]
async fn the_library_token_admits_only_its_paired_host() {
    let (_, card) = manufacture(43);
    let (addr, link) = token_server(card).await;
    let stranger = SelfSigned::generate("tacit-host.invalid").unwrap();
    let probe = TokenAccess::pinned(addr.as_str(), &stranger, link).unwrap();
    assert!(tacit_mpc::token::connect(&probe).await.is_err());
    let wrong_pin = TokenAccess::pinned(addr.as_str(), host_key(), [7; 32]).unwrap();
    let e = tacit_mpc::token::connect(&wrong_pin).await.unwrap_err();
    assert!(matches!(e, Error::Connect { .. }), "{e}");
    let host = TokenAccess::pinned(addr.as_str(), host_key(), link).unwrap();
    let mut h = tacit_mpc::token::connect(&host).await.unwrap();
    tacit_mpc::token::fill(&mut h, 256, |_, _| {}).await.unwrap();
    assert!(h.pool.triples(&h.certificate.token_id) >= 256);
}

/// Deviating connections ahead of the peer: one that says nothing, a TLS client with
/// a key that is not pinned, a plain-TCP client. The listening session refuses each
/// (reported as events) and serves its peer without waiting for the silent one's
/// handshake deadline.
#[tokio::test]
async fn a_listening_session_serves_its_peer_past_silent_unpinned_and_plain_connections() {
    let lc = adder();
    let (ka, _, ca, cb) = keys();
    let refused = Arc::new(Mutex::new(Vec::new()));
    let r = refused.clone();
    let a = Session::builder(lc.clone())
        .inputs(vec![bits_from_u64(40, 64)])
        .channel(ca)
        .on_event(move |e| {
            if let Event::Refused { why, .. } = e {
                r.lock().unwrap().push(why);
            }
        })
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = a.local_addr().to_string();
    let session = tokio::spawn(a.run());
    let _silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (ka_fp, probe_addr) = (ka.fingerprint().unwrap(), addr.clone());
    let probes = tokio::spawn(async move {
        let stranger = SelfSigned::generate("x.invalid").unwrap();
        let client = stranger.client_config_checking_server(pinned(ka_fp)).unwrap();
        let cfg = NetConfig::default().speaking(Protocol::MpcRun);
        if let Ok(mut c) = FramedConn::connect_tls(probe_addr.as_str(), &cfg, client, PEER_TLS_NAME).await {
            let _ = c.send(b"hello?").await;
            let _ = c.recv().await;
        }
        FramedConn::connect(probe_addr.as_str(), &cfg).await.is_err()
    });
    // The probes are refused, and the peer served, within less than the silent
    // connection's handshake deadline.
    let within = HANDSHAKE_TIMEOUT - Duration::from_secs(1);
    let plain_refused = tokio::time::timeout(within, probes)
        .await
        .expect("the probes waited behind the silent connection");
    assert!(plain_refused.unwrap(), "a plain client got through");
    let b = Session::builder(lc)
        .inputs(vec![bits_from_u64(2, 64)])
        .channel(cb)
        .connect(&addr);
    let ob = tokio::time::timeout(within, b)
        .await
        .expect("b waited behind the silent connection");
    assert_eq!(u64_from_bits(&ob.unwrap().outputs()[0]), 42);
    let oa = session.await.unwrap().unwrap();
    assert_eq!(u64_from_bits(&oa.outputs()[0]), 42);
    let refused = refused.lock().unwrap();
    assert!(refused.len() >= 2, "{refused:?}");
}

/// A deviating peer that passes the handshake and then computes another circuit:
/// the listening session stops at the hellos with the mismatch named, before any
/// triple is made.
#[tokio::test]
async fn a_peer_computing_another_circuit_is_refused_at_the_hellos() {
    let (_, kb, ca, _) = keys();
    let a = Session::builder(aes())
        .inputs(vec![vec![false; 128]])
        .channel(ca)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = a.local_addr().to_string();
    let session = tokio::spawn(a.run());
    let client = kb.client_config_checking_server(tacit_net::tls::any_key()).unwrap();
    let cfg = NetConfig::default().speaking(Protocol::MpcRun);
    let mut c = FramedConn::connect_tls(addr.as_str(), &cfg, client, PEER_TLS_NAME)
        .await
        .unwrap();
    let other = adder();
    let inputs = PartyInputs {
        values: vec![None, Some(vec![bits_from_u64(1, 64)])],
    };
    let mut dealer = InsecureSharedDealer { seed: dealer_seed(1) };
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    let cfg = SessionConfig::new(1, default_owners(2));
    let b = run(&mut c, &other, Party::B, &cfg, &inputs, &mut dealer, &mut rng).await;
    assert!(b.is_err());
    let e = session.await.unwrap().unwrap_err();
    assert!(matches!(e, Error::Peer(_)), "{e}");
    assert!(e.to_string().contains("another circuit"), "{e}");
}

/// Safe defaults: a builder with no channel refuses to start (plain TCP only by
/// name), and the PSI server refuses to serve without the semi-honest
/// acknowledgement.
#[tokio::test]
async fn builders_refuse_to_start_without_a_channel_or_the_acknowledgement() {
    let e = Session::builder(adder())
        .inputs(vec![bits_from_u64(1, 64)])
        .listen("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Config(_)), "{e}");
    let set = Arc::new(PreparedSet::new(&["1".to_string()], 8).unwrap());
    let (_, _, ca, _) = keys();
    let e = psi::Server::builder(set).channel(ca).bind().await.unwrap_err();
    assert!(e.to_string().contains("semi_honest_peers"), "{e}");
}

fn set(v: &[u64]) -> Arc<PreparedSet> {
    Arc::new(PreparedSet::new(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>(), 16).unwrap())
}

/// The PSI server and querier through the builders: an honest query gets the
/// intersection; a querier that claims a larger set than the server admits is
/// refused before the server builds anything.
#[tokio::test]
async fn psi_server_answers_an_honest_query_and_refuses_an_oversized_one() {
    let (_, _, ca, cb) = keys();
    let sessions = Arc::new(Mutex::new(Vec::new()));
    let s = sessions.clone();
    let server = psi::Server::builder(set(&[3, 5, 8, 13]))
        .listen("127.0.0.1:0")
        .max_peer(4)
        .sessions(2)
        .channel(ca)
        .semi_honest_peers()
        .on_event(move |e| {
            if let psi::ServerEvent::Session { result, .. } = e {
                s.lock()
                    .unwrap()
                    .push(result.map(|r| r.params.n_b).map_err(|e| e.to_string()));
            }
        })
        .bind()
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let serving = tokio::spawn(server.serve());
    let r = psi::Query::builder(set(&[1, 5, 13, 21]))
        .channel(cb.clone())
        .connect(&addr)
        .await
        .unwrap();
    assert_eq!(r.elements, vec!["13".to_string(), "5".to_string()]);
    let e = psi::Query::builder(set(&[1, 2, 3, 4, 5]))
        .channel(cb)
        .connect(&addr)
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Refused(_)) && e.to_string().contains("at most 4"),
        "{e}"
    );
    serving.await.unwrap().unwrap();
    let sessions = sessions.lock().unwrap();
    assert_eq!(sessions.len(), 2);
    assert!(sessions.contains(&Ok(4)), "{sessions:?}");
}
