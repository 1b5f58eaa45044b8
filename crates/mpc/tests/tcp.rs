//! The parties over real TCP connections with both triple sources, and the token's
//! guarantees against a deviating A or a forged token.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes};
use tacit_mpc::circuit::{LayeredCircuit, bristol};
use tacit_mpc::driver::{SessionConfig, TripleSource, run};
use tacit_mpc::gmw::{PartyInputs, default_owners};
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::apdu::{Command, Response, sw};
use tacit_mpc::triples::token::card::{Card, MemoryEeprom, TokenSpec, TokenState};
use tacit_mpc::triples::token::holder::{
    LocalTokenLink, Pool, TcpTokenLink, TokenHolder, TokenPeer, TokenServer, check_offer, open_release,
};
use tacit_mpc::triples::token::{
    CLA, INS_RELEASE_A, INS_RELEASE_B, SeedRelease, SeedRequest, SequenceId, TokenKind, TokenOffer, TokenTrust,
};
use tacit_mpc::{Error, Party};
use tacit_net::guard::ServeLimits;
use tacit_net::tls::SelfSigned;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Decode, Encode};

fn aes() -> LayeredCircuit {
    // The manifest folder as cargo gives it at run time: a test binary reused from
    // another checkout sharing the target folder must still read this one's files.
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let t = std::fs::read_to_string(dir.join("testdata/circuits/aes_128.txt")).unwrap();
    LayeredCircuit::new(bristol::parse(&t).unwrap())
}

fn aes_inputs() -> (PartyInputs, PartyInputs) {
    let key = bits_from_be_bytes(&hex::decode("000102030405060708090a0b0c0d0e0f").unwrap());
    let pt = bits_from_be_bytes(&hex::decode("00112233445566778899aabbccddeeff").unwrap());
    (
        PartyInputs {
            values: vec![Some(vec![key]), None],
        },
        PartyInputs {
            values: vec![None, Some(vec![pt])],
        },
    )
}

async fn pair() -> (FramedConn, FramedConn) {
    let cfg = NetConfig::default();
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let addr = l.local_addr().unwrap();
    let (a, b) = tokio::join!(l.accept(), FramedConn::connect(addr, &cfg));
    (a.unwrap(), b.unwrap())
}

async fn run_both<SA: TripleSource, SB: TripleSource>(
    lc: &LayeredCircuit,
    mut sa: SA,
    mut sb: SB,
) -> (Result<Vec<u8>, Error>, Result<Vec<u8>, Error>) {
    let (mut ca, mut cb) = pair().await;
    let (ia, ib) = aes_inputs();
    let cfg = SessionConfig::new(1, default_owners(2));
    let mut ra = ChaCha20Rng::seed_from_u64(1);
    let mut rb = ChaCha20Rng::seed_from_u64(2);
    let (a, b) = tokio::join!(
        run(&mut ca, lc, Party::A, &cfg, &ia, &mut sa, &mut ra),
        run(&mut cb, lc, Party::B, &cfg, &ib, &mut sb, &mut rb)
    );
    let f = |r: Result<tacit_mpc::driver::RunReport, Error>| r.map(|r| be_bytes_from_bits(&r.outputs.values[0][0]));
    (f(a), f(b))
}

const AES_CT: &str = "69c4e0d86a7b0430d8cdb78070b4c55a";

#[tokio::test]
async fn aes_over_tcp_with_ot_triples() {
    let lc = aes();
    let (a, b) = run_both(
        &lc,
        OtSource::new(ChaCha20Rng::seed_from_u64(3)),
        OtSource::new(ChaCha20Rng::seed_from_u64(4)),
    )
    .await;
    assert_eq!(hex::encode(a.unwrap()), AES_CT);
    assert_eq!(hex::encode(b.unwrap()), AES_CT);
}

/// The paired host's key of the tests' tokens.
fn host_key() -> &'static SelfSigned {
    static K: std::sync::OnceLock<SelfSigned> = std::sync::OnceLock::new();
    K.get_or_init(|| SelfSigned::generate("tacit-host.invalid").unwrap())
}

fn manufacture_as(seed: u64, kind: TokenKind) -> (SigningKey, Card<MemoryEeprom>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ca = SigningKey::generate(&mut rng);
    let mut spec = TokenSpec::software("tacit test fab", host_key().fingerprint().unwrap());
    spec.kind = kind;
    let st = TokenState::manufacture(&ca, &spec, &mut rng).unwrap();
    (ca, Card::new(st, MemoryEeprom::default()).unwrap())
}

fn manufacture(seed: u64) -> (SigningKey, Card<MemoryEeprom>) {
    manufacture_as(seed, TokenKind::Software)
}

/// B's trust in `ca`'s tokens, software ones included (the tests' tokens are).
fn trust(ca: &SigningKey) -> TokenTrust {
    TokenTrust::new(ca.verifying_key(), 1_800_000_000).accepting_software()
}

/// A token process as `tacit mpc token serve` runs it: TLS with its link key,
/// admitting only the paired host.
struct TokenProcess {
    addr: std::net::SocketAddr,
    link: [u8; 32],
    server: Arc<TokenServer<MemoryEeprom>>,
}

async fn token_process(card: Card<MemoryEeprom>, limits: ServeLimits, cfg: NetConfig) -> TokenProcess {
    let server = Arc::new(TokenServer::new(card, limits).unwrap());
    let l = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let addr = l.local_addr().unwrap();
    let s = server.clone();
    tokio::spawn(async move { s.serve(l, None, |_| {}).await });
    TokenProcess {
        addr,
        link: server.link_fingerprint(),
        server,
    }
}

/// The host's TLS link to a token process, with `key` (mutual pinning).
async fn connect_as(t: &TokenProcess, key: &SelfSigned) -> Result<FramedConn, tacit_net::Error> {
    let client = key
        .client_config_checking_server(tacit_net::tls::pinned(t.link))
        .unwrap();
    FramedConn::connect_tls(t.addr, &NetConfig::default(), client, "tacit-token.invalid").await
}

async fn host_link(t: &TokenProcess) -> TcpTokenLink {
    TcpTokenLink::new(connect_as(t, host_key()).await.unwrap())
}

