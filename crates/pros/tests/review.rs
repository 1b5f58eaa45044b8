//! Adversarial review of the issue-26 fixes (branch `pros-review`). Each test plays
//! one attack and asserts the SECURE behaviour that `docs/pros.md` claims; a test that
//! fails here is a break the review found (see the review report for each).

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_pros::bn::{self, Nat};
use tacit_pros::element::{ElementEncoding, match_tag, session_id};
use tacit_pros::fnp::{self, PsiParams, Sender};
use tacit_pros::modproof::{FOURTH_ROOT_CHALLENGES, ModulusProof, NTH_ROOT_CHALLENGES};
use tacit_pros::paillier::{Ciphertext, PrivateKey, PublicKey, RnPool};
use tacit_pros::service::{self, Event, ServiceConfig};
use tacit_pros::threepr::{
    Answer, Hello, Initiator, InitiatorStep, MATCH_DOMAIN, Query, ReconcileParams, Reconciled, Responder,
    ResponderStep, SESSION_DOMAIN, Scheme, TAG_ACCEPT, Variant,
};
use tacit_pros::{NO_CHANNEL_BINDING, Result};
use tacit_wire::{Reader, Writer};

fn key() -> PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    let k = K.get_or_init(|| {
        let k = PrivateKey::generate(256).unwrap();
        k.modulus_proof().unwrap();
        k
    });
    k.clone()
}

const ALL: [(Scheme, Variant); 6] = [
    (Scheme::Sor, Variant::Implicit),
    (Scheme::Sor, Variant::Explicit),
    (Scheme::Sor, Variant::ExplicitCached),
    (Scheme::Mor, Variant::Implicit),
    (Scheme::Mor, Variant::Explicit),
    (Scheme::Mor, Variant::ExplicitCached),
];

fn params(scheme: Scheme, variant: Variant, encoding: ElementEncoding) -> ReconcileParams {
    ReconcileParams {
        scheme,
        variant,
        encoding,
    }
}

fn accept_bytes(n: u32, nonce: &[u8; 32]) -> Vec<u8> {
    let mut w = Writer::new();
    w.put_envelope(TAG_ACCEPT);
    w.put_u32(n);
    w.put_fixed(nonce);
    w.into_bytes()
}

/// What a hostile B sees of a round: the round, its pairs, A's ciphertext for each
/// position (cached across rounds), A's key, the session id.
struct RoundView<'a> {
    round: u32,
    pairs: Vec<(u32, u32)>,
    by_pos: &'a std::collections::HashMap<u32, Ciphertext>,
    pk: &'a PublicKey,
    sid: [u8; 32],
}

