//! Deviating peers against 3PR, PM and FNP (issue 26): each test plays one attack
//! with `tacit_pros::testing` and states what the honest party must and must not do.
//! Every claim about a deviating peer in `docs/pros.md` names its test here.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use std::sync::OnceLock;
use tacit_pros::bn::{self, Nat};
use tacit_pros::element::{ElementEncoding, match_tag, session_id};
use tacit_pros::fnp::{self, PsiParams, Sender};
use tacit_pros::paillier::{Ciphertext, PrivateKey, PublicKey, RnPool};
use tacit_pros::testing::{self, Act, InvertingResponder, Outgoing, Party};
use tacit_pros::threepr::{
    Answer, Hello, Limits, MATCH_DOMAIN, Outcome, Query, ReconcileParams, Responder, SESSION_DOMAIN, Scheme, Variant,
};
use tacit_pros::{Error, NO_CHANNEL_BINDING};

fn key() -> PrivateKey {
    static K: OnceLock<PrivateKey> = OnceLock::new();
    let k = K.get_or_init(|| {
        let k = PrivateKey::generate(1024).unwrap();
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

fn params(scheme: Scheme, variant: Variant) -> ReconcileParams {
    ReconcileParams {
        scheme,
        variant,
        encoding: ElementEncoding::Hash127,
    }
}

fn set(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn responder(p: ReconcileParams, b: &[String]) -> Responder {
    Responder::new(p, b, 1024, 4096, testing::ring_pedersen()).unwrap()
}

/// A's last message in a transcript, decoded as its outcome.
fn outcome_of(t: &[(Party, Vec<u8>)], max: usize) -> Outcome {
    let last = &t.iter().rev().find(|(p, _)| *p == Party::A).unwrap().1;
    Outcome::from_bytes(last, max).unwrap()
}

fn sid_of(t: &[(Party, Vec<u8>)]) -> [u8; 32] {
    let acc = &t.iter().find(|(p, _)| *p == Party::B).unwrap().1;
    session_id(SESSION_DOMAIN, &NO_CHANNEL_BINDING, &acc[7..39].try_into().unwrap())
}

/// Issue 26, item 1 (the break): B answers with `E(−a_i)⁻¹ = E(a_i)` from the round
/// in which every one of A's positions occurs (and, second run, from the start).
/// Before the fix A took every one of its elements for a match and sent them all to
/// B in its outcome. Now A finds nothing, outputs nothing and tells B nothing.
#[test]
fn an_inverting_b_learns_nothing_and_fixes_nothing() {
    let a = set("a", 6);
    let b = set("b", 6);
    for (s, v) in ALL {
        for from in [InvertingResponder::all_positions_round(6), 0] {
            let mut bug = InvertingResponder::new(s, v, from);
            let run = testing::reconcile(
                params(s, v),
                key(),
                &a,
                responder(params(s, v), &b),
                &mut |o| bug.act(o),
                1,
            );
            let ra = run.a.unwrap_or_else(|e| panic!("{s} {v}: {e}"));
            assert!(
                ra.elements.is_empty(),
                "{s} {v} from {from}: A agreed to {:?}",
                ra.elements
            );
            assert_eq!(ra.rounds, s.rounds(6), "{s} {v}: A stopped early");
            let out = outcome_of(&run.transcript, 12);
            assert!(
                out.values.is_empty(),
                "{s} {v}: the outcome told B {} values",
                out.values.len()
            );
        }
    }
}

/// Every value B can compute from A's ciphertexts without holding A's element: the
/// ciphertext itself, its inverse, the inverse times `g^k`, `E(0)`, `E(1)`, products of
/// two of A's ciphertexts. None makes A report a match.
#[test]
fn no_value_computed_from_as_ciphertexts_is_a_match() {
    let a = set("a", 4);
    let b = set("b", 4);
    let pk = key().public().clone();
    type Forge = fn(&PublicKey, &[Ciphertext], usize) -> Ciphertext;
    let forgeries: [(&str, Forge); 6] = [
        ("itself", |_, c, k| c[k % c.len()].clone()),
        ("inverse", |pk, c, k| inverse(pk, &c[k % c.len()])),
        ("inverse + 1", |pk, c, k| {
            pk.add_plain(&inverse(pk, &c[k % c.len()]), &bn::from_u64(1).unwrap())
                .unwrap()
        }),
        ("E(0)", |pk, _, _| {
            pk.encrypt_i64(0, &mut ChaCha20Rng::seed_from_u64(1)).unwrap()
        }),
        ("E(1)", |pk, _, _| {
            pk.encrypt_i64(1, &mut ChaCha20Rng::seed_from_u64(2)).unwrap()
        }),
        ("product", |pk, c, k| {
            pk.add(&c[k % c.len()], &c[(k + 1) % c.len()]).unwrap()
        }),
    ];
    for (s, v) in ALL {
        for (name, forge) in forgeries {
            let p = params(s, v);
            let mut cache: Vec<Ciphertext> = Vec::new();
            let mut n = 0u32;
            let mut bug = |o: &Outgoing<'_>| {
                if o.from != Party::B {
                    return Act::honest(o);
                }
                if o.index == 0 {
                    n = u32::from_be_bytes(o.honest[3..7].try_into().unwrap());
                    return Act::honest(o);
                }
                let q = Query::from_bytes(o.received.last().unwrap(), &pk, 64).unwrap();
                cache.extend(q.entries.iter().map(|(_, c)| c.clone()));
                let pairs = s.round_pairs(n, q.round).len();
                let values = (0..pairs).map(|k| forge(&pk, &cache, k)).collect();
                Act::Send(Answer { round: q.round, values }.to_bytes(&pk))
            };
            let run = testing::reconcile(p, key(), &a, responder(p, &b), &mut bug, 2);
            let ra = run.a.unwrap();
            assert!(ra.elements.is_empty(), "{s} {v} {name}: A agreed to {:?}", ra.elements);
            assert!(outcome_of(&run.transcript, 8).values.is_empty(), "{s} {v} {name}");
        }
    }
}

fn inverse(pk: &PublicKey, c: &Ciphertext) -> Ciphertext {
    pk.ciphertext(bn::inv_mod(c.value(), pk.n_squared()).unwrap()).unwrap()
}

/// What a deviating B can do: answer each pair with the match tag of a guess of its
/// choosing (it is not bound to one list). It learns a match only where its guess is
/// A's element at that position, and the run stops at the first round with a hit:
/// the output is then that guess, which B "held".
#[test]
fn a_guessing_b_learns_only_the_first_hit() {
    let a: Vec<String> = ["mon", "tue", "wed", "thu"].iter().map(|s| s.to_string()).collect();
    let b = set("b", 4);
    let p = params(Scheme::Sor, Variant::Implicit);
    let pk = key().public().clone();
    for (guess, hit) in [("wed", true), ("fri", false)] {
        let gv = ElementEncoding::Hash127.value(guess.as_bytes()).unwrap();
        let mut sid = [0u8; 32];
        let mut n = 0;
        let mut bug = |o: &Outgoing<'_>| {
            if o.from != Party::B {
                return Act::honest(o);
            }
            if o.index == 0 {
                n = u32::from_be_bytes(o.honest[3..7].try_into().unwrap());
                sid = session_id(
                    SESSION_DOMAIN,
                    &NO_CHANNEL_BINDING,
                    &o.honest[7..39].try_into().unwrap(),
                );
                return Act::honest(o);
            }
            let q = Query::from_bytes(o.received.last().unwrap(), &pk, 64).unwrap();
            let mut r = ChaCha20Rng::seed_from_u64(q.round as u64);
            let values = Scheme::Sor
                .round_pairs(n, q.round)
                .iter()
                .map(|&(i, j)| {
                    let h = match_tag(MATCH_DOMAIN, &sid, i, j, &gv, pk.n()).unwrap();
                    pk.encrypt_raw(&h, &mut r).unwrap()
                })
                .collect();
            Act::Send(Answer { round: q.round, values }.to_bytes(&pk))
        };
        let run = testing::reconcile(p, key(), &a, responder(p, &b), &mut bug, 3);
        let ra = run.a.unwrap();
        if hit {
            // wed is A's position 2: first compared in round 2
            assert_eq!(ra.elements, vec![b"wed".to_vec()]);
            assert_eq!(ra.rounds, 3);
        } else {
            assert!(ra.elements.is_empty());
            assert_eq!(ra.rounds, Scheme::Sor.rounds(4));
        }
    }
}

/// The outcome carries the output and nothing of A's other elements: with one
/// common element, exactly its value.
#[test]
fn the_outcome_carries_only_the_matched_elements() {
    let a: Vec<String> = ["x", "y", "common", "z"].iter().map(|s| s.to_string()).collect();
    let b: Vec<String> = ["p", "common", "q"].iter().map(|s| s.to_string()).collect();
    for (s, v) in ALL {
        let run = testing::reconcile(
            params(s, v),
            key(),
            &a,
            responder(params(s, v), &b),
            &mut Act::honest,
            4,
        );
        assert_eq!(run.a.as_ref().unwrap().elements, vec![b"common".to_vec()]);
        assert_eq!(run.b.as_ref().unwrap().elements, vec![b"common".to_vec()]);
        let out = outcome_of(&run.transcript, 8);
        let want = ElementEncoding::Hash127
            .value(b"common")
            .unwrap()
            .to_vec_padded(16)
            .unwrap();
        assert_eq!(out.values.len(), 1);
        assert_eq!(out.values[0].to_vec(), want, "{s} {v}");
    }
}

/// The limit of what a deviating A gets, stated in docs/pros.md: two candidates per
/// comparison, one modulo each prime factor of its (proven) modulus. A puts `g₁`
/// modulo p and `g₂` modulo q into one ciphertext and reads both answers.
#[test]
fn a_deviating_a_tests_two_candidates_per_comparison() {
    let sk = key();
    let (p, q) = sk.primes();
    let (p, q) = (p.to_owned().unwrap(), q.to_owned().unwrap());
    let pk = sk.public().clone();
    let enc = ElementEncoding::Hash127;
    let b: Vec<String> = ["secret-b0", "b1"].iter().map(|s| s.to_string()).collect();
    let g1 = enc.value(b"not-there").unwrap();
    let g2 = enc.value(b"secret-b0").unwrap();
    // x ≡ −g1 (mod p), x ≡ −g2 (mod q): the root of the "polynomial" x − r, r = CRT(g1, g2)
    let crt = |a: &Nat, b: &Nat| -> Nat {
        let qinv = bn::inv_mod(&q, &p).unwrap();
        let d = bn::sub_mod(&bn::reduce(a, &p).unwrap(), &bn::reduce(b, &p).unwrap(), &p).unwrap();
        bn::add(
            &bn::reduce(b, &q).unwrap(),
            &bn::mul(&bn::mul_mod(&d, &qinv, &p).unwrap(), &q).unwrap(),
        )
        .unwrap()
    };
    let r = crt(&g1, &g2);
    let neg_r = bn::sub_mod(&bn::from_u64(0).unwrap(), &r, pk.n()).unwrap();
    let p3 = params(Scheme::Sor, Variant::Implicit);
    let mut bug = |o: &Outgoing<'_>| {
        if o.from == Party::A && o.index == 2 {
            // round 0 (after the hello and the factor proof): one entry for position 0
            let c = pk.encrypt_raw(&neg_r, &mut ChaCha20Rng::seed_from_u64(9)).unwrap();
            return Act::Send(
                Query {
                    round: 0,
                    entries: vec![(0, c)],
                }
                .to_bytes(&pk),
            );
        }
        Act::honest(o)
    };
    let run = testing::reconcile(p3, sk.clone(), &set("a", 2), responder(p3, &b), &mut bug, 5);
    let t = &run.transcript;
    let sid = sid_of(t);
    let first_answer = &t.iter().filter(|(w, _)| *w == Party::B).nth(1).unwrap().1;
    let ans = Answer::from_bytes(first_answer, &pk, 1).unwrap();
    let v = sk.decrypt_raw(&ans.values[0]).unwrap();
    let tag = |g: &Nat| match_tag(MATCH_DOMAIN, &sid, 0, 0, g, pk.n()).unwrap();
    // modulo q the answer is g2's tag: A learns that B holds "secret-b0" at position 0
    assert_eq!(bn::reduce(&v, &q).unwrap(), bn::reduce(&tag(&g2), &q).unwrap());
    // modulo p it is not g1's (B does not hold it)
    assert_ne!(bn::reduce(&v, &p).unwrap(), bn::reduce(&tag(&g1), &p).unwrap());
}

/// Issue 26, item 3: B verifies A's modulus proof before it computes anything; a
/// hello whose proof belongs to another key is refused at once.
#[test]
fn b_refuses_a_key_without_a_valid_proof() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let other = PrivateKey::generate(1024).unwrap();
    let mut bug = |o: &Outgoing<'_>| {
        if o.from == Party::A && o.index == 0 {
            let mut h = Hello::from_bytes(o.honest).unwrap();
            h.proof = other.modulus_proof().unwrap();
            return Act::Send(h.to_bytes());
        }
        Act::honest(o)
    };
    let run = testing::reconcile(p, key(), &set("a", 3), responder(p, &set("b", 3)), &mut bug, 6);
    assert!(
        matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("modulus proof")),
        "{:?}",
        run.b
    );
    assert!(matches!(run.a, Err(Error::PeerRefused(_))));
    // B sent nothing but the refusal: no accept, no answer
    assert_eq!(run.transcript.iter().filter(|(w, _)| *w == Party::B).count(), 1);
}