#[tokio::test]
async fn aes_over_tcp_with_a_token_process() {
    let lc = aes();
    let (ca, card) = manufacture(10);
    let t = token_process(card, ServeLimits::default(), NetConfig::default()).await;
    let holder = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    let peer = TokenPeer::new(trust(&ca), ChaCha20Rng::seed_from_u64(5));
    let (a, b) = run_both(&lc, holder, peer).await;
    assert_eq!(hex::encode(a.unwrap()), AES_CT);
    assert_eq!(hex::encode(b.unwrap()), AES_CT);
    // Every sequence used was erased from the token's persistent state.
    let card = t.server.card();
    let saved = TokenState::from_wire(&card.lock().unwrap().eeprom().committed).unwrap();
    assert_eq!(saved.sequences().count(), 0);
    assert!(saved.next_d() >= tacit_mpc::triples::token::card::D_RESERVE);
}

#[tokio::test]
async fn b_refuses_a_forged_token() {
    let lc = aes();
    let (_, card) = manufacture(20);
    let (other_ca, _) = manufacture(21);
    let holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    let peer = TokenPeer::new(trust(&other_ca), ChaCha20Rng::seed_from_u64(6));
    let (a, b) = run_both(&lc, holder, peer).await;
    assert!(matches!(b, Err(Error::Untrusted(_))), "{b:?}");
    assert!(a.is_err());
}

/// Item 1 of issue 27: the certificate says what kind of token it is and until when
/// it is valid. B refuses a software token (whose host reads every seed) unless told
/// to accept one, and an expired or not yet valid certificate; it accepts a hardware
/// token of its CA. A certificate whose kind or dates were changed after signing
/// does not verify.
#[tokio::test]
async fn b_refuses_a_software_token_unless_told_and_an_expired_one() {
    let lc = aes();
    let (ca, card) = manufacture(22);
    let holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    let strict = TokenTrust::new(ca.verifying_key(), 1_800_000_000);
    let peer = TokenPeer::new(strict.clone(), ChaCha20Rng::seed_from_u64(7));
    let (a, b) = run_both(&lc, holder, peer).await;
    let e = b.unwrap_err().to_string();
    assert!(
        e.contains("software token") && e.contains("--accept-software-token"),
        "{e}"
    );
    assert!(a.is_err());
    // A hardware token of the same CA passes the same check.
    let (hw_ca, hw) = manufacture_as(23, TokenKind::Hardware);
    let cert = hw.state().certificate.clone();
    assert!(
        cert.check(&TokenTrust::new(hw_ca.verifying_key(), 1_800_000_000))
            .is_ok()
    );
    // Relabelled "hardware" after signing: the signature no longer verifies.
    let (_, sw_card) = manufacture(22);
    let mut relabelled = sw_card.state().certificate.clone();
    relabelled.kind = TokenKind::Hardware;
    assert!(matches!(relabelled.check(&strict), Err(Error::Untrusted(_))));
    // Validity: a certificate issued for a year.
    let mut rng = ChaCha20Rng::seed_from_u64(24);
    let mut spec = TokenSpec::software("fab", [0; 32]);
    spec.kind = TokenKind::Hardware;
    (spec.not_before, spec.not_after) = (1_700_000_000, 1_731_536_000);
    let st = TokenState::manufacture(&ca, &spec, &mut rng).unwrap();
    let c = &st.certificate;
    assert!(c.check(&TokenTrust::new(ca.verifying_key(), 1_710_000_000)).is_ok());
    for now in [1_600_000_000, 1_800_000_000] {
        let e = c
            .check(&TokenTrust::new(ca.verifying_key(), now))
            .unwrap_err()
            .to_string();
        assert!(e.contains("valid only from") || e.contains("expired"), "{e}");
    }
}

/// Drives A's side by hand to play the deviating A of the paper's §4.4.
struct Setup {
    holder: TokenHolder<LocalTokenLink<MemoryEeprom>>,
    ca: SigningKey,
}

async fn setup(seed: u64) -> Setup {
    let (ca, card) = manufacture(seed);
    let mut holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    holder.fill(300, &mut |_, _| {}).await.unwrap();
    Setup { holder, ca }
}

async fn release_b(h: &mut TokenHolder<LocalTokenLink<MemoryEeprom>>, req: &SeedRequest) -> (u16, Vec<u8>) {
    use tacit_mpc::triples::token::holder::TokenLink;
    let r = h
        .link()
        .transmit(&Command {
            cla: CLA,
            ins: INS_RELEASE_B,
            p1: 0,
            p2: 0,
            data: req.to_wire(),
            ne: 65536,
        })
        .await
        .unwrap();
    (r.sw, r.data)
}

async fn release_a(h: &mut TokenHolder<LocalTokenLink<MemoryEeprom>>, d: u64) -> u16 {
    use tacit_mpc::triples::token::holder::TokenLink;
    h.link()
        .transmit(&Command {
            cla: CLA,
            ins: tacit_mpc::triples::token::INS_RELEASE_A,
            p1: 0,
            p2: 0,
            data: d.to_be_bytes().to_vec(),
            ne: 16,
        })
        .await
        .unwrap()
        .sw
}

/// A token with filled sequences whose `s_A` have all been released (each `OK`), and
/// the sequences.
async fn setup_released_a(seed: u64) -> (Setup, Vec<tacit_mpc::triples::token::SequenceId>) {
    let mut s = setup(seed).await;
    let token_id = s.holder.certificate.token_id;
    let seqs = s.holder.pool.list(&token_id);
    assert!(!seqs.is_empty());
    for q in &seqs {
        assert_eq!(release_a(&mut s.holder, q.d).await, sw::OK);
    }
    (s, seqs)
}

fn request(
    seqs: Vec<tacit_mpc::triples::token::SequenceId>,
    seed: u64,
) -> (SeedRequest, curve25519_dalek::scalar::Scalar) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let e = curve25519_dalek::scalar::Scalar::random(&mut rng);
    let mut nonce = [0u8; 32];
    rand_core::RngCore::fill_bytes(&mut rng, &mut nonce);
    (
        SeedRequest {
            sequences: seqs,
            ephemeral: curve25519_dalek::ristretto::RistrettoPoint::mul_base(&e)
                .compress()
                .to_bytes(),
            nonce,
        },
        e,
    )
}