/// Runs an honest A (the real `Initiator`) against a B written by the test: B sends
/// an accept with length `n` and answers every round with `answer(view)`. Returns A's
/// result.
fn against_hostile_b(
    p: ReconcileParams,
    a_set: &[String],
    n: u32,
    answer: &mut dyn FnMut(&RoundView<'_>) -> Vec<Ciphertext>,
) -> Result<Reconciled> {
    let k = key();
    let pool = Arc::new(RnPool::new(k.public()).unwrap());
    let (a, hello) = Initiator::start(p, k, a_set, pool)?;
    let h = Hello::from_bytes(&hello)?;
    let pk = h.key.clone();
    let nonce = [7u8; 32];
    let sid = session_id(SESSION_DOMAIN, &NO_CHANNEL_BINDING, &nonce);
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (mut a, mut q) = a.on_accept(&accept_bytes(n, &nonce), &NO_CHANNEL_BINDING, &mut rng)?;
    let mut by_pos = std::collections::HashMap::new();
    loop {
        let pairs_max = tacit_pros::threepr::max_round_pairs(p.scheme, n);
        let query = Query::from_bytes(&q, &pk, pairs_max)?;
        for (i, c) in &query.entries {
            by_pos.insert(*i, c.clone());
        }
        let view = RoundView {
            round: query.round,
            pairs: p.scheme.round_pairs(n, query.round),
            by_pos: &by_pos,
            pk: &pk,
            sid,
        };
        let values = answer(&view);
        let bytes = Answer {
            round: query.round,
            values,
        }
        .to_bytes(&pk);
        match a.on_answer(&bytes, &mut rng)? {
            InitiatorStep::Continue(na, nq) => {
                a = na;
                q = nq;
            }
            InitiatorStep::Done(r, _) => return Ok(r),
        }
    }
}

/// B's answer to pair `(i, j)` of the view as if it held `guess` there:
/// `E(r·(guess − a_i) + h_ij(guess))`.
fn guess_answer(v: &RoundView<'_>, i: u32, j: u32, guess: &Nat, pool: &RnPool, rng: &mut ChaCha20Rng) -> Ciphertext {
    let h = match_tag(MATCH_DOMAIN, &v.sid, i, j, guess, v.pk.n()).unwrap();
    let c = v.by_pos.get(&i).expect("A's ciphertext for the position").clone();
    fnp::evaluate(v.pk, std::slice::from_ref(&c), guess, &h, pool, rng).unwrap()
}

/// Finding 1. docs/pros.md, "Against a deviating B": "one round of hits per session,
/// **at most `n` guesses per A position** — a list of B's choosing per position".
///
/// A checks every decrypted value of a round against the tags of *all* pairs of the
/// round (`on_answer` builds one map of tags), so B can spend every answer value of
/// every round on one position of A — A's favourite, `a_0`, which takes part in every
/// round of MOR and in rounds `0 … n−1` of SOR. That is `n(n+1)/2` (SOR) or `n²` (MOR)
/// guesses against `a_0`, not `n`. Here `n = 6` and A's favourite is B's 16th guess:
/// with at most `n` guesses per position B could not find it; it does, in every
/// scheme and variant, and A then agrees to it.
#[test]
fn a_deviating_b_spends_every_answer_of_a_round_on_one_position() {
    let enc = ElementEncoding::Hash127;
    let dict: Vec<String> = (0..64).map(|k| format!("slot-{k}")).collect();
    let secret = dict[15].clone();
    let mut a_set = vec![secret.clone()];
    a_set.extend((1..6).map(|k| format!("a{k}")));
    let n = 6u32;
    let mut broken = Vec::new();
    for (s, var) in ALL {
        let pool = RnPool::new(key().public()).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut next = 0usize;
        let mut answer = |v: &RoundView<'_>| -> Vec<Ciphertext> {
            let j0 = v.pairs.iter().find(|(i, _)| *i == 0).map(|&(_, j)| j);
            v.pairs
                .iter()
                .map(|_| match j0 {
                    Some(j0) if next < dict.len() => {
                        let g = enc.value(dict[next].as_bytes()).unwrap();
                        next += 1;
                        guess_answer(v, 0, j0, &g, &pool, &mut rng)
                    }
                    _ => v.pk.encrypt_raw(&bn::from_u64(1).unwrap(), &mut rng).unwrap(),
                })
                .collect()
        };
        let r = against_hostile_b(params(s, var, enc), &a_set, n, &mut answer).unwrap();
        if r.elements.contains(&secret.as_bytes().to_vec()) {
            broken.push(format!("{s}/{var} (round {} of {}, {next} guesses spent)", r.rounds, s.rounds(n)));
        }
    }
    assert!(
        broken.is_empty(),
        "B found A's favourite with its guess #16 against one position (n = {n}) in: {}",
        broken.join(", ")
    );
}

/// Finding 1 (amplified). A accepts any `n` from B between its own length and 4096,
/// and pads its list with dummies: B raises `n` and gets `n(n+1)/2` guesses against
/// A's favourite in SOR. A lists 3 elements; B says `n = 48` and tests 1 176 guesses
/// on `a_0` — A's favourite is guess #1000 of a public-grid-sized dictionary.
#[test]
fn a_deviating_b_raises_n_to_buy_more_guesses() {
    let enc = ElementEncoding::Hash127;
    let dict: Vec<String> = (0..1200).map(|k| format!("grid-slot-{k}")).collect();
    let secret = dict[999].clone();
    let a_set = vec![secret.clone(), "x".into(), "y".into()];
    let pool = RnPool::new(key().public()).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(6);
    let mut next = 0usize;
    let mut answer = |v: &RoundView<'_>| -> Vec<Ciphertext> {
        let j0 = v.pairs.iter().find(|(i, _)| *i == 0).map(|&(_, j)| j);
        v.pairs
            .iter()
            .map(|_| match j0 {
                Some(j0) if next < dict.len() => {
                    let g = enc.value(dict[next].as_bytes()).unwrap();
                    next += 1;
                    guess_answer(v, 0, j0, &g, &pool, &mut rng)
                }
                _ => v.pk.encrypt_raw(&bn::from_u64(1).unwrap(), &mut rng).unwrap(),
            })
            .collect()
    };
    let r = against_hostile_b(params(Scheme::Sor, Variant::Implicit, enc), &a_set, 48, &mut answer).unwrap();
    assert!(
        !r.elements.contains(&secret.as_bytes().to_vec()),
        "A (3 elements) accepted n = {} from B and B found A's favourite with guess #1000 (round {})",
        r.n,
        r.rounds
    );
}

