//! End-to-end tests of 3PR: every scheme and variant against the plain computation,
//! what each party learns (one test per statement in docs/pros.md), and deviating
//! peers.

use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::{Arc, OnceLock};
use tacit_pros::element::ElementEncoding;
use tacit_pros::element::match_tag;
use tacit_pros::paillier::{Ciphertext, PrivateKey, RnPool};
use tacit_pros::threepr::{
    Answer, Initiator, InitiatorStep, MATCH_DOMAIN, Outcome, Query, ReconcileParams, Reconciled, Responder,
    ResponderStep, SESSION_DOMAIN, Scheme, Variant, reconcile_in_clear,
};
use tacit_pros::{Error, NO_CHANNEL_BINDING};

fn key() -> PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    K.get_or_init(|| PrivateKey::generate(1024).unwrap()).clone()
}

fn rng(s: u64) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(s)
}

const ALL: [(Scheme, Variant); 6] = [
    (Scheme::Sor, Variant::Implicit),
    (Scheme::Sor, Variant::Explicit),
    (Scheme::Sor, Variant::ExplicitCached),
    (Scheme::Mor, Variant::Implicit),
    (Scheme::Mor, Variant::Explicit),
    (Scheme::Mor, Variant::ExplicitCached),
];

fn params(scheme: Scheme, variant: Variant) -> ReconcileParams {
    ReconcileParams {
        scheme,
        variant,
        encoding: ElementEncoding::Hash127,
    }
}

/// Runs both parties in process; returns both results and the transcript (direction,
/// length, bytes) of every message.
fn run(p: ReconcileParams, a: &[String], b: &[String], seed: u64) -> (Reconciled, Reconciled, Vec<(char, Vec<u8>)>) {
    let mut r = rng(seed);
    let mut t = Vec::new();
    let pool = Arc::new(RnPool::new(key().public()).unwrap());
    let (ia, hello) = Initiator::start(p, key(), a, pool).unwrap();
    t.push(('A', hello.clone()));
    let (mut rb, acc) = Responder::new(p, b, 1024, 4096, tacit_pros::testing::ring_pedersen())
        .unwrap()
        .on_hello(&hello, &NO_CHANNEL_BINDING, &mut r)
        .unwrap();
    t.push(('B', acc.clone()));
    let (mut ia, fac, mut msg) = ia.on_accept(&acc, &NO_CHANNEL_BINDING, &mut r).unwrap();
    t.push(('A', fac.clone()));
    rb = rb.on_factor_proof(&fac).unwrap();
    loop {
        t.push(('A', msg.clone()));
        match rb.on_message(&msg, &mut r).unwrap() {
            ResponderStep::Answer(nb, ans) => {
                rb = nb;
                t.push(('B', ans.clone()));
                match ia.on_answer(&ans, &mut r).unwrap() {
                    InitiatorStep::Continue(na, q) => {
                        ia = na;
                        msg = q;
                    }
                    InitiatorStep::Done(res, out) => {
                        t.push(('A', out.clone()));
                        let ResponderStep::Done(res_b) = rb.on_message(&out, &mut r).unwrap() else {
                            panic!("B did not finish")
                        };
                        return (res, res_b, t);
                    }
                }
            }
            ResponderStep::Done(_) => panic!("B finished early"),
        }
    }
}

/// The session identifier of an in-process run (no channel binding), from B's accept
/// (the transcript's second message: envelope, n, nonce).
fn session_id(t: &[(char, Vec<u8>)]) -> [u8; 32] {
    let acc = &t[1].1;
    let nonce: [u8; 32] = acc[7..39].try_into().unwrap();
    tacit_pros::element::session_id(SESSION_DOMAIN, &NO_CHANNEL_BINDING, &nonce)
}