#[tokio::test]
async fn the_token_releases_s_b_once_and_only_after_s_a() {
    let mut s = setup(30).await;
    let token_id = s.holder.certificate.token_id;
    let seqs = s.holder.pool.list(&token_id);
    assert!(!seqs.is_empty());
    let (req, e) = request(seqs.clone(), 1);
    // s_B before s_A: refused.
    assert_eq!(release_b(&mut s.holder, &req).await.0, sw::CONDITIONS);
    for q in &seqs {
        assert_eq!(release_a(&mut s.holder, q.d).await, sw::OK);
    }
    let (code, data) = release_b(&mut s.holder, &req).await;
    assert_eq!(code, sw::OK);
    // B opens it.
    let cert = s.holder.certificate.clone();
    let t = cert.verify(&s.ca.verifying_key()).unwrap();
    let rel = SeedRelease::from_wire(&data).unwrap();
    assert_eq!(
        open_release(&rel, &req, &e, &t, &cert.public).unwrap().len(),
        seqs.len()
    );
    // A second release request — here by A with its own ephemeral key, to learn s_B —
    // is refused: the sequences are gone.
    let (req2, _) = request(seqs.clone(), 2);
    assert_eq!(release_b(&mut s.holder, &req2).await.0, sw::NOT_FOUND);
    assert_eq!(release_a(&mut s.holder, seqs[0].d).await, sw::NOT_FOUND);
}

#[tokio::test]
async fn b_catches_a_replayed_release() {
    let (mut s, seqs) = setup_released_a(40).await;
    let (old_req, _) = request(seqs.clone(), 3);
    let (_, old) = release_b(&mut s.holder, &old_req).await;
    // Later, B asks with a fresh key and nonce; A replays the old release.
    let (new_req, e) = request(seqs.clone(), 4);
    let cert = s.holder.certificate.clone();
    let t = cert.verify(&s.ca.verifying_key()).unwrap();
    let rel = SeedRelease::from_wire(&old).unwrap();
    assert!(matches!(
        open_release(&rel, &new_req, &e, &t, &cert.public),
        Err(Error::Untrusted(_))
    ));
    // A tampered release does not open either.
    let mut bad = SeedRelease::from_wire(&old).unwrap();
    bad.sealed[0] ^= 1;
    assert!(open_release(&bad, &old_req, &e, &t, &cert.public).is_err());
}

#[tokio::test]
async fn a_failed_eeprom_write_releases_nothing() {
    let (mut s, seqs) = setup_released_a(50).await;
    s.holder.link().card.eeprom_mut().fail = true;
    let (req, _) = request(seqs.clone(), 5);
    let (code, data) = release_b(&mut s.holder, &req).await;
    assert_eq!(code, sw::UNKNOWN);
    assert!(data.is_empty());
    // and the sequences stay unusable
    s.holder.link().card.eeprom_mut().fail = false;
    assert_eq!(release_b(&mut s.holder, &req).await.0, sw::NOT_FOUND);
}

#[tokio::test]
async fn a_token_answering_garbage_is_an_error() {
    // A "token" that answers every APDU with three random bytes.
    let cfg = NetConfig::default();
    let tl = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let taddr = tl.local_addr().unwrap();
    tokio::spawn(async move {
        let mut c = tl.accept().await.unwrap();
        while c.recv().await.is_ok() {
            if c.send(&[0x12, 0x34, 0x56]).await.is_err() {
                break;
            }
        }
    });
    let link = TcpTokenLink::new(FramedConn::connect(taddr, &cfg).await.unwrap());
    let e = TokenHolder::new(link, Pool::in_memory()).await.unwrap_err();
    assert!(matches!(e, Error::Token(_)), "{e}");
}

#[tokio::test]
async fn offers_not_covering_the_circuit_are_refused() {
    let (ca, card) = manufacture(60);
    let mut holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    let ids = holder.fill(128, &mut |_, _| {}).await.unwrap();
    let offer = TokenOffer {
        certificate: holder.certificate.clone(),
        sequences: ids,
    };
    let e = check_offer(&offer, &trust(&ca), 6400).unwrap_err();
    assert!(matches!(e, Error::Peer(_)));
}

/// Item 5 of issue 27: B takes exactly the sequences `decompose(count)` gives. An
/// offer of 40 sequences of 2^32 triples for a one-gate circuit (B would expand
/// 1.7·10^11 triples, tens of GB) is refused before anything is expanded, and so is
/// any offer that covers the count with other sizes (one sequence too big, one too
/// many, the right sizes in another order).
#[tokio::test]
async fn an_oversized_offer_is_refused() {
    let (ca, card) = manufacture(61);
    let certificate = card.state().certificate.clone();
    let offer = |logs: &[u8]| TokenOffer {
        certificate: certificate.clone(),
        sequences: logs
            .iter()
            .enumerate()
            .map(|(i, &log)| SequenceId { d: i as u64, log })
            .collect(),
    };
    let t = trust(&ca);
    let huge = offer(&[32; 40]);
    let e = check_offer(&huge, &t, 1).unwrap_err();
    assert!(e.to_string().contains("take exactly 2^7"), "{e}");
    for (logs, count) in [
        (&[8u8][..], 128usize),
        (&[7, 7], 128),
        (&[12, 11, 8, 7], 6400),
        (&[8, 11, 12], 6400),
        (&[13], 6400),
    ] {
        assert!(check_offer(&offer(logs), &t, count).is_err(), "{logs:?} for {count}");
    }
    assert!(check_offer(&offer(&[12, 11, 8]), &t, 6400).is_ok());
    assert!(check_offer(&offer(&[7]), &t, 1).is_ok());
    // The whole session refuses too: a deviating A whose pool holds only big
    // sequences offers them; B refuses with one line and expands nothing.
    let lc = aes();
    let mut holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    holder.fill(1 << 16, &mut |_, _| {}).await.unwrap();
    let big: Vec<SequenceId> = holder.pool.list(&certificate.token_id);
    let peer = TokenPeer::new(t, ChaCha20Rng::seed_from_u64(8));
    let (mut ca_conn, mut cb) = pair().await;
    let (_, ib) = aes_inputs();
    let cfg = SessionConfig::new(1, default_owners(2));
    let mut rb = ChaCha20Rng::seed_from_u64(2);
    let deviating_a = async {
        use tacit_mpc::messages::{Hello, TripleKind};
        use tacit_wire::Encode;
        let hello = Hello {
            party: Party::A,
            circuit: lc.digest(),
            instances: 1,
            owners: default_owners(2),
            triples: TripleKind::Token,
            input_seed: [0; 16],
            outputs: tacit_mpc::gmw::OutputTo::Both,
            context: [0; 32],
        };
        ca_conn.exchange(&hello.to_wire()).await.unwrap();
        let offer = TokenOffer {
            certificate: certificate.clone(),
            sequences: big,
        };
        ca_conn.send(&offer.to_wire()).await.unwrap();
        ca_conn.recv().await
    };
    let mut peer = peer;
    let (refusal, b) = tokio::join!(deviating_a, run(&mut cb, &lc, Party::B, &cfg, &ib, &mut peer, &mut rb));
    let e = b.unwrap_err().to_string();
    assert!(e.contains("take exactly"), "{e}");
    assert!(String::from_utf8_lossy(&refusal.unwrap()).contains("b refuses the token"));
}