// ---------------------------------------------------------------- unbalanced moduli

fn blum_prime(bits: i32) -> Nat {
    loop {
        let mut p = openssl::bn::BigNum::new().unwrap();
        p.generate_prime(bits, false, None, None).unwrap();
        if p.mod_word(4).unwrap() == 3 {
            return p;
        }
    }
}

fn is_qr(v: &Nat, p: &Nat) -> bool {
    // Euler: v^((p−1)/2) ≡ 1
    let mut e = bn::dup(p).unwrap();
    e.sub_word(1).unwrap();
    let e = bn::div(&e, &bn::from_u64(2).unwrap()).unwrap();
    bn::is_one(&bn::pow_public(&bn::reduce(v, p).unwrap(), &e, p).unwrap())
}

fn crt(xp: &Nat, xq: &Nat, p: &Nat, q: &Nat) -> Nat {
    let qinv = bn::inv_mod(q, p).unwrap();
    let d = bn::sub_mod(&bn::reduce(xp, p).unwrap(), &bn::reduce(xq, p).unwrap(), p).unwrap();
    bn::add(&bn::reduce(xq, q).unwrap(), &bn::mul(&bn::mul_mod(&d, &qinv, p).unwrap(), q).unwrap()).unwrap()
}

/// The challenges of `modproof.rs` (SHA-256 in counter mode under a seed of `N`, `w`).
fn challenge(seed: &[u8; 32], kind: u8, i: u32, len: usize, n: &Nat) -> Nat {
    let mut out = Vec::new();
    let mut ctr = 0u32;
    while out.len() < len + 16 {
        let mut h = Sha256::new();
        h.update(seed);
        h.update([kind]);
        h.update(i.to_be_bytes());
        h.update(ctr.to_be_bytes());
        out.extend_from_slice(&h.finalize());
        ctr += 1;
    }
    out.truncate(len + 16);
    bn::reduce(&openssl::bn::BigNum::from_slice(&out).unwrap(), n).unwrap()
}

/// An honest Π^mod proof for a Paillier–Blum modulus `p·q` of any shape (the crate's
/// prover assumes balanced primes; an attacker writes its own).
fn prove_any(p: &Nat, q: &Nat) -> (PublicKey, Arc<ModulusProof>) {
    let n = bn::mul(p, q).unwrap();
    let pk = PublicKey::from_modulus(bn::dup(&n).unwrap()).unwrap();
    let len = pk.modulus_len();
    let mut rng = ChaCha20Rng::seed_from_u64(99);
    let w = loop {
        let w = bn::random_unit(&mut rng, &n).unwrap();
        if is_qr(&w, p) != is_qr(&w, q) {
            break w;
        }
    };
    let mut h = Sha256::new();
    h.update(b"tacit-pros/v1/modulus-proof\0");
    h.update((len as u32).to_be_bytes());
    h.update(bn::to_fixed(&n, len).unwrap());
    h.update(bn::to_fixed(&w, len).unwrap());
    let seed: [u8; 32] = h.finalize().into();
    let fourth = |p: &Nat| {
        let mut pp1 = bn::dup(p).unwrap();
        pp1.add_word(1).unwrap();
        let s = bn::div(&pp1, &bn::from_u64(4).unwrap()).unwrap();
        let mut pm1 = bn::dup(p).unwrap();
        pm1.sub_word(1).unwrap();
        bn::mul_mod(&s, &s, &pm1).unwrap()
    };
    let (fp, fq) = (fourth(p), fourth(q));
    let mut wr = Writer::new();
    wr.put_fixed(&bn::to_fixed(&w, len).unwrap());
    let mut a = [0u8; FOURTH_ROOT_CHALLENGES / 8];
    let mut b = [0u8; FOURTH_ROOT_CHALLENGES / 8];
    for i in 0..FOURTH_ROOT_CHALLENGES {
        let y = challenge(&seed, b'4', i as u32, len, &n);
        let (yp, yq, wp) = (is_qr(&y, p), is_qr(&y, q), is_qr(&w, p));
        let bi = yp != yq;
        let ai = (bi && !wp) ^ !yp;
        let mut t = bn::dup(&y).unwrap();
        if bi {
            t = bn::mul_mod(&t, &w, &n).unwrap();
        }
        if ai {
            t = bn::sub_mod(&bn::from_u64(0).unwrap(), &t, &n).unwrap();
        }
        let xp = bn::pow_public(&bn::reduce(&t, p).unwrap(), &fp, p).unwrap();
        let xq = bn::pow_public(&bn::reduce(&t, q).unwrap(), &fq, q).unwrap();
        wr.put_fixed(&bn::to_fixed(&crt(&xp, &xq, p, q), len).unwrap());
        a[i / 8] |= (ai as u8) << (i % 8);
        b[i / 8] |= (bi as u8) << (i % 8);
    }
    wr.put_fixed(&a);
    wr.put_fixed(&b);
    let mut pm1 = bn::dup(p).unwrap();
    pm1.sub_word(1).unwrap();
    let mut qm1 = bn::dup(q).unwrap();
    qm1.sub_word(1).unwrap();
    let phi = bn::mul(&pm1, &qm1).unwrap();
    let d = bn::inv_mod(&bn::reduce(&n, &phi).unwrap(), &phi).unwrap();
    for j in 0..NTH_ROOT_CHALLENGES {
        let u = challenge(&seed, b'N', j as u32, len, &n);
        wr.put_fixed(&bn::to_fixed(&bn::pow_public(&u, &d, &n).unwrap(), len).unwrap());
    }
    let bytes = wr.into_bytes();
    let mut r = Reader::new(&bytes);
    let proof = ModulusProof::decode(&mut r, &pk).unwrap();
    r.finish().unwrap();
    proof.verify(&pk).expect("an honest proof of a Paillier–Blum modulus verifies");
    (pk, Arc::new(proof))
}