/// Issue 26, item 5: B's limits refuse a long peer list and a session over its
/// budget at the hello, before any work.
#[test]
fn b_refuses_a_list_or_a_session_over_its_limits() {
    let p = params(Scheme::Sor, Variant::Implicit);
    let strict = responder(p, &set("b", 3)).with_limits(Limits {
        max_peer_set: 4,
        max_comparisons: 1 << 20,
    });
    let run = testing::reconcile(p, key(), &set("a", 5), strict, &mut Act::honest, 7);
    assert!(
        matches!(run.b, Err(Error::SetTooLarge { len: 5, max: 4, .. })),
        "{:?}",
        run.b
    );
    let budget = responder(p, &set("b", 3)).with_limits(Limits {
        max_peer_set: 100,
        max_comparisons: 24,
    });
    let run = testing::reconcile(p, key(), &set("a", 5), budget, &mut Act::honest, 8);
    assert!(
        matches!(run.b, Err(Error::Invalid(ref m)) if m.contains("25 comparisons")),
        "{:?}",
        run.b
    );
    assert!(matches!(run.a, Err(Error::PeerRefused(_))));
}

// ---------------------------------------------------------------- FNP and PM

fn psi_params(m: u32, n: u32, bucketing: bool) -> PsiParams {
    let mut p = PsiParams::new(m, n);
    p.bucketing = bucketing;
    p
}