/// Item 2 of issue 27: a probe of the token's port gets nothing. Plain TCP (the
/// commands the probe of the issue sent) finds a TLS server and no answer; a TLS
/// client with any key but the paired host's is refused in the handshake; the
/// paired host gets s_A. Over a link that is not the paired host's (the card's
/// sessions, below the TLS shell) RELEASE A is refused too (`card.rs`).
#[tokio::test]
async fn a_probe_of_the_token_port_gets_no_seed() {
    let (_, card) = manufacture(62);
    let t = token_process(card, ServeLimits::default(), NetConfig::default()).await;
    // The host fills a sequence.
    let mut holder = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    let ids = holder.fill(128, &mut |_, _| {}).await.unwrap();
    let d = ids[0].d;
    let release_a = Command {
        cla: CLA,
        ins: INS_RELEASE_A,
        p1: 0,
        p2: 0,
        data: d.to_be_bytes().to_vec(),
        ne: 16,
    }
    .encode();
    // 1. Plain TCP.
    let mut plain = FramedConn::connect(t.addr, &NetConfig::default().with_read_timeout(Duration::from_secs(3)))
        .await
        .unwrap();
    plain.send(&release_a).await.unwrap();
    match plain.recv().await {
        Ok(r) => panic!("the token answered a plain probe: {:?}", Response::decode(&r)),
        Err(e) => assert!(!matches!(e, tacit_net::Error::ReadTimeout(_)), "{e}"),
    }
    // 2. TLS with a key of its own.
    let stranger = SelfSigned::generate("tacit-host.invalid").unwrap();
    match connect_as(&t, &stranger).await {
        Err(_) => {}
        Ok(mut c) => {
            let _ = c.send(&release_a).await;
            assert!(c.recv().await.is_err(), "the token answered a stranger");
        }
    }
    // 3. The paired host.
    let mut c = connect_as(&t, host_key()).await.unwrap();
    c.send(&release_a).await.unwrap();
    let r = Response::decode(&c.recv().await.unwrap()).unwrap();
    assert_eq!((r.sw, r.data.len()), (sw::OK, 16));
}