/// A 256-bit Paillier–Blum key `p·q` with `p` a 20-bit prime: passes trial division
/// (no factor below 2¹⁴) and its Π^mod proof is an honest one.
fn unbalanced_key() -> (Nat, Nat, PrivateKey, PublicKey, Arc<ModulusProof>) {
    loop {
        let p = blum_prime(20);
        let q = blum_prime(236);
        let n = bn::mul(&p, &q).unwrap();
        if n.num_bits() != 256 {
            continue;
        }
        let Ok(sk) = PrivateKey::from_primes(bn::dup(&q).unwrap(), bn::dup(&p).unwrap()) else {
            continue;
        };
        let (pk, proof) = prove_any(&p, &q);
        return (p, q, sk, pk, proof);
    }
}

/// Finding 2. docs/pros.md: "Each comparison tells A whether B's element there equals
/// **either of two candidates** of A's choosing — one modulo each prime factor of its
/// key (the proof limits it to two)". Π^mod proves `N = p·q` with `p ≡ q ≡ 3 mod 4`,
/// not that `p` and `q` are large: a modulus with a 20-bit `p` passes B's checks. The
/// comparison then tells A whether `b ≡ r (mod p)` for a residue class `r`, and, when
/// it does, `h_ij(b) mod p` identifies `b` inside the class: with 32-bit elements
/// (`--encoding int32`, and the paper's slot encoding) one comparison tests
/// `2³²/p ≈ 4 096` candidates. Here A's two "candidates" (the class representative
/// `r < p` and a wrong guess modulo `q`) are both wrong, yet A reads B's element.
#[test]
fn an_unbalanced_paillier_blum_modulus_tests_thousands_of_candidates_per_comparison() {
    let (p, _q, sk, pk, proof) = unbalanced_key();
    let enc = ElementEncoding::Integer32;
    let rp = params(Scheme::Sor, Variant::Implicit, enc);
    let b_secret: u32 = 3_141_592_653;
    let b_set = vec![b_secret.to_string(), "17".to_string()];
    let hello = Hello {
        params: rp,
        n: 2,
        key: pk.clone(),
        proof,
    };
    let b = Responder::new(rp, &b_set, 256, 4096).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(8);
    let accepted = b.on_hello(&hello.to_bytes(), &NO_CHANNEL_BINDING, &mut rng);
    let Ok((b, accept)) = accepted else {
        return; // secure: the unbalanced modulus was refused
    };
    let nonce: [u8; 32] = accept[7..39].try_into().unwrap();
    let sid = session_id(SESSION_DOMAIN, &NO_CHANNEL_BINDING, &nonce);
    // A attacks the residue class of b mod p (it would walk the classes over its n²
    // comparisons; the test picks the right one), and a wrong guess modulo q
    let bv = bn::from_u64(b_secret as u64).unwrap();
    let r = bn::reduce(&bv, &p).unwrap();
    let wrong = bn::from_u64(12345).unwrap();
    let x = crt(&r, &wrong, &p, &_q);
    let neg = bn::sub_mod(&bn::from_u64(0).unwrap(), &x, pk.n()).unwrap();
    let c = pk.encrypt_raw(&neg, &mut rng).unwrap();
    let q0 = Query {
        round: 0,
        entries: vec![(0, c)],
    };
    let ResponderStep::Answer(_, ans) = b.on_message(&q0.to_bytes(&pk), &mut rng).unwrap() else {
        panic!("B did not answer")
    };
    let ans = Answer::from_bytes(&ans, &pk, 1).unwrap();
    let v = bn::reduce(&sk.decrypt_raw(&ans.values[0]).unwrap(), &p).unwrap();
    // every 32-bit value in the class r mod p
    let r_u = r.to_dec_str().unwrap().parse::<u64>().unwrap();
    let p_u = p.to_dec_str().unwrap().parse::<u64>().unwrap();
    let mut tested = 0usize;
    let mut hits = Vec::new();
    let mut c = r_u;
    while c < 1 << 32 {
        tested += 1;
        let cv = bn::from_u64(c).unwrap();
        let t = match_tag(MATCH_DOMAIN, &sid, 0, 0, &cv, pk.n()).unwrap();
        if bn::reduce(&t, &p).unwrap() == v {
            hits.push(c);
        }
        c += p_u;
    }
    assert!(
        !hits.contains(&(b_secret as u64)),
        "B accepted a Paillier–Blum key with a {}-bit prime factor; one comparison tested {tested} candidates and \
         A read B's element {b_secret} (hits: {hits:?}), neither of A's two 'candidates' ({r_u} and 12345)",
        p.num_bits()
    );
}