/// Issue 26, item 1, "same cause in FNP and PM": with one root per polynomial the
/// sender holds `E(−c)` and answered `E(c)`, a false positive. Now nothing matches;
/// with bins, inverting a bin's constant coefficient does not help either.
#[test]
fn an_inverting_fnp_sender_forges_no_match() {
    for (m, bucketing) in [(1, false), (3, false), (40, true)] {
        let p = psi_params(m, 8, bucketing);
        let sender = Sender::new(&p, &set("s", 8), 1024, 4096, testing::ring_pedersen()).unwrap();
        let c = set("c", m as usize);
        let mut bug = |o: &Outgoing<'_>| {
            if o.from != Party::B || o.index == 0 {
                return Act::honest(o);
            }
            let q = fnp::Query::from_bytes(&o.received[0], &p, 0, 4096, testing::ring_pedersen().public()).unwrap();
            let honest = fnp::Answer::from_bytes(o.honest, &p, &q.key).unwrap();
            let load = p.load() as usize;
            let values = (0..p.answers())
                .map(|k| inverse(&q.key, &q.coeffs[(k % p.bins() as usize) * load]))
                .collect();
            Act::Send(
                fnp::Answer {
                    nonce: honest.nonce,
                    values,
                }
                .to_bytes(&q.key),
            )
        };
        let run = testing::psi(&p, key(), &c, &sender, &mut bug, 10);
        assert_eq!(run.a.unwrap(), Vec::<Vec<u8>>::new(), "m = {m}");
    }
}

#[test]
fn an_inverting_pm_sender_forges_no_match() {
    let sk = key();
    let pk = sk.public();
    let pool = RnPool::new(pk).unwrap();
    let a = bn::from_u64(77).unwrap();
    let q = fnp::pm::query(pk, &a, &pool, &mut ChaCha20Rng::seed_from_u64(1)).unwrap();
    let forged = inverse(pk, &q);
    assert_eq!(sk.decrypt_raw(&forged).unwrap(), a, "the forgery decrypts to a itself");
    assert!(!fnp::pm::matched(&sk, &forged, &a, &[1; 32]).unwrap());
}

/// A sender that answers for more elements than its bound (guesses in both bins of
/// each element) is caught: the chooser's output is always an intersection with some
/// set of at most n elements.
#[test]
fn a_sender_matching_more_than_its_bound_is_refused() {
    let p = psi_params(20, 3, true);
    let sender = Sender::new(&p, &set("s", 3), 1024, 4096, testing::ring_pedersen()).unwrap();
    let c = set("c", 20);
    let enc = ElementEncoding::Hash127;
    let mut bug = |o: &Outgoing<'_>| {
        if o.from != Party::B || o.index == 0 {
            return Act::honest(o);
        }
        let q = fnp::Query::from_bytes(&o.received[0], &p, 0, 4096, testing::ring_pedersen().public()).unwrap();
        let nonce = [5u8; 32];
        let sid = session_id(fnp::SESSION_DOMAIN, &NO_CHANNEL_BINDING, &nonce);
        let mut r = ChaCha20Rng::seed_from_u64(3);
        // the sender "guesses" the chooser's whole set (so it can also redo the
        // chooser's allocation) and answers 2n = 6 of its elements, one per answer
        let values_c: Vec<Nat> = c.iter().map(|e| enc.value(e.as_bytes()).unwrap()).collect();
        let alloc = fnp::allocate(&q.seed, &values_c, p.bins(), p.load()).unwrap().unwrap();
        let values: Vec<Ciphertext> = alloc
            .iter()
            .enumerate()
            .flat_map(|(k, members)| members.iter().map(move |&i| (k as u32, i)))
            .take(p.answers())
            .map(|(k, i)| {
                let h = match_tag(fnp::MATCH_DOMAIN, &sid, k, 0, &values_c[i], q.key.n()).unwrap();
                q.key.encrypt_raw(&h, &mut r).unwrap()
            })
            .collect();
        Act::Send(fnp::Answer { nonce, values }.to_bytes(&q.key))
    };
    let run = testing::psi(&p, key(), &c, &sender, &mut bug, 11);
    assert!(
        matches!(run.a, Err(Error::Deviation(ref m)) if m.contains("more than its bound")),
        "{:?}",
        run.a
    );
}

/// Issue 26, item 2: the real bound of a deviating chooser is two candidates per
/// root slot (`PsiParams::chooser_tests`), one modulo each prime factor. With one
/// slot it tests two of the sender's elements; the sender's parameters state it.
#[test]
fn a_deviating_chooser_tests_at_most_two_per_root_slot() {
    let p = psi_params(1, 4, false);
    assert_eq!(p.root_slots(), 1);
    assert_eq!(p.chooser_tests(), 2);
    // the m = 100: 66 bins of 7 roots, 462 slots, 924 candidates
    assert_eq!(psi_params(100, 1000, true).root_slots(), 462);
    assert_eq!(psi_params(100, 1000, true).chooser_tests(), 924);
    let sk = key();
    let (pp, qq) = sk.primes();
    let (pp, qq) = (pp.to_owned().unwrap(), qq.to_owned().unwrap());
    let pk = sk.public().clone();
    let enc = ElementEncoding::Hash127;
    let sender = Sender::new(&p, &["alice", "bob", "carol"], 1024, 4096, testing::ring_pedersen()).unwrap();
    let g1 = enc.value(b"alice").unwrap();
    let g2 = enc.value(b"carol").unwrap();
    let qinv = bn::inv_mod(&qq, &pp).unwrap();
    let d = bn::sub_mod(&bn::reduce(&g1, &pp).unwrap(), &bn::reduce(&g2, &pp).unwrap(), &pp).unwrap();
    let r = bn::add(
        &bn::reduce(&g2, &qq).unwrap(),
        &bn::mul(&bn::mul_mod(&d, &qinv, &pp).unwrap(), &qq).unwrap(),
    )
    .unwrap();
    let neg_r = bn::sub_mod(&bn::from_u64(0).unwrap(), &r, pk.n()).unwrap();
    let mut bug = |o: &Outgoing<'_>| {
        if o.from == Party::A {
            let mut q = fnp::Query::from_bytes(o.honest, &p, 0, 4096, testing::ring_pedersen().public()).unwrap();
            q.coeffs = vec![pk.encrypt_raw(&neg_r, &mut ChaCha20Rng::seed_from_u64(4)).unwrap()];
            return Act::Send(q.to_bytes());
        }
        Act::honest(o)
    };
    let run = testing::psi(&p, sk.clone(), &["zzz"], &sender, &mut bug, 12);
    let ans_bytes = &run.transcript[2].1;
    let ans = fnp::Answer::from_bytes(ans_bytes, &p, &pk).unwrap();
    let sid = session_id(fnp::SESSION_DOMAIN, &NO_CHANNEL_BINDING, &ans.nonce);
    let tag = |g: &Nat| match_tag(fnp::MATCH_DOMAIN, &sid, 0, 0, g, pk.n()).unwrap();
    let plain: Vec<Nat> = ans.values.iter().map(|c| sk.decrypt_raw(c).unwrap()).collect();
    let hit = |g: &Nat, m: &Nat| {
        plain
            .iter()
            .any(|v| bn::reduce(v, m).unwrap() == bn::reduce(&tag(g), m).unwrap())
    };
    assert!(hit(&g1, &pp), "alice found modulo p");
    assert!(hit(&g2, &qq), "carol found modulo q");
    let bob = enc.value(b"bob").unwrap();
    assert!(!hit(&bob, &pp) && !hit(&bob, &qq), "a third candidate is not tested");
}

/// Issue 26, item 3, for FNP: the sender verifies the chooser's modulus proof
/// before it evaluates anything.
#[test]
fn an_fnp_sender_refuses_a_key_without_a_valid_proof() {
    let p = psi_params(4, 4, false);
    let sender = Sender::new(&p, &set("s", 4), 1024, 4096, testing::ring_pedersen()).unwrap();
    let other = PrivateKey::generate(1024).unwrap();
    let mut bug = |o: &Outgoing<'_>| {
        if o.from == Party::A {
            let mut q = fnp::Query::from_bytes(o.honest, &p, 0, 4096, testing::ring_pedersen().public()).unwrap();
            q.proof = other.modulus_proof().unwrap();
            return Act::Send(q.to_bytes());
        }
        Act::honest(o)
    };
    let run = testing::psi(&p, key(), &set("c", 2), &sender, &mut bug, 13);
    assert!(matches!(run.b, Err(Error::BadKey(_))), "{:?}", run.b);
    assert!(matches!(run.a, Err(Error::PeerRefused(_))));
}