/// Item 7 of issue 27: the token serves several host connections at once (a fill
/// and a session), closes connections past its cap at once, and cuts a connection
/// at its deadline; a GENERATE abandoned by a connection that goes away leaves no
/// sequence behind.
#[tokio::test]
async fn the_token_serves_connections_at_once_within_a_cap_and_a_deadline() {
    let (_, card) = manufacture(63);
    let t = token_process(
        card,
        ServeLimits::new(2, Duration::from_millis(1500)),
        NetConfig::default(),
    )
    .await;
    let mut h1 = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    // A second connection streams while the first one stays open (before this
    // change, one connection at a time: the second waited for the first to end).
    let mut h2 = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    let (mut p1, mut p2) = (|_, _| {}, |_, _| {});
    let (a, b) = tokio::join!(h1.fill(1 << 20, &mut p1), h2.fill(1 << 20, &mut p2));
    assert_eq!(a.unwrap().len() + b.unwrap().len(), 2);
    // A third connection is over the cap: closed at once (the two others still work
    // after it, so it was not their deadline that ended it).
    match connect_as(&t, host_key()).await {
        Err(_) => {}
        Ok(mut c) => {
            let _ = c.send(&[0x80, 0x10, 0, 0]).await;
            assert!(c.recv().await.is_err());
        }
    }
    assert!(h2.fill(1 << 7, &mut |_, _| {}).await.is_ok());
    // An abandoned GENERATE: its sequence is erased when the connection goes.
    {
        use tacit_mpc::triples::token::holder::TokenLink;
        let r = h1
            .link()
            .transmit(&Command {
                cla: CLA,
                ins: tacit_mpc::triples::token::INS_GENERATE,
                p1: 10,
                p2: 0,
                data: vec![],
                ne: 9,
            })
            .await
            .unwrap();
        assert_eq!(r.sw, 0x6100);
    }
    let live = || t.server.card().lock().unwrap().state().sequences().count();
    assert_eq!(live(), 4);
    drop(h1);
    drop(h2);
    for _ in 0..100 {
        if live() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(live(), 3, "the abandoned sequence is erased");
    // The deadline: a connection that starts a stream and then idles is cut 1.5 s
    // after it was accepted, and its unfinished sequence goes with it.
    let mut idle = connect_as(&t, host_key()).await.unwrap();
    let generate = Command {
        cla: CLA,
        ins: tacit_mpc::triples::token::INS_GENERATE,
        p1: 10,
        p2: 0,
        data: vec![],
        ne: 9,
    };
    idle.send(&generate.encode()).await.unwrap();
    assert_eq!(Response::decode(&idle.recv().await.unwrap()).unwrap().sw, 0x6100);
    assert_eq!(live(), 4);
    let t0 = std::time::Instant::now();
    assert!(idle.recv().await.is_err());
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_secs(10),
        "{took:?}"
    );
    for _ in 0..100 {
        if live() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(live(), 3, "the sequence of a connection cut at its deadline is erased");
}

/// Over a socket the holder keeps several GET RESPONSE requests in flight: a sequence
/// of many chunks arrives whole and equal to what the same token state streams
/// one command at a time in process.
#[tokio::test]
async fn pipelined_stream_equals_one_command_at_a_time() {
    let (_, tcp_card) = manufacture(70);
    let (_, local_card) = manufacture(70);
    let t = token_process(tcp_card, ServeLimits::default(), NetConfig::default()).await;
    let mut tcp = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    let mut local = TokenHolder::new(LocalTokenLink { card: local_card }, Pool::in_memory())
        .await
        .unwrap();
    // 2^22 + 2^12 triples: a sequence of eight 64 KiB chunks and one of 512 bytes.
    let n = (1 << 22) + (1 << 12);
    let a = tcp.fill(n, &mut |_, _| {}).await.unwrap();
    let b = local.fill(n, &mut |_, _| {}).await.unwrap();
    assert_eq!(a, b);
    for id in a {
        let x = tcp.pool.take(&tcp.certificate.token_id, id.d).unwrap().unwrap();
        let y = local.pool.take(&local.certificate.token_id, id.d).unwrap().unwrap();
        assert_eq!(x.c_a.len(), (1usize << id.log) / 64);
        assert!(x.c_a == y.c_a, "sequence {id:?} differs");
    }
}

/// A token that ends the stream early, or streams past the sequence's end, is an
/// error on the pipelined path too.
#[tokio::test]
async fn a_token_ending_early_or_late_is_an_error() {
    use tacit_mpc::triples::token::apdu::Response;
    for late in [false, true] {
        let (_, mut card) = manufacture(71);
        let cfg = NetConfig::default();
        let tl = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
        let taddr = tl.local_addr().unwrap();
        tokio::spawn(async move {
            let mut c = tl.accept().await.unwrap();
            let mut chunks = 0;
            while let Ok(cmd) = c.recv().await {
                let mut r = Response::decode(&card.process(&cmd)).unwrap();
                card.prefetch();
                if cmd.get(1) == Some(&0xC0) {
                    chunks += 1;
                    if !late && chunks == 3 {
                        r.sw = sw::OK; // "that was all" after three of eight chunks
                    }
                    if late && r.sw == sw::OK {
                        r.sw = 0x6100; // "more to come" after the last chunk
                    }
                }
                if c.send(&r.encode()).await.is_err() {
                    break;
                }
            }
        });
        let link = TcpTokenLink::new(FramedConn::connect(taddr, &cfg).await.unwrap());
        let mut h = TokenHolder::new(link, Pool::in_memory()).await.unwrap();
        let e = h.fill(1 << 22, &mut |_, _| {}).await.unwrap_err();
        assert!(matches!(e, Error::Token(_)), "{e}");
        assert!(
            h.pool.triples(&h.certificate.token_id) == 0,
            "nothing is stored from a bad stream"
        );
    }
}

/// RELEASE A is not committed (only RELEASE B waits on it): a token restarted from
/// its last durable state after RELEASE A does not release s_B until A asks for s_A
/// again, and then only once.
#[tokio::test]
async fn a_crash_after_release_a_never_releases_s_b_early_or_twice() {
    let (mut s, seqs) = setup_released_a(32).await;
    // The crash: a new token from what was durable.
    let durable = s.holder.link().card.eeprom().committed.clone();
    let restarted = Card::new(
        TokenState::from_wire(&durable).unwrap(),
        MemoryEeprom {
            committed: durable,
            fail: false,
        },
    )
    .unwrap();
    s.holder.link().card = restarted;
    let (req, _) = request(seqs.clone(), 9);
    let (code, data) = release_b(&mut s.holder, &req).await;
    assert_ne!(code, sw::OK, "s_B before s_A was asked again");
    assert!(data.is_empty());
    let again: Vec<u16> = {
        let mut v = Vec::new();
        for q in &seqs {
            v.push(release_a(&mut s.holder, q.d).await);
        }
        v
    };
    if again.iter().all(|&c| c == sw::OK) {
        assert_eq!(release_b(&mut s.holder, &req).await.0, sw::OK);
        assert_eq!(release_b(&mut s.holder, &req).await.0, sw::NOT_FOUND);
    } else {
        // The sequences were still Generating on disk: wasted, never released.
        assert_ne!(release_b(&mut s.holder, &req).await.0, sw::OK);
    }
}

/// A fresh folder for a pool.
fn pool_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tacit-pool-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// The name of a stored sequence's file in a pool folder.
fn pool_name(token_id: &[u8; 16], d: u64, log: u8, ext: &str) -> String {
    format!("{}-{d:016x}-{log:02}.{ext}", hex::encode(token_id))
}

fn files_in(d: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Review of the issue-27 fixes (MEDIUM, "concurrent sessions on one --pool knock
/// each other out"): four sessions of party a at once — as `schedule serve` and `mpc
/// psi serve --triples token --pool DIR` run them, each with its own token connection
/// and its own view of one prefilled pool folder — all finish with the right output,
/// using the prefilled sequences (none generated on the spot), and leave neither the
/// folder nor the token holding anything. Before the fix each session offered the
/// same first sequences: the token answered RELEASE A to every one, the first RELEASE
/// B erased them, and the others failed ("the token no longer holds …", 6A88).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_on_one_prefilled_pool_all_succeed() {
    use tacit_mpc::triples::token::{decompose, holder::generate};
    const N: usize = 4;
    let lc = aes();
    let count = lc.and_gates();
    let (ca, card) = manufacture(80);
    let t = token_process(card, ServeLimits::default(), NetConfig::default()).await;
    let dir = pool_dir("concurrent");
    {
        let mut filler = TokenHolder::new(host_link(&t).await, Pool::open(&dir).unwrap())
            .await
            .unwrap();
        let id = filler.certificate.token_id;
        for _ in 0..N {
            for log in decompose(count) {
                let mut pool = std::mem::take(&mut filler.pool);
                generate(filler.link(), id, log, &mut pool, &mut |_, _| {})
                    .await
                    .unwrap();
                filler.pool = pool;
            }
        }
    }
    let prefilled = N * decompose(count).len();
    assert_eq!(files_in(&dir).len(), prefilled);
    let sessions = (0..N).map(|i| {
        let (t, dir, ca, lc) = (&t, &dir, &ca, &lc);
        async move {
            let holder = TokenHolder::new(host_link(t).await, Pool::open(dir).unwrap())
                .await
                .unwrap();
            let peer = TokenPeer::new(trust(ca), ChaCha20Rng::seed_from_u64(100 + i as u64));
            run_both(lc, holder, peer).await
        }
    });
    let results = futures_join_all(sessions).await;
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(a, b)| match (a, b) {
            (Ok(a), Ok(b)) if hex::encode(a) == AES_CT && hex::encode(b) == AES_CT => None,
            _ => Some(format!(
                "a: {:?}, b: {:?}",
                a.as_ref().err().map(|e| e.to_string()),
                b.as_ref().err().map(|e| e.to_string())
            )),
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {N} sessions failed: {failed:#?}",
        failed.len()
    );
    assert_eq!(files_in(&dir), Vec::<String>::new(), "the pool keeps files");
    let live = t.server.card().lock().unwrap().state().sequences().count();
    assert_eq!(live, 0, "sequences were generated on the spot or left on the token");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the futures side by side on this task and returns their outputs in order.
async fn futures_join_all<F: std::future::Future>(fs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut fs: Vec<_> = fs.map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = fs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, o) in fs.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => *o = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.unwrap()).collect()
}

/// The pool's claims: a sequence one pool claimed is refused to another pool on the
/// same folder (in this process, as in another: the lock is the kernel's), used or
/// given up it leaves the folder, a pool dropped with a claim removes its file, and a
/// claim file nobody holds (its process crashed) is swept when a pool opens.
#[tokio::test]
async fn a_claimed_sequence_is_no_other_pools_and_stale_claims_are_swept() {
    let (_, card) = manufacture(81);
    let dir = pool_dir("claims");
    let mut h = TokenHolder::new(LocalTokenLink { card }, Pool::open(&dir).unwrap())
        .await
        .unwrap();
    let id = h.certificate.token_id;
    let mut pool = std::mem::take(&mut h.pool);
    let mut ds = Vec::new();
    for _ in 0..3 {
        let s = tacit_mpc::triples::token::holder::generate(h.link(), id, 7, &mut pool, &mut |_, _| {})
            .await
            .unwrap();
        ds.push(s.d);
    }
    drop(pool);
    let (mut p1, mut p2) = (Pool::open(&dir).unwrap(), Pool::open(&dir).unwrap());
    assert!(p1.claim(&id, ds[0]).unwrap());
    assert!(!p2.claim(&id, ds[0]).unwrap(), "two pools claimed one sequence");
    assert_eq!(p2.list(&id).len(), 2);
    assert_eq!(p1.list(&id).len(), 2);
    assert!(p2.claim(&id, ds[1]).unwrap());
    // A third pool opened now sees only the free one, and keeps the live claims.
    let p3 = Pool::open(&dir).unwrap();
    assert_eq!(p3.list(&id), vec![SequenceId { d: ds[2], log: 7 }]);
    assert_eq!(files_in(&dir).iter().filter(|f| f.ends_with(".claim")).count(), 2);
    // Used: the file goes. Dropped with a claim: the file goes too.
    assert!(p1.take(&id, ds[0]).unwrap().is_some());
    drop(p2);
    assert_eq!(files_in(&dir), vec![pool_name(&id, ds[2], 7, "ca")]);
    // A crashed process's claim: a claim file nobody holds locked.
    let stale = dir.join(pool_name(&id, ds[2], 7, "claim"));
    std::fs::rename(dir.join(pool_name(&id, ds[2], 7, "ca")), &stale).unwrap();
    let p4 = Pool::open(&dir).unwrap();
    assert!(p4.list(&id).is_empty());
    assert_eq!(files_in(&dir), Vec::<String>::new(), "a stale claim was not swept");
    drop((p3, p4));
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------
// Adversarial review of issue 27 (rev27): red tests. Each fails on i27 (344f73f).
// ---------------------------------------------------------------------------------

/// RED (rev27, MEDIUM: a hostile client drains the prefilled pool for free). A client
/// of `schedule serve` / `mpc psi serve --triples token --pool DIR` (party b) reads the
/// token offer and walks away before its seed request. Nothing of the offered
/// sequences reached anyone but a: their `s_B` never left the token, so each could
/// serve a later session unchanged. Yet a DELETEs every one (the token erases them)
/// and removes their files: one connection per session's worth of triples empties a
/// pool the operator filled ahead (the init work the paper moves off the critical
/// path), and every later honest session pays the generation again. Expected: the
/// sequences whose RELEASE B was never sent go back to the pool (the card gets an
/// owner-only "give back" that turns AReleased into Generated; the pool renames
/// D.claim back to D.ca).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn red_rev27_a_peer_walking_away_after_the_offer_burns_the_prefilled_pool() {
    use tacit_mpc::triples::token::decompose;
    let lc = aes();
    let count = lc.and_gates();
    let (_, card) = manufacture(90);
    let t = token_process(card, ServeLimits::default(), NetConfig::default()).await;
    let dir = pool_dir("red-walkaway");
    let mut holder = TokenHolder::new(host_link(&t).await, Pool::open(&dir).unwrap())
        .await
        .unwrap();
    holder.fill(count, &mut |_, _| {}).await.unwrap();
    let id = holder.certificate.token_id;
    let prefilled = files_in(&dir).len();
    assert_eq!(prefilled, decompose(count).len());
    let (mut ca, mut cb) = pair().await;
    let hostile_b = async move {
        // The offer, then nothing: the connection closes.
        let offer = cb.recv().await.unwrap();
        assert!(TokenOffer::from_wire(&offer).is_ok());
        drop(cb);
    };
    let (a, ()) = tokio::join!(holder.triples(&mut ca, Party::A, count), hostile_b);
    assert!(a.is_err(), "the session cannot finish without b");
    drop(holder);
    let pool = Pool::open(&dir).unwrap();
    let left = pool.triples(&id);
    let live = t.server.card().lock().unwrap().state().sequences().count();
    let files = files_in(&dir).len();
    drop(pool);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        left >= count && live >= prefilled,
        "one peer that read the offer and left burnt the prefilled pool: {left} triples left of {count} \
         ({files} files of {prefilled}), {live} sequences left on the token"
    );
}

/// Bytes this thread has read through system calls so far (`rchar`).
fn thread_rchar() -> u64 {
    let s = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("rchar:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A stored sequence made up for pool tests (no token needed: the pool stores what it
/// is given).
fn made_up_sequence(
    token_id: [u8; 16],
    d: u64,
    log: u8,
    fill: u64,
) -> tacit_mpc::triples::token::holder::StoredSequence {
    tacit_mpc::triples::token::holder::StoredSequence {
        token_id,
        id: SequenceId { d, log },
        c_a: vec![fill; (1usize << log) / 64],
    }
}

/// RED (rev27, MEDIUM-HIGH: memory per session = the whole pool, outside the psi
/// budget, before any hello). Every session of `schedule serve` / `mpc psi serve
/// --triples token --pool DIR` opens the pool (`TripleOpts::source` →
/// `connect_token` → `Pool::open`), and `Pool::open` reads every stored sequence's
/// whole `c_A` into memory, where it stays for the session — though the session
/// claims only the few sequences of its own circuit. In `mpc psi serve` this happens
/// right after the channel handshake, before the querier's hello and outside the
/// `MemoryBudget` (`serve_reserving` reserves only the circuit's footprint): K
/// connections that never send a hello hold K copies of the pool (a pool filled for
/// S sessions run S at a time holds S² sessions' worth). Measured here as the bytes
/// the opening thread reads: 32 sequences of 2^16 triples (256 KiB of c_A) are read
/// whole. Expected: `Pool::open` indexes the folder (file names, or each file's
/// header) and a sequence's `c_A` is read from the claimed, locked file at claim
/// time — which also makes the session use the bytes it locked, not a copy read
/// before the claim.
#[test]
fn red_rev27_opening_the_pool_reads_no_c_a_it_does_not_claim() {
    let dir = pool_dir("red-lazy");
    let id = [7u8; 16];
    let (n, log) = (32u64, 16u8);
    {
        let mut p = Pool::open(&dir).unwrap();
        for d in 0..n {
            p.put(made_up_sequence(id, d, log, d)).unwrap();
        }
    }
    let c_a_bytes = n * (1u64 << log) / 8;
    let before = thread_rchar();
    let p = Pool::open(&dir).unwrap();
    let read = thread_rchar() - before;
    assert_eq!(p.list(&id).len(), n as usize);
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        read < c_a_bytes / 4,
        "opening a pool read {read} bytes: every sequence's c_A ({c_a_bytes} bytes), per session, \
         before the session claimed any"
    );
}

/// RED (rev27, MEDIUM when the pool folder is shared with another user, e.g. under
/// /tmp; LOW otherwise: a symlink planted in the pool folder is written through). The
/// pool writes `D.ca-new` (then renames it to `D.ca`) and `D.claim` with
/// `O_CREAT|O_TRUNC` and no `O_NOFOLLOW`/`O_EXCL`, and `D` is the token's counter
/// (0, 1, 2, … for every token), so anyone who can create a file in the folder
/// predicts the next names and plants symlinks there: the server (often root, or the
/// operator) truncates and overwrites the link's target with `c_A` bytes. `Pool::open`
/// also neither refuses a folder others may write nor a `.ca` that is a link or not a
/// regular file (a FIFO named `x.ca` blocks every session's `Pool::open`). Expected:
/// create the temporary and claim files with `create_new` + `O_NOFOLLOW` (remove a
/// stale one first), and refuse at `open` a pool folder that is not the user's own or
/// is writable by group/others.
#[test]
fn red_rev27_a_symlink_planted_in_the_pool_folder_is_not_written_through() {
    let dir = pool_dir("red-symlink");
    let victim_dir = pool_dir("red-symlink-victim");
    std::fs::create_dir_all(&victim_dir).unwrap();
    let victim = victim_dir.join("precious");
    std::fs::write(&victim, b"the operator's file").unwrap();
    let mut p = Pool::open(&dir).unwrap();
    let id = [9u8; 16];
    // The next d values a token hands out are 0, 1, …: plant links for both names.
    // (Adapted to the pool's file names since the fix, `<token>-<d>-<log>.<ext>`; on
    // i27 the names were `<d>.<ext>`.)
    std::os::unix::fs::symlink(&victim, dir.join(pool_name(&id, 0, 7, "ca-new"))).unwrap();
    let _ = p.put(made_up_sequence(id, 0, 7, 0x4141_4141_4141_4141));
    let after_put = std::fs::read(&victim).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join(pool_name(&id, 1, 7, "claim"))).unwrap();
    std::fs::write(&victim, b"the operator's file").unwrap();
    let _ = p.put_claimed(made_up_sequence(id, 1, 7, 0x4242_4242_4242_4242));
    let after_claim = std::fs::read(&victim).unwrap();
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&victim_dir);
    assert_eq!(
        after_put, b"the operator's file",
        "Pool::put wrote through a symlink planted at D.ca-new"
    );
    assert_eq!(
        after_claim, b"the operator's file",
        "Pool::put_claimed wrote through a symlink planted at D.claim"
    );
}