/// Finding 2, FNP. `tacit pros psi serve --max-tests N` promises that a querier tests at
/// most `2·B·M` candidates (`PsiParams::chooser_tests`). With one bin of one root
/// (`chooser_tests() == 2`) and a key with a 20-bit factor, the query's one root slot
/// covers a residue class of ~4 096 32-bit candidates, and the querier reads the
/// sender's element from the class.
#[test]
fn an_unbalanced_modulus_breaks_the_fnp_chooser_test_bound() {
    let (p, q, sk, pk, proof) = unbalanced_key();
    let mut pp = PsiParams::new(1, 4);
    pp.bucketing = false;
    pp.encoding = ElementEncoding::Integer32;
    assert_eq!(pp.chooser_tests(), 2);
    let secret: u32 = 2_718_281_828;
    let s_set = vec![secret.to_string(), "1".into(), "2".into()];
    let sender = Sender::new(&pp, &s_set, 256, 4096).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(10);
    // p(x) = x − root, root ≡ secret (mod p) class, a wrong value mod q
    let sv = bn::from_u64(secret as u64).unwrap();
    let r = bn::reduce(&sv, &p).unwrap();
    let root = crt(&r, &bn::from_u64(777).unwrap(), &p, &q);
    let alpha0 = bn::sub_mod(&bn::from_u64(0).unwrap(), &root, pk.n()).unwrap();
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut seed);
    let query = fnp::Query {
        params: pp,
        key: pk.clone(),
        proof,
        seed,
        coeffs: vec![pk.encrypt_raw(&alpha0, &mut rng).unwrap()],
    };
    let Ok((ans, _)) = sender.respond(&query.to_bytes(), &NO_CHANNEL_BINDING, &mut rng) else {
        return; // secure: refused
    };
    let sid = session_id(fnp::SESSION_DOMAIN, &NO_CHANNEL_BINDING, &ans.nonce);
    let r_u = r.to_dec_str().unwrap().parse::<u64>().unwrap();
    let p_u = p.to_dec_str().unwrap().parse::<u64>().unwrap();
    let mut tested = 0;
    let mut found = Vec::new();
    for c in &ans.values {
        let v = bn::reduce(&sk.decrypt_raw(c).unwrap(), &p).unwrap();
        let mut cand = r_u;
        while cand < 1 << 32 {
            tested += 1;
            let t = match_tag(fnp::MATCH_DOMAIN, &sid, 0, 0, &bn::from_u64(cand).unwrap(), pk.n()).unwrap();
            if bn::reduce(&t, &p).unwrap() == v {
                found.push(cand);
            }
            cand += p_u;
        }
    }
    assert!(
        !found.contains(&(secret as u64)),
        "chooser_tests() = 2, yet the querier tested {tested} candidates against the {} answers and found the \
         sender's {secret} (found {found:?})",
        ans.values.len()
    );
}