fn set(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[test]
fn every_scheme_and_variant_finds_the_maximisers() {
    // common: x (A pos 1, B pos 3), y (A pos 3, B pos 0), z (A pos 4, B pos 4)
    let a = vec!["a0", "x", "a2", "y", "z"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let b = vec!["y", "b1", "b2", "x", "z"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    for (s, v) in ALL {
        let (ra, rb, _) = run(params(s, v), &a, &b, 1);
        let (want, rounds) = reconcile_in_clear(s, &a, &b);
        assert_eq!(ra.elements, want, "{s} {v}");
        assert_eq!(rb.elements, want, "{s} {v}");
        assert_eq!((ra.rounds, rb.rounds), (rounds, rounds), "{s} {v}");
    }
    // SOR: x = 1+3 = 4, y = 3+0 = 3 → y alone; MOR: max(1,3)=3, max(3,0)=3 → x and y
    assert_eq!(reconcile_in_clear(Scheme::Sor, &a, &b).0, vec![b"y".to_vec()]);
    assert_eq!(
        reconcile_in_clear(Scheme::Mor, &a, &b).0,
        vec![b"x".to_vec(), b"y".to_vec()]
    );
}

#[test]
fn no_common_element_runs_every_round_and_says_so() {
    for (s, v) in ALL {
        let (ra, rb, _) = run(params(s, v), &set("a", 4), &set("b", 4), 2);
        assert!(ra.elements.is_empty() && rb.elements.is_empty());
        assert_eq!(ra.rounds, s.rounds(4));
        assert_eq!(ra.comparisons, 16, "worst case: n² comparisons");
    }
}

#[test]
fn cached_variant_sends_each_polynomial_once() {
    let (a, b) = (set("a", 6), set("b", 6));
    let (imp, _, _) = run(params(Scheme::Sor, Variant::Implicit), &a, &b, 3);
    let (exp, _, _) = run(params(Scheme::Sor, Variant::Explicit), &a, &b, 3);
    let (cac, _, _) = run(params(Scheme::Sor, Variant::ExplicitCached), &a, &b, 3);
    assert_eq!(imp.ciphertexts_sent, 36);
    assert_eq!(exp.ciphertexts_sent, 36);
    assert_eq!(cac.ciphertexts_sent, 6);
    let (mimp, _, _) = run(params(Scheme::Mor, Variant::Implicit), &a, &b, 3);
    let (mexp, _, _) = run(params(Scheme::Mor, Variant::Explicit), &a, &b, 3);
    assert_eq!(mexp.ciphertexts_sent, 36);
    assert!(mimp.ciphertexts_sent < 36);
}

/// docs: "the size and number of messages depend only on n, the scheme, the variant and
/// the round in which the protocol stops" — two different pairs of sets that stop in
/// the same round produce transcripts of the same shape.
#[test]
fn transcript_shape_depends_only_on_n_and_the_stopping_round() {
    for (s, v) in ALL {
        let a1 = vec!["p", "q", "common", "r"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        let b1 = vec!["s", "t", "common", "u"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        let a2 = vec!["1", "2", "3", "zz"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        let b2 = vec!["7", "8", "zz", "9"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        let (r1, _, t1) = run(params(s, v), &a1, &b1, 4);
        let (r2, _, t2) = run(params(s, v), &a2, &b2, 5);
        if r1.rounds != r2.rounds {
            continue; // MOR puts (2,2) and (3,2) in the same round; SOR does not
        }
        let shape = |t: &[(char, Vec<u8>)]| t.iter().map(|(d, m)| (*d, m.len())).collect::<Vec<_>>();
        assert_eq!(shape(&t1), shape(&t2), "{s} {v}");
    }
}

/// docs: "the shorter set is padded with dummies; the peer sees only n = max(n_A, n_B)".
#[test]
fn padding_hides_the_shorter_set() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let (_, _, t1) = run(p, &set("a", 2), &set("b", 5), 6);
    let (_, _, t2) = run(p, &set("a", 5), &set("b", 5), 7);
    // after the hello (which states n_A) every message has the same size
    let sizes = |t: &[(char, Vec<u8>)]| t[1..].iter().map(|(_, m)| m.len()).collect::<Vec<_>>();
    assert_eq!(sizes(&t1), sizes(&t2));
}

/// docs: "a comparison that does not match decrypts to a uniformly random residue:
/// A learns nothing about B's element" — no non-matching value is an element value,
/// and none equals one of B's elements.
#[test]
fn non_matching_answers_reveal_nothing_to_a() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let (a, b) = (set("a", 4), set("b", 4));
    let (_, _, t) = run(p, &a, &b, 8);
    let sk = key();
    let enc = ElementEncoding::Hash127;
    let b_values: Vec<_> = b.iter().map(|e| enc.value(e.as_bytes()).unwrap()).collect();
    let mut seen = 0;
    for (i, (d, m)) in t.iter().enumerate().skip(3) {
        if *d != 'B' {
            continue;
        }
        let expected = Scheme::Sor.round_pairs(4, (i as u32 - 4) / 2).len();
        let ans = Answer::from_bytes(m, sk.public(), expected).unwrap();
        for c in &ans.values {
            let v = sk.decrypt_raw(c).unwrap();
            assert!(!enc.is_element_value(&v));
            assert!(!b_values.contains(&v));
            seen += 1;
        }
    }
    assert_eq!(seen, 16);
}

/// docs: B answers in pair order, shuffled within each run of pairs that share A's
/// position (so that each answer is one guess against one position of A), and the
/// order inside a run says nothing about which of B's positions matched. In SOR a
/// run is one pair (A knows `j = t − i` anyway); in MOR round `t` compares `a_t` with
/// `b_0 … b_t`, a run of `t + 1`: the match `(2, 1)` must not sit at a fixed index.
#[test]
fn answers_are_shuffled_within_a_position() {
    let p = params(Scheme::Mor, Variant::Implicit);
    let a = vec!["a0", "a1", "m", "a3"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let b = vec!["b0", "m", "b2", "b3"]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let sk = key();
    let m = ElementEncoding::Hash127.value(b"m").unwrap();
    let mut positions = std::collections::HashSet::new();
    for seed in 0..12 {
        let (ra, _, t) = run(p, &a, &b, 100 + seed);
        assert_eq!(ra.elements, vec![b"m".to_vec()]);
        // the match decrypts to the tag of the pair (2, 1) under this session's id
        let sid = session_id(&t);
        let tag = match_tag(MATCH_DOMAIN, &sid, 2, 1, &m, sk.public().n()).unwrap();
        let last_answer = &t.iter().rev().find(|(d, _)| *d == 'B').unwrap().1;
        let ans = Answer::from_bytes(last_answer, sk.public(), 5).unwrap();
        let idx = ans
            .values
            .iter()
            .position(|c| sk.decrypt_raw(c).unwrap() == tag)
            .unwrap();
        // round 2's pairs: (2, 0), (2, 1), (2, 2) — the run of a_2 — then (0, 2), (1, 2)
        assert!(idx < 3, "the match left the run of its A position (index {idx})");
        positions.insert(idx);
    }
    assert!(positions.len() > 1, "the matching answer was always at the same index");
}

/// docs: "B's answers are re-randomised: two runs on the same inputs give different
/// ciphertexts".
#[test]
fn answers_are_rerandomised() {
    let p = params(Scheme::Sor, Variant::ExplicitCached);
    let (_, _, t1) = run(p, &set("a", 3), &set("b", 3), 9);
    let (_, _, t2) = run(p, &set("a", 3), &set("b", 3), 10);
    assert_ne!(t1[3].1, t2[3].1);
}

// ------------------------------------------------------------------ deviating peers

fn started(
    p: ReconcileParams,
    a: &[String],
    b: &[String],
) -> (
    tacit_pros::threepr::InitiatorAwaitingAnswer,
    tacit_pros::threepr::ResponderAwaiting,
    Vec<u8>,
) {
    let mut r = rng(11);
    let pool = Arc::new(RnPool::new(key().public()).unwrap());
    let (ia, hello) = Initiator::start(p, key(), a, pool).unwrap();
    let (rb, acc) = Responder::new(p, b, 1024, 4096, tacit_pros::testing::ring_pedersen())
        .unwrap()
        .on_hello(&hello, &NO_CHANNEL_BINDING, &mut r)
        .unwrap();
    let (ia, fac, q) = ia.on_accept(&acc, &NO_CHANNEL_BINDING, &mut r).unwrap();
    let rb = rb.on_factor_proof(&fac).unwrap();
    (ia, rb, q)
}

#[test]
fn b_refuses_queries_for_the_wrong_round_or_positions() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let (a, b) = (set("a", 3), set("b", 3));
    let (_, rb, q) = started(p, &a, &b);
    let pk = key().public().clone();
    let mut dq = Query::from_bytes(&q, &pk, 16).unwrap();
    dq.round = 1;
    assert!(matches!(
        rb.on_message(&dq.to_bytes(&pk), &mut rng(1)),
        Err(Error::Deviation(_))
    ));
    let (_, rb, q) = started(p, &a, &b);
    let mut dq = Query::from_bytes(&q, &pk, 16).unwrap();
    dq.entries[0].0 = 2;
    assert!(matches!(
        rb.on_message(&dq.to_bytes(&pk), &mut rng(1)),
        Err(Error::Deviation(_))
    ));
    // a ciphertext outside Z*_{n²}
    let (_, rb, q) = started(p, &a, &b);
    let mut dq = Query::from_bytes(&q, &pk, 16).unwrap();
    let mut bytes = dq.to_bytes(&pk);
    let len = bytes.len();
    bytes[len - pk.ciphertext_len()..].fill(0xff);
    assert!(matches!(
        rb.on_message(&bytes, &mut rng(1)),
        Err(Error::BadCiphertext(_))
    ));
    dq.entries.clear();
    let (_, rb, _) = started(p, &a, &b);
    assert!(matches!(
        rb.on_message(&dq.to_bytes(&pk), &mut rng(1)),
        Err(Error::Deviation(_))
    ));
}

#[test]
fn cached_b_refuses_a_resent_polynomial() {
    let p = params(Scheme::Sor, Variant::ExplicitCached);
    let (a, b) = (set("a", 3), set("b", 3));
    let (ia, rb, q) = started(p, &a, &b);
    let pk = key().public().clone();
    let ResponderStep::Answer(rb, ans) = rb.on_message(&q, &mut rng(2)).unwrap() else {
        panic!()
    };
    let InitiatorStep::Continue(_, q2) = ia.on_answer(&ans, &mut rng(2)).unwrap() else {
        panic!()
    };
    let mut dq = Query::from_bytes(&q2, &pk, 16).unwrap();
    let first = Query::from_bytes(&q, &pk, 16).unwrap();
    dq.entries.insert(0, first.entries[0].clone()); // position 0 again
    assert!(matches!(
        rb.on_message(&dq.to_bytes(&pk), &mut rng(2)),
        Err(Error::Deviation(_))
    ));
}

#[test]
fn b_refuses_a_false_or_premature_outcome() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let (a, b) = (set("a", 3), set("b", 3));
    let (_, rb, q) = started(p, &a, &b);
    let ResponderStep::Answer(rb, _) = rb.on_message(&q, &mut rng(3)).unwrap() else {
        panic!()
    };
    // "no match" after round 0 of 5
    let o = Outcome {
        round: 0,
        values: vec![],
    };
    assert!(matches!(
        rb.on_message(&o.to_bytes(), &mut rng(3)),
        Err(Error::Deviation(_))
    ));
    // an element B does not hold at that round
    let (_, rb, q) = started(p, &a, &b);
    let ResponderStep::Answer(rb, _) = rb.on_message(&q, &mut rng(3)).unwrap() else {
        panic!()
    };
    let v = ElementEncoding::Hash127.value(b"b2").unwrap();
    let mut vb = [0u8; 16];
    vb.copy_from_slice(&v.to_vec_padded(16).unwrap());
    let o = Outcome {
        round: 0,
        values: vec![vb],
    };
    assert!(matches!(
        rb.on_message(&o.to_bytes(), &mut rng(3)),
        Err(Error::Deviation(_))
    ));
    // an outcome before any round
    let (_, rb, _) = started(p, &a, &b);
    assert!(matches!(
        rb.on_message(&o.to_bytes(), &mut rng(3)),
        Err(Error::Deviation(_))
    ));
}

#[test]
fn a_refuses_bad_answers_and_accepts() {
    let p = params(Scheme::Mor, Variant::Implicit);
    let (a, b) = (set("a", 3), set("b", 3));
    let pk = key().public().clone();
    // one evaluation too many
    let (ia, _, _) = started(p, &a, &b);
    let bogus = Answer {
        round: 0,
        values: vec![Ciphertext::clone(&pk.encrypt_i64(1, &mut rng(4)).unwrap()); 2],
    };
    assert!(matches!(
        ia.on_answer(&bogus.to_bytes(&pk), &mut rng(4)),
        Err(Error::Wire(_))
    ));
    // an answer for another round
    let (ia, _, _) = started(p, &a, &b);
    let bogus = Answer {
        round: 1,
        values: vec![pk.encrypt_i64(1, &mut rng(4)).unwrap()],
    };
    assert!(matches!(
        ia.on_answer(&bogus.to_bytes(&pk), &mut rng(4)),
        Err(Error::Deviation(_))
    ));
    // an accept that shrinks A's set
    let pool = Arc::new(RnPool::new(&pk).unwrap());
    let (ia, hello) = Initiator::start(p, key(), &set("a", 5), pool).unwrap();
    let (_, acc) = Responder::new(p, &set("b", 2), 1024, 4096, tacit_pros::testing::ring_pedersen())
        .unwrap()
        .on_hello(&hello, &NO_CHANNEL_BINDING, &mut rng(4))
        .unwrap();
    let mut shrunk = acc.clone();
    shrunk[6] = 2; // n, after the 3-byte envelope
    assert_eq!(&shrunk[3..7], &[0, 0, 0, 2]);
    assert!(matches!(
        ia.on_accept(&shrunk, &NO_CHANNEL_BINDING, &mut rng(4)),
        Err(Error::Deviation(_))
    ));
}

#[test]
fn b_refuses_mismatched_parameters_and_small_keys() {
    let pool = Arc::new(RnPool::new(key().public()).unwrap());
    let (_, hello) = Initiator::start(params(Scheme::Sor, Variant::Implicit), key(), &set("a", 2), pool).unwrap();
    let other = Responder::new(
        params(Scheme::Mor, Variant::Implicit),
        &set("b", 2),
        1024,
        4096,
        tacit_pros::testing::ring_pedersen(),
    )
    .unwrap();
    assert!(matches!(
        other.on_hello(&hello, &NO_CHANNEL_BINDING, &mut rng(5)),
        Err(Error::Mismatch(_))
    ));
    let strict = Responder::new(
        params(Scheme::Sor, Variant::Implicit),
        &set("b", 2),
        2048,
        4096,
        tacit_pros::testing::ring_pedersen(),
    )
    .unwrap();
    assert!(matches!(
        strict.on_hello(&hello, &NO_CHANNEL_BINDING, &mut rng(5)),
        Err(Error::KeySize(_))
    ));
    let mut long = hello.clone();
    long.push(0);
    let ok = Responder::new(
        params(Scheme::Sor, Variant::Implicit),
        &set("b", 2),
        1024,
        4096,
        tacit_pros::testing::ring_pedersen(),
    )
    .unwrap();
    assert!(matches!(
        ok.on_hello(&long, &NO_CHANNEL_BINDING, &mut rng(5)),
        Err(Error::Wire(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn reconciliation_equals_the_plain_argmax(
        a in proptest::collection::vec(0u8..14, 1..7),
        b in proptest::collection::vec(0u8..14, 1..7),
        which in 0usize..6,
    ) {
        let a: Vec<String> = a.iter().map(|x| x.to_string()).collect();
        let b: Vec<String> = b.iter().map(|x| x.to_string()).collect();
        let (s, v) = ALL[which];
        let (ra, rb, _) = run(params(s, v), &a, &b, 12);
        let (want, rounds) = reconcile_in_clear(s, &a, &b);
        prop_assert_eq!(&ra.elements, &want);
        prop_assert_eq!(&rb.elements, &want);
        prop_assert_eq!(ra.rounds, rounds);
    }
}

/// A ciphertext in range but sharing a factor with n (not in Z*_{n²}) is refused by
/// the batched unit check.
#[test]
fn b_refuses_a_non_unit_ciphertext() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let (a, b) = (set("a", 3), set("b", 3));
    let (_, rb, q) = started(p, &a, &b);
    let sk = key();
    let pk = sk.public().clone();
    let (prime, _) = sk.primes();
    let mut bad = prime.to_owned().unwrap();
    bad.mul_word(5).unwrap();
    let bytes_bad = bad.to_vec_padded(pk.ciphertext_len() as i32).unwrap();
    let mut msg = q.clone();
    let l = msg.len();
    msg[l - pk.ciphertext_len()..].copy_from_slice(&bytes_bad);
    assert!(matches!(rb.on_message(&msg, &mut rng(1)), Err(Error::BadCiphertext(_))));
}