/// RED (rev27, LOW: two tokens on one pool folder overwrite each other). The pool is
/// made for several tokens (`list`/`triples` filter by token id), but its files are
/// named by `d` alone and every token counts `d` from 0, so `tacit mpc token fill`
/// with a second token (or a re-manufactured one) on the same `--pool` silently
/// replaces the first token's stored sequences — and the in-memory map, keyed by `d`
/// too, keeps one of the two at random. Expected: the file name carries the token id
/// (`<token>-<d>.ca`), the maps are keyed by (token, d), and `put` never replaces an
/// existing file (`create_new` / `renameat2(RENAME_NOREPLACE)`).
#[test]
fn red_rev27_two_tokens_on_one_pool_folder_keep_their_sequences() {
    let dir = pool_dir("red-two-tokens");
    let (t1, t2) = ([1u8; 16], [2u8; 16]);
    {
        let mut p = Pool::open(&dir).unwrap();
        p.put(made_up_sequence(t1, 0, 7, 1)).unwrap();
    }
    {
        let mut p = Pool::open(&dir).unwrap();
        p.put(made_up_sequence(t2, 0, 7, 2)).unwrap();
    }
    let p = Pool::open(&dir).unwrap();
    let (n1, n2) = (p.list(&t1).len(), p.list(&t2).len());
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        (n1, n2),
        (1, 1),
        "storing token 2's sequence 0 replaced token 1's sequence 0"
    );
}