// ---------------------------------------------------------------- the serving shell

/// Finding 4. docs/pros.md: "at most `--max-clients` at once"; the service shell:
/// "a session past its deadline is dropped at its next message, after the round it is
/// computing". The deadline drops the session's future and its permit, but the
/// blocking work it started (a whole FNP answer in `net::psi_serve`, a round in 3PR)
/// runs on: a client that sends one message and waits out the deadline starts a
/// computation that outlives its session, and the next client gets the permit. Here
/// the handler has the drivers' shape (one `spawn_blocking` per message); with
/// `max_clients = 1` and a 300 ms deadline, five clients in a row leave five
/// computations running at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_past_the_deadline_is_not_counted_against_max_clients() {
    let net = NetConfig {
        max_frame: 1 << 16,
        read_timeout: Duration::from_secs(30),
        deadline: Some(Duration::from_millis(300)),
        ..NetConfig::default()
    };
    let l = FramedListener::bind("127.0.0.1:0", &net).await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let active = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (a2, p2) = (active.clone(), peak.clone());
    let handler = move |mut c: FramedConn| {
        let (active, peak) = (a2.clone(), p2.clone());
        async move {
            let msg = c.recv().await?;
            // the shape of net::psi_serve: the whole answer on the blocking pool
            tokio::task::spawn_blocking(move || {
                let now = active.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_secs(3));
                active.fetch_sub(1, Ordering::SeqCst);
                msg.len()
            })
            .await
            .map_err(|e| tacit_pros::Error::Backend(e.to_string()))?;
            c.send(b"answer").await?;
            Ok::<_, tacit_pros::Error>(())
        }
    };
    let cfg = ServiceConfig {
        max_clients: 1,
        net,
        tls: None,
    };
    let events = Arc::new(|_e: Event<()>| {});
    let server = tokio::spawn(async move { service::serve(l, cfg, Some(5), handler, events).await });
    for _ in 0..5 {
        let mut c = FramedConn::connect(addr.as_str(), &NetConfig::default()).await.unwrap();
        c.send(b"query").await.unwrap();
        // wait until the server drops us at its deadline
        let _ = c.recv().await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let peak_now = peak.load(Ordering::SeqCst);
    server.abort();
    assert!(
        peak_now <= 1,
        "max_clients = 1, yet {peak_now} sessions' computations ran at once (each outlived its dropped session)"
    );
}

// ---------------------------------------------------------------- end to end

