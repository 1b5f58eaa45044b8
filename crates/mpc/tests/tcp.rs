//! The parties over real TCP connections with both triple sources, and the token's
//! guarantees against a deviating A or a forged token.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tacit_crypto::sign::SigningKey;
use tacit_mpc::bits::{be_bytes_from_bits, bits_from_be_bytes};
use tacit_mpc::circuit::{LayeredCircuit, bristol};
use tacit_mpc::driver::{SessionConfig, TripleSource, run};
use tacit_mpc::gmw::{PartyInputs, default_owners};
use tacit_mpc::triples::ot::OtSource;
use tacit_mpc::triples::token::apdu::{Command, sw};
use tacit_mpc::triples::token::card::{Card, MemoryEeprom, TokenState};
use tacit_mpc::triples::token::holder::{
    LocalTokenLink, Pool, TcpTokenLink, TokenHolder, TokenPeer, open_release, serve_connection,
};
use tacit_mpc::triples::token::{CLA, INS_RELEASE_B, SeedRelease, SeedRequest, TokenOffer};
use tacit_mpc::{Error, Party};
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

fn manufacture(seed: u64) -> (SigningKey, Card<MemoryEeprom>) {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let ca = SigningKey::generate(&mut rng);
    let st = TokenState::manufacture(&ca, "tacit test fab", &mut rng);
    (ca, Card::new(st, MemoryEeprom::default()).unwrap())
}

#[tokio::test]
async fn aes_over_tcp_with_a_token_process() {
    let lc = aes();
    let (ca, mut card) = manufacture(10);
    // The token on its own socket, as `tacit mpc token serve` runs it.
    let cfg = NetConfig::default();
    let tl = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let taddr = tl.local_addr().unwrap();
    let token = tokio::spawn(async move {
        let c = tl.accept().await.unwrap();
        serve_connection(&mut card, c).await.unwrap();
        card
    });
    let link = TcpTokenLink::new(FramedConn::connect(taddr, &cfg).await.unwrap());
    let holder = TokenHolder::new(link, Pool::in_memory()).await.unwrap();
    let peer = TokenPeer::new(ca.verifying_key(), ChaCha20Rng::seed_from_u64(5));
    let (a, b) = run_both(&lc, holder, peer).await;
    assert_eq!(hex::encode(a.unwrap()), AES_CT);
    assert_eq!(hex::encode(b.unwrap()), AES_CT);
    let card = token.await.unwrap();
    // Every sequence used was erased from the token's persistent state.
    let saved = TokenState::from_wire(&card.eeprom().committed).unwrap();
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
    let peer = TokenPeer::new(other_ca.verifying_key(), ChaCha20Rng::seed_from_u64(6));
    let (a, b) = run_both(&lc, holder, peer).await;
    assert!(matches!(b, Err(Error::Untrusted(_))), "{b:?}");
    assert!(a.is_err());
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
    let e = tacit_mpc::triples::token::holder::check_offer(&offer, &ca.verifying_key(), 6400).unwrap_err();
    assert!(matches!(e, Error::Peer(_)));
}

/// Over a socket the holder keeps several GET RESPONSE requests in flight: a sequence
/// of many chunks arrives whole and equal to what the same token state streams
/// one command at a time in process.
#[tokio::test]
async fn pipelined_stream_equals_one_command_at_a_time() {
    let (_, mut tcp_card) = manufacture(70);
    let (_, local_card) = manufacture(70);
    let cfg = NetConfig::default();
    let tl = FramedListener::bind("127.0.0.1:0", &cfg).await.unwrap();
    let taddr = tl.local_addr().unwrap();
    tokio::spawn(async move {
        let c = tl.accept().await.unwrap();
        serve_connection(&mut tcp_card, c).await.unwrap();
    });
    let link = TcpTokenLink::new(FramedConn::connect(taddr, &cfg).await.unwrap());
    let mut tcp = TokenHolder::new(link, Pool::in_memory()).await.unwrap();
    let mut local = TokenHolder::new(LocalTokenLink { card: local_card }, Pool::in_memory())
        .await
        .unwrap();
    // 2^22 + 2^12 triples: a sequence of eight 64 KiB chunks and one of 512 bytes.
    let n = (1 << 22) + (1 << 12);
    let a = tcp.fill(n, &mut |_, _| {}).await.unwrap();
    let b = local.fill(n, &mut |_, _| {}).await.unwrap();
    assert_eq!(a, b);
    for id in a {
        let x = tcp.pool.take(id.d).unwrap().unwrap();
        let y = local.pool.take(id.d).unwrap().unwrap();
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