/// RED (rev27, MEDIUM-LOW: another session's GENERATE evicts the sequence a session
/// just claimed). A full token (MAX_LIVE_SEQUENCES live) makes room for a GENERATE by
/// erasing the *oldest* sequence whose `s_A` was never released — and a session's
/// `reserve` claims the *oldest* free sequence of each size (`Pool::list` runs in `d`
/// order). Between a session's claim and its RELEASE A (the offer goes to b first), a
/// concurrent session that generates a size its pool lacks erases exactly the
/// sequence the first one claimed; the first fails "the token no longer holds …".
/// In `mpc psi serve` the querier picks the set size, hence the sizes the server needs,
/// so a querier can force a GENERATE whenever it likes. Expected: a claimed sequence
/// is made the session's on the card at once (RELEASE A right after the claim, so it
/// is AReleased and never evicted; or a card-level "reserve"), or the card refuses
/// GENERATE (6A84) instead of evicting when the only victims are claimed.
#[tokio::test]
async fn red_rev27_another_sessions_generate_evicts_a_claimed_sequence() {
    use tacit_mpc::triples::token::card::MAX_LIVE_SEQUENCES;
    use tacit_mpc::triples::token::holder::generate;
    let (_, card) = manufacture(91);
    let mut holder = TokenHolder::new(LocalTokenLink { card }, Pool::in_memory())
        .await
        .unwrap();
    let id = holder.certificate.token_id;
    let mut pool = std::mem::take(&mut holder.pool);
    for _ in 0..MAX_LIVE_SEQUENCES {
        generate(holder.link(), id, 7, &mut pool, &mut |_, _| {}).await.unwrap();
    }
    // Session 1 reserves a sequence of 2^7 as its setup does (the first free one).
    // (Adapted since the fix: on i27 `reserve` was private and only claimed, which
    // this test did by hand with `pool.claim`; now the reservation also releases s_A.)
    holder.pool = pool;
    let mine = holder.reserve(1 << 7).await.unwrap()[0].id;
    assert_eq!(mine.log, 7);
    // Session 2 needs a 2^8 sequence its pool lacks: it generates one.
    let mut other = Pool::in_memory();
    generate(holder.link(), id, 8, &mut other, &mut |_, _| {})
        .await
        .unwrap();
    // Session 1 goes on with its setup: RELEASE A of the sequence it claimed.
    let sw_a = release_a(&mut holder, mine.d).await;
    assert_eq!(
        sw_a,
        sw::OK,
        "a concurrent GENERATE evicted the sequence session 1 had claimed (status {sw_a:04X})"
    );
}