/// Finding 1 against the binary (ignored: run by hand). A hostile `tacit schedule
/// serve` on `$REVIEW_ADDR` (TLS, its own key, any client) that offers no slot at all:
/// it agrees to A's window, then spends every answer of every round on A's favourite
/// slot, guessing through every slot of the public grid (`$REVIEW_FROM`, `$REVIEW_TO`
/// RFC 3339, 30-minute meetings every 30 minutes). It prints the slot it learns; A's
/// `tacit schedule connect` prints it as agreed and writes the invitation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn e2e_hostile_schedule_server() {
    use chrono::{DateTime, Utc};
    use tacit_pros::net::{binding_of, recv_at_most, send};
    use tacit_pros::schedule::{TAG_WINDOW_OK, WINDOW_LEN, Window};
    let addr = std::env::var("REVIEW_ADDR").unwrap_or("127.0.0.1:7997".into());
    let n_claim: u32 = std::env::var("REVIEW_N").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let id = tacit_net::tls::SelfSigned::generate("tacit-pros.invalid").unwrap();
    let tls = id.server_config_checking_clients(tacit_net::tls::any_key()).unwrap();
    let net = NetConfig {
        max_frame: Hello::max_len(4096),
        read_timeout: Duration::from_secs(600),
        ..NetConfig::default()
    };
    let l = FramedListener::bind(addr.as_str(), &net).await.unwrap();
    eprintln!("hostile B: listening on {addr}, key {}", hex(&id.fingerprint().unwrap()));
    let conn = l.accept().await.unwrap();
    let mut c = conn.accept_tls(tls).await.unwrap();
    let w = Window::from_bytes(&recv_at_most(&mut c, WINDOW_LEN).await.unwrap()).unwrap();
    eprintln!("hostile B: A's window {}", w.describe());
    let mut ok = Writer::new();
    ok.put_envelope(TAG_WINDOW_OK);
    send(&mut c, &ok.into_bytes()).await.unwrap();
    // the public grid: every slot of the window
    let mut grid: Vec<(DateTime<Utc>, Vec<u8>)> = Vec::new();
    let mut t = w.from;
    while t + w.duration <= w.to {
        let s = tacit_calendar::Slot {
            start: t,
            end: t + w.duration,
        };
        grid.push((t, w.element(&s).unwrap()));
        t += w.step;
    }
    let enc = w.encoding.element_encoding();
    let hello = Hello::from_bytes(&recv_at_most(&mut c, Hello::max_len(4096)).await.unwrap()).unwrap();
    let pk = hello.key.clone();
    let n = hello.n.max(n_claim);
    eprintln!("hostile B: A offers {} slots; the grid has {} slots; we say n = {n}", hello.n, grid.len());
    let mut nonce = [0u8; 32];
    ChaCha20Rng::from_entropy().fill_bytes(&mut nonce);
    let sid = session_id(SESSION_DOMAIN, &binding_of(&c), &nonce);
    send(&mut c, &accept_bytes(n, &nonce)).await.unwrap();
    let pool = RnPool::new(&pk).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let mut by_pos = std::collections::HashMap::new();
    let mut next = 0usize;
    let scheme = hello.params.scheme;
    let mut last_round = Vec::new();
    loop {
        let msg = recv_at_most(&mut c, 64 << 20).await.unwrap();
        if let Ok(o) = tacit_pros::threepr::Outcome::from_bytes(&msg, 4096) {
            for v in &o.values {
                let hit = last_round.iter().find(|(_, e): &&(DateTime<Utc>, Vec<u8>)| {
                    enc.value(e).unwrap().to_vec_padded(16).unwrap() == v.to_vec()
                });
                match hit {
                    Some((t, _)) => eprintln!("hostile B: learned A's favourite slot: {t} (round {})", o.round),
                    None => eprintln!("hostile B: outcome value not ours?"),
                }
            }
            if o.values.is_empty() {
                eprintln!("hostile B: no hit after {} guesses", next);
            }
            return;
        }
        let q = Query::from_bytes(&msg, &pk, tacit_pros::threepr::max_round_pairs(scheme, n)).unwrap();
        for (i, c) in &q.entries {
            by_pos.insert(*i, c.clone());
        }
        let view = RoundView {
            round: q.round,
            pairs: scheme.round_pairs(n, q.round),
            by_pos: &by_pos,
            pk: &pk,
            sid,
        };
        let j0 = view.pairs.iter().find(|(i, _)| *i == 0).map(|&(_, j)| j);
        last_round.clear();
        let values: Vec<Ciphertext> = view
            .pairs
            .iter()
            .map(|_| match j0 {
                Some(j0) if next < grid.len() => {
                    let (t, e) = grid[next].clone();
                    next += 1;
                    let g = enc.value(&e).unwrap();
                    last_round.push((t, e));
                    guess_answer(&view, 0, j0, &g, &pool, &mut rng)
                }
                _ => pk.encrypt_raw(&bn::from_u64(1).unwrap(), &mut rng).unwrap(),
            })
            .collect();
        let _ = view.round;
        send(&mut c, &Answer { round: q.round, values }.to_bytes(&pk)).await.unwrap();
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------- hostile calendars

fn jan(d: u32, h: u32) -> chrono::DateTime<chrono::Utc> {
    use chrono::TimeZone;
    chrono::Utc.with_ymd_and_hms(2025, 1, d, h, 0, 0).unwrap()
}

/// Finding 5a. docs/pros.md (issue 26, item 6): "a rule with more than 10 000
/// occurrences in the window is an error instead of a silent cut that would show busy
/// time as free". The `rrule` crate's iterator, under `limit()`, gives up after
/// 100 000 internal steps without a date and then simply ends (`was_limited`), which
/// `Calendar::expand` takes for the end of the rule: a `FREQ=SECONDLY` (or `MINUTELY`)
/// rule whose dates are more than ~28 hours (~69 days) apart loses every occurrence
/// after the first gap. This event blocks 10:00–12:00 UTC on 6 January every year;
/// the window's occurrence is silently dropped and the two hours are offered as free.
#[test]
fn a_sparse_secondly_rule_is_not_silently_dropped() {
    for (name, dtstart, rule) in [
        ("secondly", "20240106T100000Z", "FREQ=SECONDLY;BYMONTH=1;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0;BYSECOND=0"),
        ("minutely", "20240106T100000Z", "FREQ=MINUTELY;BYMONTH=1;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0"),
        ("secondly, first date in 2025", "20250101T100000Z", "FREQ=SECONDLY;BYMONTHDAY=6;BYHOUR=10;BYMINUTE=0;BYSECOND=0"),
    ] {
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:{dtstart}\r\nDURATION:PT2H\r\n\
             RRULE:{rule}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
        );
        match tacit_calendar::Calendar::parse(&ics, jan(6, 0), jan(11, 0), chrono_tz::UTC) {
            Err(_) => {} // secure: refused
            Ok(cal) => assert!(
                cal.busy().iter().any(|i| i.start == jan(6, 10) && i.end == jan(6, 12)),
                "{name}: RRULE:{rule} blocks 2025-01-06 10:00-12:00, but the calendar shows busy {:?}",
                cal.busy()
            ),
        }
    }
}