// ---------------------------------------------------------------- review of issue 26

/// Attacks of the review of the issue-26 fixes: a B that spends its answers on one
/// position of A, a key with a small prime factor, and (ignored, by hand) a hostile
/// `tacit schedule serve`. Each test failed on the code before its fix.
mod review {
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};
    use sha2::{Digest, Sha256};
    use std::sync::{Arc, OnceLock};
    use tacit_pros::bn::{self, Nat};
    use tacit_pros::element::{ElementEncoding, match_tag, session_id};
    use tacit_pros::facproof::{self, FacProof};
    use tacit_pros::fnp::{self, PsiParams, Sender};
    use tacit_pros::modproof::ModulusProof;
    use tacit_pros::paillier::{Ciphertext, PrivateKey, PublicKey, RnPool};
    use tacit_pros::testing::{self, Act, Outgoing, Party};
    use tacit_pros::threepr::{
        Answer, Hello, Initiator, InitiatorStep, MATCH_DOMAIN, Query, ReconcileParams, Reconciled, Responder,
        ResponderStep, SESSION_DOMAIN, Scheme, TAG_ACCEPT, Variant,
    };
    use tacit_pros::{Error, NO_CHANNEL_BINDING, Result};
    use tacit_wire::{Reader, Writer};

    fn key() -> PrivateKey {
        static K: OnceLock<PrivateKey> = OnceLock::new();
        let k = K.get_or_init(|| {
            let k = PrivateKey::generate(1024).unwrap();
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
        testing::ring_pedersen().encode_offer(&mut w);
        w.into_bytes()
    }

    /// What a hostile B sees of a round: its pairs, A's ciphertext for each position
    /// (cached across rounds), A's key, the session id.
    struct RoundView<'a> {
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
        let (mut a, _factor_proof, mut q) = a.on_accept(&accept_bytes(n, &nonce), &NO_CHANNEL_BINDING, &mut rng)?;
        let mut by_pos = std::collections::HashMap::new();
        loop {
            let pairs_max = tacit_pros::threepr::max_round_pairs(p.scheme, n);
            let query = Query::from_bytes(&q, &pk, pairs_max)?;
            for (i, c) in &query.entries {
                by_pos.insert(*i, c.clone());
            }
            let view = RoundView {
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
    fn guess_answer(
        v: &RoundView<'_>,
        i: u32,
        j: u32,
        guess: &Nat,
        pool: &RnPool,
        rng: &mut ChaCha20Rng,
    ) -> Ciphertext {
        let h = match_tag(MATCH_DOMAIN, &v.sid, i, j, guess, v.pk.n()).unwrap();
        let c = v.by_pos.get(&i).expect("A's ciphertext for the position").clone();
        fnp::evaluate(v.pk, std::slice::from_ref(&c), guess, &h, pool, rng).unwrap()
    }

    /// Review of issue 26, finding 1. docs/pros.md, "Against a deviating B": "one round of hits per session,
    /// **at most `n` guesses per A position** — a list of B's choosing per position".
    ///
    /// A checks every decrypted value of a round against the tags of *all* pairs of the
    /// round (`on_answer` builds one map of tags), so B can spend every answer value of
    /// every round on one position of A — A's favourite, `a_0`, which takes part in every
    /// round of MOR and in rounds `0 … n−1` of SOR. That is `n(n+1)/2` (SOR) or `n²` (MOR)
    /// guesses against `a_0`, not `n`. Here `n = 6` and A's favourite is B's 17th guess;
    /// B found it, in every scheme and variant, and A agreed to it (fails on the code
    /// before the fix). Now A compares the answers of the run of pairs `(i, ·)` only with
    /// its own tags for those pairs (`threepr::position_runs`), so of B's sequential
    /// guesses only those at `a_0`'s pairs count — #1, 2, 4, 7, 11, 16 in SOR, #1, 4, 8,
    /// 14, 22, 32 in MOR: `n` guesses.
    #[test]
    fn a_deviating_b_gets_one_guess_per_answer_against_that_answers_position() {
        let enc = ElementEncoding::Hash127;
        let dict: Vec<String> = (0..64).map(|k| format!("slot-{k}")).collect();
        let secret = dict[16].clone();
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
                broken.push(format!(
                    "{s}/{var} (round {} of {}, {next} guesses spent)",
                    r.rounds,
                    s.rounds(n)
                ));
            }
        }
        assert!(
            broken.is_empty(),
            "B found A's favourite with its guess #17 against one position (n = {n}) in: {}",
            broken.join(", ")
        );
    }

    /// Review of issue 26, finding 1 (amplified). A accepted any `n` from B between its own length and 4096,
    /// and pads its list with dummies: B raised `n` and got `n(n+1)/2` guesses against
    /// A's favourite in SOR. A lists 3 elements; B says `n = 48` and tests 1 176 guesses
    /// on `a_0` — A's favourite is guess #1000 of a public-grid-sized dictionary (fails
    /// on the code before the fix). Now B gets `n = 48` guesses against `a_0`, and A
    /// refuses `n` above `max(n_A, 256)` (`DEFAULT_MAX_PEER_SET`).
    #[test]
    fn a_deviating_b_raising_n_gets_n_guesses_per_position_up_to_as_bound() {
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
        // beyond A's bound the session does not start
        let mut junk = |v: &RoundView<'_>| -> Vec<Ciphertext> {
            v.pairs
                .iter()
                .map(|_| {
                    v.pk.encrypt_raw(&bn::from_u64(1).unwrap(), &mut ChaCha20Rng::seed_from_u64(1))
                        .unwrap()
                })
                .collect()
        };
        let e = against_hostile_b(params(Scheme::Sor, Variant::Implicit, enc), &a_set, 257, &mut junk).unwrap_err();
        assert!(e.to_string().contains("at most 256"), "{e}");
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

    fn crt(xp: &Nat, xq: &Nat, p: &Nat, q: &Nat) -> Nat {
        let qinv = bn::inv_mod(q, p).unwrap();
        let d = bn::sub_mod(&bn::reduce(xp, p).unwrap(), &bn::reduce(xq, p).unwrap(), p).unwrap();
        bn::add(
            &bn::reduce(xq, q).unwrap(),
            &bn::mul(&bn::mul_mod(&d, &qinv, p).unwrap(), q).unwrap(),
        )
        .unwrap()
    }

    /// A 1024-bit Paillier–Blum key `p·q` with `p` a 20-bit prime: it passed trial
    /// division (no factor below 2¹⁴) and its Π^mod proof is an honest one.
    fn unbalanced_key() -> (Nat, Nat, PrivateKey, PublicKey, Arc<ModulusProof>) {
        loop {
            let p = blum_prime(20);
            let q = blum_prime(1004);
            let n = bn::mul(&p, &q).unwrap();
            if n.num_bits() != 1024 {
                continue;
            }
            let Ok(sk) = PrivateKey::from_primes(bn::dup(&q).unwrap(), bn::dup(&p).unwrap()) else {
                continue;
            };
            // the crate's own prover (it proves keys of any shape)
            let proof = sk.modulus_proof().unwrap();
            let pk = sk.public().clone();
            return (p, q, sk, pk, proof);
        }
    }

    /// Review of issue 26, finding 2 (partial fix). docs/pros.md claimed: "Each comparison tells A whether B's element there equals
    /// **either of two candidates** of A's choosing — one modulo each prime factor of its
    /// key (the proof limits it to two)". Π^mod proves `N = p·q` with `p ≡ q ≡ 3 mod 4`,
    /// not that `p` and `q` are large: a modulus with a 20-bit `p` passes B's checks. The
    /// comparison then tells A whether `b ≡ r (mod p)` for a residue class `r`, and, when
    /// it does, `h_ij(b) mod p` identifies `b` inside the class: with 32-bit elements
    /// (`--encoding int32`, and the paper's slot encoding) one comparison tests
    /// `2³²/p ≈ 4 096` candidates. Here A's two "candidates" (the class representative
    /// `r < p` and a wrong guess modulo `q`) are both wrong, yet A reads B's element.
    #[test]
    fn b_refuses_a_paillier_blum_modulus_with_a_factor_below_2_24() {
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
        let b = Responder::new(rp, &b_set, 1024, 4096, testing::ring_pedersen()).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let accepted = b.on_hello(&hello.to_bytes(), &NO_CHANNEL_BINDING, &mut rng);
        let Ok((b, accept)) = accepted else {
            // the fix: the key's modulus has a factor below 2^24
            let e = accepted.unwrap_err();
            assert!(e.to_string().contains("below 2^24"), "{e}");
            return;
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

    /// Review of issue 26, finding 2, FNP (partial fix). `tacit pros psi serve --max-tests N` promises that a querier tests at
    /// most `2·B·M` candidates (`PsiParams::chooser_tests`). With one bin of one root
    /// (`chooser_tests() == 2`) and a key with a 20-bit factor, the query's one root slot
    /// covers a residue class of ~4 096 32-bit candidates, and the querier reads the
    /// sender's element from the class.
    #[test]
    fn an_fnp_sender_refuses_a_paillier_blum_modulus_with_a_factor_below_2_24() {
        let (p, q, sk, pk, proof) = unbalanced_key();
        let mut pp = PsiParams::new(1, 4);
        pp.bucketing = false;
        pp.encoding = ElementEncoding::Integer32;
        assert_eq!(pp.chooser_tests(), 2);
        let secret: u32 = 2_718_281_828;
        let s_set = vec![secret.to_string(), "1".into(), "2".into()];
        let sender = Sender::new(&pp, &s_set, 1024, 4096, testing::ring_pedersen()).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(10);
        // p(x) = x − root, root ≡ secret (mod p) class, a wrong value mod q
        let sv = bn::from_u64(secret as u64).unwrap();
        let r = bn::reduce(&sv, &p).unwrap();
        let root = crt(&r, &bn::from_u64(777).unwrap(), &p, &q);
        let alpha0 = bn::sub_mod(&bn::from_u64(0).unwrap(), &root, pk.n()).unwrap();
        let mut seed = [0u8; 32];
        rng.fill_bytes(&mut seed);
        let (opening, _) = sender.open(&mut rng);
        let ring = testing::ring_pedersen();
        let ctx = facproof::context(fnp::FACTOR_PROOF_DOMAIN, &NO_CHANNEL_BINDING, &opening.nonce);
        let fac = FacProof::prove_with(&pk, &p, &q, &ring.offer().verify().unwrap(), &ctx, &mut rng).unwrap();
        let query = fnp::Query {
            params: pp,
            key: pk.clone(),
            proof,
            fac: Arc::new(fac),
            ring: ring.public().clone(),
            seed,
            coeffs: vec![pk.encrypt_raw(&alpha0, &mut rng).unwrap()],
        };
        let responded = sender.respond(&opening, &query.to_bytes(), &NO_CHANNEL_BINDING, &mut rng);
        let Ok((ans, _)) = responded else {
            // the fix: the key's modulus has a factor below 2^24
            let e = responded.unwrap_err();
            assert!(e.to_string().contains("below 2^24"), "{e}");
            return;
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

    // ---------------------------------------------------------------- Π^fac and Π^prm

    /// A Paillier–Blum key `p·q` of `bits` bits with `p` a `p_bits`-bit prime (above
    /// 2²⁴, so the gcd check passes), `q` the rest; its Π^mod proof is an honest one.
    fn lopsided_key(p_bits: i32, bits: u32) -> (Nat, Nat, PrivateKey) {
        loop {
            let p = blum_prime(p_bits);
            let q = blum_prime(bits as i32 - p_bits);
            if bn::mul(&p, &q).unwrap().num_bits() as u32 != bits {
                continue;
            }
            let Ok(sk) = PrivateKey::from_primes(bn::dup(&q).unwrap(), bn::dup(&p).unwrap()) else {
                continue;
            };
            sk.modulus_proof().unwrap();
            return (p, q, sk);
        }
    }

    /// The residue-class attack of a key holder whose `p` is small, on 32-bit
    /// elements: every candidate `c ≡ r (mod p)` below 2³² whose tag matches the
    /// decrypted value modulo `p`.
    fn class_candidates(sid: &[u8; 32], domain: &[u8], v: &Nat, r: &Nat, p: &Nat, pk: &PublicKey) -> (usize, Vec<u64>) {
        let r_u = r.to_dec_str().unwrap().parse::<u64>().unwrap();
        let p_u = p.to_dec_str().unwrap().parse::<u64>().unwrap();
        let (mut tested, mut hits) = (0, Vec::new());
        let mut c = r_u;
        while c < 1 << 32 {
            tested += 1;
            let t = match_tag(domain, sid, 0, 0, &bn::from_u64(c).unwrap(), pk.n()).unwrap();
            if bn::reduce(&t, p).unwrap() == *v {
                hits.push(c);
            }
            c += p_u;
        }
        (tested, hits)
    }

    /// What a key holder with a small factor read: the candidates one comparison (or
    /// one query) tested, and whether they held the other side's element.
    type ClassAttack = Option<(usize, bool)>;

    /// A key holder whose `bits`-bit Paillier–Blum key has a 26-bit `p` (honest Π^mod
    /// and Π^fac) is honest but for its first query: the root of B's residue class mod
    /// `p` and a wrong value mod `q` (A would walk the classes; the test picks the right
    /// one). B accepts keys of `min_key_bits` (and below the floor with `insecure`).
    /// Returns the run and, if B answered, what A read from the class.
    fn b_residue_class_attack(
        bits: u32,
        min_key_bits: u32,
        insecure: bool,
        seed: u64,
    ) -> (testing::Run<Reconciled, Reconciled>, ClassAttack) {
        let (p, q, sk) = lopsided_key(26, bits);
        let enc = ElementEncoding::Integer32;
        let rp = params(Scheme::Sor, Variant::Implicit, enc);
        let b_secret: u32 = 3_141_592_653;
        let b = Responder::new(
            rp,
            &[b_secret.to_string(), "17".into()],
            min_key_bits,
            4096,
            testing::ring_pedersen(),
        )
        .unwrap();
        let b = if insecure { b.accept_insecure_small_keys() } else { b };
        let pk = sk.public().clone();
        let bv = bn::from_u64(b_secret as u64).unwrap();
        let r = bn::reduce(&bv, &p).unwrap();
        let mut sid = [0u8; 32];
        let mut bug = |o: &Outgoing<'_>| {
            if o.from == Party::B && o.index == 0 {
                sid = session_id(
                    SESSION_DOMAIN,
                    &NO_CHANNEL_BINDING,
                    &o.honest[7..39].try_into().unwrap(),
                );
            }
            if o.from == Party::A && o.index == 2 {
                let x = crt(&r, &bn::from_u64(12345).unwrap(), &p, &q);
                let neg = bn::sub_mod(&bn::from_u64(0).unwrap(), &x, pk.n()).unwrap();
                let c = pk.encrypt_raw(&neg, &mut ChaCha20Rng::seed_from_u64(3)).unwrap();
                return Act::Send(
                    Query {
                        round: 0,
                        entries: vec![(0, c)],
                    }
                    .to_bytes(&pk),
                );
            }
            Act::honest(o)
        };
        let run = testing::reconcile(rp, sk.clone(), &["1".to_string(), "2".to_string()], b, &mut bug, seed);
        let first = run.transcript.iter().filter(|(w, _)| *w == Party::B).nth(1);
        let read = first.and_then(|(_, m)| Answer::from_bytes(m, &pk, 1).ok()).map(|ans| {
            let v = bn::reduce(&sk.decrypt_raw(&ans.values[0]).unwrap(), &p).unwrap();
            let (tested, hits) = class_candidates(&sid, MATCH_DOMAIN, &v, &r, &p, &pk);
            (tested, hits.contains(&(b_secret as u64)))
        });
        (run, read)
    }

    /// The same against the FNP sender: the chooser's one root sits in the residue
    /// class of the sender's 32-bit element.
    fn fnp_residue_class_attack(
        bits: u32,
        min_key_bits: u32,
        insecure: bool,
        seed: u64,
    ) -> (testing::Run<Vec<Vec<u8>>, ()>, ClassAttack) {
        let (p, q, sk) = lopsided_key(26, bits);
        let mut pp = PsiParams::new(1, 3);
        pp.bucketing = false;
        pp.encoding = ElementEncoding::Integer32;
        let secret: u32 = 2_718_281_828;
        let sender = Sender::new(
            &pp,
            &[secret.to_string(), "1".into(), "2".into()],
            min_key_bits,
            4096,
            testing::ring_pedersen(),
        )
        .unwrap();
        let sender = if insecure {
            sender.accept_insecure_small_keys()
        } else {
            sender
        };
        let pk = sk.public().clone();
        let r = bn::reduce(&bn::from_u64(secret as u64).unwrap(), &p).unwrap();
        let root = crt(&r, &bn::from_u64(777).unwrap(), &p, &q);
        let alpha0 = bn::sub_mod(&bn::from_u64(0).unwrap(), &root, pk.n()).unwrap();
        let mut bug = |o: &Outgoing<'_>| {
            if o.from == Party::A {
                let mut qy = fnp::Query::from_bytes(o.honest, &pp, 0, 4096, testing::ring_pedersen().public()).unwrap();
                qy.coeffs = vec![pk.encrypt_raw(&alpha0, &mut ChaCha20Rng::seed_from_u64(4)).unwrap()];
                return Act::Send(qy.to_bytes());
            }
            Act::honest(o)
        };
        let run = testing::psi(&pp, sk.clone(), &["9"], &sender, &mut bug, seed);
        let answer = run
            .transcript
            .get(2)
            .and_then(|(_, b)| fnp::Answer::from_bytes(b, &pp, &pk).ok());
        let read = answer.map(|ans| {
            let sid = session_id(fnp::SESSION_DOMAIN, &NO_CHANNEL_BINDING, &ans.nonce);
            let (mut tested, mut found) = (0, false);
            for c in &ans.values {
                let v = bn::reduce(&sk.decrypt_raw(c).unwrap(), &p).unwrap();
                let (t, hits) = class_candidates(&sid, fnp::MATCH_DOMAIN, &v, &r, &p, &pk);
                tested += t;
                found |= hits.contains(&(secret as u64));
            }
            (tested, found)
        });
        (run, read)
    }

    /// Issue 26, the open item of the review: Π^mod does not prove the factors large,
    /// and the gcd with the primes below 2²⁴ stops only factors below 2²⁴. A 1024-bit
    /// Paillier–Blum key with a 26-bit `p` passed every check of B (the hello verifies),
    /// and one comparison then tested `2³²/p ≈ 64` candidates of 32-bit elements: A read
    /// B's element from the residue class (fails on the code before the fix: B answered
    /// and the class held B's element). Now A must send Π^fac against B's ring-Pedersen
    /// parameters before its first query; its factors are out of range, and B refuses
    /// without computing anything with the key.
    #[test]
    fn b_refuses_a_modulus_with_a_factor_well_below_the_square_root() {
        assert!(tacit_pros::facproof::proven_min_factor_bits(1024) > 26);
        let (run, read) = b_residue_class_attack(1024, 1024, false, 21);
        assert_eq!(
            read, None,
            "B answered a 1024-bit key with a 26-bit factor (candidates tested, B's element found)"
        );
        assert!(
            matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("no-small-factor proof fails")),
            "{:?}",
            run.b
        );
        assert!(matches!(run.a, Err(Error::PeerRefused(_))), "{:?}", run.a);
    }

    /// The same for FNP: a chooser with a 26-bit factor puts one root in the residue
    /// class of the sender's 32-bit element and read it from the class (fails on the
    /// code before the fix, which answered); now the sender refuses the query's Π^fac
    /// before it evaluates anything.
    #[test]
    fn an_fnp_sender_refuses_a_modulus_with_a_factor_well_below_the_square_root() {
        let (run, read) = fnp_residue_class_attack(1024, 1024, false, 22);
        assert_eq!(
            read, None,
            "the sender answered a key with a 26-bit factor (candidates tested, its element found)"
        );
        assert!(
            matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("no-small-factor proof fails")),
            "{:?}",
            run.b
        );
    }

    /// Π^fac is bound to the session and the key: A's proof from one session, replayed
    /// in the next (B's nonce differs), and a proof made in this session for another
    /// key, are refused before B computes anything (fails on the code before the fix,
    /// which had no such proof and answered).
    #[test]
    fn b_refuses_a_factor_proof_of_another_session_or_key() {
        let p3 = params(Scheme::Sor, Variant::Implicit, ElementEncoding::Hash127);
        let a_set = vec!["a".to_string(), "b".to_string()];
        let b_set = vec!["b".to_string(), "c".to_string()];
        let responder = || Responder::new(p3, &b_set, 1024, 4096, testing::ring_pedersen()).unwrap();
        let mut recorded = Vec::new();
        let mut record = |o: &Outgoing<'_>| {
            if o.from == Party::A && o.index == 1 {
                recorded = o.honest.to_vec();
            }
            Act::honest(o)
        };
        let run = testing::reconcile(p3, key(), &a_set, responder(), &mut record, 30);
        assert_eq!(run.a.unwrap().elements, vec![b"b".to_vec()]);
        assert_eq!(recorded[..3], [1, 0x04, 0x25]);
        // replayed in a new session
        let mut replay = |o: &Outgoing<'_>| {
            if o.from == Party::A && o.index == 1 {
                return Act::Send(recorded.clone());
            }
            Act::honest(o)
        };
        let run = testing::reconcile(p3, key(), &a_set, responder(), &mut replay, 31);
        assert!(
            matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("no-small-factor proof fails")),
            "{:?}",
            run.b
        );
        assert_eq!(
            run.transcript.iter().filter(|(w, _)| *w == Party::B).count(),
            2,
            "accept and refusal only"
        );
        // made in this session, for another key of the same size
        let other = PrivateKey::generate(1024).unwrap();
        let mut swap = |o: &Outgoing<'_>| {
            if o.from == Party::A && o.index == 1 {
                let nonce: [u8; 32] = o.received[0][7..39].try_into().unwrap();
                let ctx = facproof::context(tacit_pros::threepr::FACTOR_PROOF_DOMAIN, &NO_CHANNEL_BINDING, &nonce);
                let rp = testing::ring_pedersen();
                let f = FacProof::prove(
                    &other,
                    &rp.offer().verify().unwrap(),
                    &ctx,
                    &mut ChaCha20Rng::seed_from_u64(1),
                )
                .unwrap();
                let mut w = Writer::new();
                w.put_envelope(tacit_pros::threepr::TAG_FACTOR_PROOF);
                f.encode(other.public(), rp.public(), &mut w);
                return Act::Send(w.into_bytes());
            }
            Act::honest(o)
        };
        let run = testing::reconcile(p3, key(), &a_set, responder(), &mut swap, 32);
        assert!(
            matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("no-small-factor proof fails")),
            "{:?}",
            run.b
        );
        // FNP: a query replayed into the next session (the sender's nonce differs)
        let pp = PsiParams::new(2, 2);
        let sender = Sender::new(&pp, &["x", "y"], 1024, 4096, testing::ring_pedersen()).unwrap();
        let mut query = Vec::new();
        let mut rec = |o: &Outgoing<'_>| {
            if o.from == Party::A {
                query = o.honest.to_vec();
            }
            Act::honest(o)
        };
        let run = testing::psi(&pp, key(), &["x", "z"], &sender, &mut rec, 33);
        assert_eq!(run.a.unwrap(), vec![b"x".to_vec()]);
        let mut replay = |o: &Outgoing<'_>| {
            if o.from == Party::A {
                return Act::Send(query.clone());
            }
            Act::honest(o)
        };
        let run = testing::psi(&pp, key(), &["x", "z"], &sender, &mut replay, 34);
        assert!(
            matches!(run.b, Err(Error::BadKey(ref m)) if m.contains("no-small-factor proof fails")),
            "{:?}",
            run.b
        );
    }

    /// The key holder's side: B's ring-Pedersen parameters must have `s ∈ ⟨t⟩`, or the
    /// commitment `P = s^p·t^μ` hides nothing. A deviating B sends `t = N̂ − 1` (order 2)
    /// and `s = 4 ∉ ⟨t⟩`, with a Π^prm that guesses every challenge bit 0; then
    /// `P = ±4^p` and B confirms any guess of `p` (and with a smooth `N̂` of its choosing
    /// takes the discrete log). A (and the FNP chooser) refuse the parameters and send
    /// no proof and no query (fails on the code before the fix, where A sent `P`).
    #[test]
    fn a_key_holder_refuses_ring_pedersen_parameters_with_s_outside_t() {
        let rp = testing::ring_pedersen();
        let nh = bn::dup(rp.public().n()).unwrap();
        let mut t = bn::dup(&nh).unwrap();
        t.sub_word(1).unwrap();
        let s = bn::from_u64(4).unwrap();
        let bad =
            facproof::RingPedersenParams::from_parts(bn::dup(&nh).unwrap(), bn::dup(&s).unwrap(), bn::dup(&t).unwrap());
        // Π^prm with every e_i guessed 0: A_i = t^{z_i}
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let len = bad.len();
        let mut w = Writer::new();
        bad.encode(&mut w);
        let zs: Vec<Nat> = (0..facproof::PRM_ROUNDS)
            .map(|_| bn::random_below(&mut rng, &nh).unwrap())
            .collect();
        for z in &zs {
            w.put_fixed(&bn::to_fixed(&bn::pow_public(&t, z, &nh).unwrap(), len).unwrap());
        }
        for z in &zs {
            w.put_fixed(&bn::to_fixed(z, len).unwrap());
        }
        let offer = w.into_bytes();
        let (sk, p3) = (key(), params(Scheme::Sor, Variant::Implicit, ElementEncoding::Hash127));
        let mut bug = |o: &Outgoing<'_>| {
            if o.from == Party::B && o.index == 0 {
                let mut acc = o.honest[..39].to_vec();
                acc.extend_from_slice(&offer);
                return Act::Send(acc);
            }
            Act::honest(o)
        };
        let b = Responder::new(p3, &["x".to_string()], 1024, 4096, testing::ring_pedersen()).unwrap();
        let run = testing::reconcile(p3, sk.clone(), &["x".to_string()], b, &mut bug, 40);
        let from_a: Vec<&Vec<u8>> = run
            .transcript
            .iter()
            .filter(|(w, _)| *w == Party::A)
            .map(|(_, m)| m)
            .collect();
        if let Some(fac) = from_a.get(1).filter(|m| m[..3] == [1, 0x04, 0x25]) {
            let cp = openssl::bn::BigNum::from_slice(&fac[3..3 + len]).unwrap();
            let (p, q) = sk.primes();
            let leaks = [p, q].iter().any(|f| {
                let sp = bn::pow_public(&s, f, &nh).unwrap();
                cp == sp || cp == bn::sub(&nh, &sp).unwrap()
            });
            panic!("A proved against s ∉ ⟨t⟩; P = ±s^p: {leaks}");
        }
        assert!(
            matches!(run.a, Err(Error::BadKey(ref m)) if m.contains("ring-Pedersen proof fails")),
            "{:?}",
            run.a
        );
        assert_eq!(from_a.len(), 2, "the hello and the refusal only");
        // the FNP chooser likewise
        let pp = PsiParams::new(2, 2);
        let sender = Sender::new(&pp, &["x", "y"], 1024, 4096, testing::ring_pedersen()).unwrap();
        let mut bug = |o: &Outgoing<'_>| {
            if o.from == Party::B && o.index == 0 {
                let mut setup = o.honest[..35].to_vec();
                setup.extend_from_slice(&offer);
                return Act::Send(setup);
            }
            Act::honest(o)
        };
        let run = testing::psi(&pp, key(), &["x"], &sender, &mut bug, 41);
        assert!(
            matches!(run.a, Err(Error::BadKey(ref m)) if m.contains("ring-Pedersen proof fails")),
            "{:?}",
            run.a
        );
        assert!(
            run.transcript
                .iter()
                .all(|(w, m)| *w == Party::B || m[..3] != [1, 0x04, 0x10]),
            "no query"
        );
    }

    // ---------------------------------------------------------------- review rev26

    /// Review rev26, finding 1 (medium). Π^fac proves both factors
    /// `≥ 2^{⌈bits/2⌉−386}`: at 512 bits that is `2^{−130}`, nothing. Yet B took any
    /// key of at least the `min_key_bits` its operator gave (`Responder::new`,
    /// `--min-key-bits`, no floor beyond the encoding's `bits + 65`), while the threat
    /// model stated the two-candidate bound "for every dictionary because Π^fac proves
    /// both factors ≥ 2^{⌈bits/2⌉−386}". A 512-bit Paillier–Blum key with a 26-bit `p`
    /// runs the HONEST Π^fac prover and passes (z₂ = β + e·q < 2^{614} ≤ 2^{641});
    /// one comparison then tested 2³²/p ≈ 64 candidates and A read B's element (fails
    /// on the code before the fix). Now B refuses every key below
    /// `facproof::MIN_PEER_KEY_BITS` (1024) whatever minimum it was given, before
    /// anything is computed with it.
    #[test]
    fn b_refuses_a_key_too_small_for_the_factor_proof_to_bound_its_factors() {
        assert!(facproof::proven_min_factor_bits(512) <= 0);
        let (run, read) = b_residue_class_attack(512, 512, false, 61);
        assert_eq!(
            read, None,
            "B answered a 512-bit key with a 26-bit factor after its Π^fac verified (candidates tested, B's element found)"
        );
        assert!(
            matches!(run.b, Err(Error::KeySize(ref m)) if m.contains("below 1024 bits")),
            "{:?}",
            run.b
        );
        // the only way to such a session is a local, explicitly insecure choice: and it
        // is insecure (B's element is read from its residue class)
        let (_, read) = b_residue_class_attack(512, 512, true, 61);
        assert!(matches!(read, Some((t, true)) if t > 2), "{read:?}");
    }

    /// The same for the FNP sender (fails on the code before the fix, which answered
    /// and the chooser read the sender's element from its class).
    #[test]
    fn an_fnp_sender_refuses_a_key_too_small_for_the_factor_proof_to_bound_its_factors() {
        let (run, read) = fnp_residue_class_attack(512, 512, false, 62);
        assert_eq!(
            read, None,
            "the sender answered a 512-bit key with a 26-bit factor (candidates tested, its element found)"
        );
        assert!(
            matches!(run.b, Err(Error::KeySize(ref m)) if m.contains("below 1024 bits")),
            "{:?}",
            run.b
        );
        let (_, read) = fnp_residue_class_attack(512, 512, true, 62);
        assert!(matches!(read, Some((t, true)) if t > 2), "{read:?}");
    }

    /// Review rev26, finding 2 (low). `RingPedersenParams::decode` takes the declared
    /// `len` for `N̂, s, t` but `PrmProof::decode` then reads values of `len(N̂)` bytes
    /// (from N̂'s value): an offer whose `len` is one more than N̂'s (a zero byte in
    /// front of each of N̂, s, t) decodes and verifies, so the offer (0x0412 / 0x0421)
    /// has two encodings, and docs/wire.md's "each len bytes" is not what is parsed.
    /// Fix: refuse `len ≠ ⌈bits(N̂)/8⌉` in `RingPedersenParams::decode`.
    #[test]
    fn a_ring_pedersen_offer_has_one_encoding() {
        let rp = testing::ring_pedersen();
        let pubp = rp.public();
        let len = pubp.len();
        let mut w = Writer::new();
        w.put_u16((len + 1) as u16);
        for v in [pubp.n(), pubp.s(), pubp.t()] {
            w.put_fixed(&bn::to_fixed(v, len + 1).unwrap());
        }
        rp.proof().encode(pubp, &mut w);
        let bytes = w.into_bytes();
        let mut r = Reader::new(&bytes);
        let accepted = match facproof::Offer::decode(&mut r) {
            Ok(o) => r.finish().is_ok() && o.verify().is_ok(),
            Err(_) => false,
        };
        assert!(
            !accepted,
            "an offer with len {} for a {len}-byte N̂ decodes and verifies",
            len + 1
        );
    }

    /// Review rev26, finding 3 (low). `RingPedersen::from_secret_bytes` says "the primes
    /// are checked to be safe primes" but checks only that they are prime: a store
    /// holding two ordinary primes (with a valid Π^prm, which does not need them safe)
    /// is read back and served, and the verifier's soundness then rests on a modulus
    /// that is not of the form Fig. 28 assumes (`QR_N̂` of order `P̂′Q̂′`, no small
    /// subgroups). Fix: test `(P̂−1)/2`, `(Q̂−1)/2` for primality there too.
    #[test]
    fn stored_ring_pedersen_parameters_need_safe_primes() {
        use openssl::bn::BigNum;
        let prime = |x: &Nat| x.is_prime(32, &mut openssl::bn::BigNumContext::new().unwrap()).unwrap();
        let half = |x: &Nat| {
            let mut h = BigNum::new().unwrap();
            h.rshift1(x).unwrap();
            h
        };
        let (p, q) = loop {
            let mut p = BigNum::new().unwrap();
            p.generate_prime(512, false, None, None).unwrap();
            let mut q = BigNum::new().unwrap();
            q.generate_prime(512, false, None, None).unwrap();
            if p != q && bn::mul(&p, &q).unwrap().num_bits() == 1024 && !prime(&half(&p)) && !prime(&half(&q)) {
                break (p, q);
            }
        };
        let n = bn::mul(&p, &q).unwrap();
        let mut pm1 = bn::dup(&p).unwrap();
        pm1.sub_word(1).unwrap();
        let mut qm1 = bn::dup(&q).unwrap();
        qm1.sub_word(1).unwrap();
        let phi = bn::mul(&pm1, &qm1).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(62);
        let tau = bn::random_below(&mut rng, &n).unwrap();
        let t = bn::mul_mod(&tau, &tau, &n).unwrap();
        let lambda = bn::random_below(&mut rng, &bn::div(&phi, &bn::from_u64(4).unwrap()).unwrap()).unwrap();
        let s = bn::pow_public(&t, &lambda, &n).unwrap();
        let len = (n.num_bits() as usize).div_ceil(8);
        // Π^prm, as the crate makes it
        let masks: Vec<Nat> = (0..facproof::PRM_ROUNDS)
            .map(|_| bn::random_below(&mut rng, &phi).unwrap())
            .collect();
        let a: Vec<Nat> = masks.iter().map(|m| bn::pow_public(&t, m, &n).unwrap()).collect();
        let mut h = Sha256::new();
        h.update(b"tacit-pros/v1/ring-pedersen-proof\0");
        h.update((len as u32).to_be_bytes());
        for v in [&n, &s, &t] {
            h.update(bn::to_fixed(v, len).unwrap());
        }
        for v in &a {
            h.update(bn::to_fixed(v, len).unwrap());
        }
        let e: [u8; 32] = h.finalize().into();
        let z: Vec<Nat> = masks
            .iter()
            .enumerate()
            .map(|(i, m)| {
                if e[i / 8] >> (i % 8) & 1 == 1 {
                    bn::add_mod(m, &lambda, &phi).unwrap()
                } else {
                    bn::dup(m).unwrap()
                }
            })
            .collect();
        let mut w = Writer::new();
        w.put_u16(len as u16);
        for v in [&p, &q, &t, &lambda].into_iter().chain(&a).chain(&z) {
            w.put_fixed(&bn::to_fixed(v, len).unwrap());
        }
        let back = facproof::RingPedersen::from_secret_bytes(&w.into_bytes());
        assert!(
            back.is_err(),
            "parameters of two primes that are not safe were read back"
        );
    }

    /// Review rev26b: the stored `pros-ring-pedersen` parameters are read back with
    /// their safe primes and Π^prm checked, but not `t`: a store whose entry another
    /// local user (or a restored old copy) replaced with `t = 1` (`s = 1`, Π^prm
    /// `A_i = 1`, `z_i = 0`) is read back, and against it a Π^fac of all ones and
    /// zeros — made without the primes — verifies for a 1024-bit key with a 26-bit
    /// factor. The server's factor bound then holds nothing.
    #[test]
    fn stored_ring_pedersen_parameters_with_t_of_order_one_are_refused() {
        let honest = facproof::test_ring_pedersen().to_secret_bytes();
        let len = u16::from_be_bytes([honest[0], honest[1]]) as usize;
        let primes = &honest[2..2 + 2 * len];
        let one = bn::to_fixed(&bn::from_u64(1).unwrap(), len).unwrap();
        let mut w = Writer::new();
        w.put_u16(len as u16);
        w.put_fixed(primes);
        w.put_fixed(&one); // t = 1
        w.put_fixed(&one); // λ = 1, so s = 1
        for _ in 0..facproof::PRM_ROUNDS {
            w.put_fixed(&one); // A_i = 1
        }
        for _ in 0..facproof::PRM_ROUNDS {
            w.put_fixed(&vec![0; len]); // z_i = 0
        }
        let Ok(rp) = facproof::RingPedersen::from_secret_bytes(&w.into_bytes()) else {
            return; // refused: what the fix should do
        };
        let (_p, _q, sk) = lopsided_key(26, 1024);
        let pk = sk.public();
        let nh_bits = rp.public().bits();
        let total = FacProof::encoded_len(pk.bits(), nh_bits);
        let mut f = Vec::new();
        for _ in 0..5 {
            f.extend_from_slice(&one); // P = Q = A = B = T = 1
        }
        f.resize(total, 0); // z1 = z2 = w1 = w2 = 0, v = +0
        let forged = FacProof::decode(&mut Reader::new(&f), pk, rp.public()).unwrap();
        let ctx = facproof::context(b"tacit-pros/v1/3pr-factor-proof\0", &[7; 32], &[9; 32]);
        assert!(
            forged.verify(pk, &rp, &ctx).is_err(),
            "stored parameters with t = 1 were read back, and a Π^fac forged without the primes verified \
             for a key with a 26-bit factor"
        );
    }
}