/// rev27 (symlinks in the pool folder), the rest of the fix: a pool folder that group
/// or others may write is refused at open, a stored file is never replaced (a second
/// `put` of the same sequence, here from another pool on the folder, is an error and
/// leaves the first file as it was), and entries that are not regular files — a
/// symbolic link or a FIFO under a stored sequence's name — are skipped, so opening
/// the pool neither follows the link nor blocks on the FIFO.
#[test]
fn a_pool_folder_others_may_write_is_refused_and_odd_entries_are_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let id = [5u8; 16];
    let open = pool_dir("world-writable");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Pool::open(&open).unwrap_err().to_string();
    assert!(e.contains("group or others"), "{e}");
    let _ = std::fs::remove_dir_all(&open);

    let dir = pool_dir("odd-entries");
    let mut p = Pool::open(&dir).unwrap();
    p.put(made_up_sequence(id, 0, 7, 1)).unwrap();
    let first = std::fs::read(dir.join(pool_name(&id, 0, 7, "ca"))).unwrap();
    let mut q = Pool::open(&dir).unwrap();
    assert!(
        q.put(made_up_sequence(id, 0, 7, 2)).is_err(),
        "a stored file was replaced"
    );
    assert_eq!(std::fs::read(dir.join(pool_name(&id, 0, 7, "ca"))).unwrap(), first);
    // A link to a stored sequence elsewhere, and a FIFO, under sequences' names.
    let elsewhere = pool_dir("odd-entries-elsewhere");
    {
        let mut e = Pool::open(&elsewhere).unwrap();
        e.put(made_up_sequence(id, 5, 7, 5)).unwrap();
    }
    std::os::unix::fs::symlink(
        elsewhere.join(pool_name(&id, 5, 7, "ca")),
        dir.join(pool_name(&id, 5, 7, "ca")),
    )
    .unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        dir.join(pool_name(&id, 6, 7, "ca")),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let mut r = Pool::open(&dir).unwrap();
    assert_eq!(r.list(&id), vec![SequenceId { d: 0, log: 7 }]);
    assert!(!r.claim(&id, 5).unwrap() && !r.claim(&id, 6).unwrap());
    let got = r.take(&id, 0).unwrap().unwrap();
    assert_eq!(got.c_a, vec![1u64; 2]);
    drop((p, q, r));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

/// A holder made for one session (`close_after_setup`, as the CLI's servers make
/// them) ends its token connection when its setup is over, so the session's online
/// phase holds none of the token's connection slots: with a token that serves one
/// connection at a time, the next session connects while the first one's holder is
/// still alive. Without it, the newcomer (from the same address as the connection
/// it would replace) was refused until the first session ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holder_frees_its_token_connection_after_the_setup() {
    let lc = aes();
    let count = lc.and_gates();
    let (ca, card) = manufacture(92);
    let limits = ServeLimits::new(1, Duration::from_secs(60));
    let t = token_process(card, limits, NetConfig::default()).await;
    let mut holder = TokenHolder::new(host_link(&t).await, Pool::in_memory()).await.unwrap();
    holder.close_after_setup = true;
    let mut peer = TokenPeer::new(trust(&ca), ChaCha20Rng::seed_from_u64(93));
    let (mut ca_conn, mut cb_conn) = pair().await;
    let (a, b) = tokio::join!(
        holder.triples(&mut ca_conn, Party::A, count),
        peer.triples(&mut cb_conn, Party::B, count)
    );
    assert_eq!(a.unwrap().len(), count);
    assert_eq!(b.unwrap().len(), count);
    // The first holder is alive (its session would be in its online phase now).
    let mut next = None;
    for _ in 0..50 {
        if let Ok(conn) = connect_as(&t, host_key()).await
            && let Ok(h) = TokenHolder::new(TcpTokenLink::new(conn), Pool::in_memory()).await
        {
            next = Some(h);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        next.is_some(),
        "the token's only connection slot stayed with a session past its setup"
    );
    drop(holder);
}