/// Finding 5b. docs/pros.md: "Files over 16 MiB, unknown time zones and malformed
/// values are one-line errors, and so are hostile ones". The `icalendar` parser
/// recurses once per nested `BEGIN:` component: 20 000 nested components (320 KB)
/// overflow the main thread's stack and abort the process (`tacit schedule serve
/// --calendar nest.ics …`: "thread 'main' has overflowed its stack", exit 134). Run in
/// a child process, since the overflow aborts the whole test binary.
#[test]
fn deeply_nested_components_are_a_one_line_error() {
    if std::env::var("REVIEW_NESTED_CHILD").is_ok() {
        let n = 20_000;
        let ics = format!(
            "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n{}{}END:VCALENDAR\r\n",
            "BEGIN:X\r\n".repeat(n),
            "END:X\r\n".repeat(n)
        );
        // the main thread's 8 MiB, as in `tacit`
        let h = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || tacit_calendar::Calendar::parse(&ics, jan(6, 0), jan(11, 0), chrono_tz::UTC).map(|_| ()))
            .unwrap();
        let r = h.join().unwrap();
        eprintln!("child: {r:?}");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "deeply_nested_components_are_a_one_line_error", "--nocapture"])
        .env("REVIEW_NESTED_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "parsing 20 000 nested components killed the process ({}): {}",
        out.status,
        err.lines().filter(|l| !l.trim().is_empty()).take(3).collect::<Vec<_>>().join(" | ")
    );
}

/// Finding 5c. Issue 26, item 6 closed "a 4 MiB LOCATION on a MINUTELY rule was cloned
/// per occurrence" by sharing the event's texts, but `Calendar::parse` still clones
/// (and hashes) the event's `UID` once per `RDATE` to look it up among the
/// `RECURRENCE-ID` overrides (`overridden.contains(&(r.uid.clone(), *t))`), over *all*
/// of the event's RDATEs, not only those in the window and outside the expansion
/// budget. A 2.7 MB file (1 MiB UID, 100 000 RDATEs, one override elsewhere) takes
/// about 20 s; an 8.3 MB one (4 MiB UID, 240 000 RDATEs) kept `tacit schedule serve` busy 206 s before
/// it listened; a 16 MiB one about 13 minutes (extrapolated).
#[test]
fn a_long_uid_with_many_rdates_is_parsed_quickly() {
    let uid = "U".repeat(1 << 20);
    let dates = vec!["20200101T100000Z"; 100_000].join(",");
    let ics = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:{uid}\r\nDTSTART:20200101T090000Z\r\nDURATION:PT1H\r\n\
         RDATE:{dates}\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:o\r\nRECURRENCE-ID:20200101T090000Z\r\n\
         DTSTART:20200101T090000Z\r\nDURATION:PT1H\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    );
    let t = std::time::Instant::now();
    let _ = tacit_calendar::Calendar::parse(&ics, jan(6, 0), jan(11, 0), chrono_tz::UTC);
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "a {} KB calendar took {took:.1?} to parse",
        ics.len() / 1024
    );
}
