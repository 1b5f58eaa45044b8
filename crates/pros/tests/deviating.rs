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
    Responder::new(p, b, 256, 4096).unwrap()
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
        if o.from == Party::A && o.index == 1 {
            // round 0: one entry for position 0
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
    let other = PrivateKey::generate(256).unwrap();
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
        let sender = Sender::new(&p, &set("s", 8), 256, 4096).unwrap();
        let c = set("c", m as usize);
        let mut bug = |o: &Outgoing<'_>| {
            if o.from != Party::B {
                return Act::honest(o);
            }
            let q = fnp::Query::from_bytes(&o.received[0], &p, 0, 4096).unwrap();
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
    let sender = Sender::new(&p, &set("s", 3), 256, 4096).unwrap();
    let c = set("c", 20);
    let enc = ElementEncoding::Hash127;
    let mut bug = |o: &Outgoing<'_>| {
        if o.from != Party::B {
            return Act::honest(o);
        }
        let q = fnp::Query::from_bytes(&o.received[0], &p, 0, 4096).unwrap();
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
    let sender = Sender::new(&p, &["alice", "bob", "carol"], 256, 4096).unwrap();
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
            let mut q = fnp::Query::from_bytes(o.honest, &p, 0, 4096).unwrap();
            q.coeffs = vec![pk.encrypt_raw(&neg_r, &mut ChaCha20Rng::seed_from_u64(4)).unwrap()];
            return Act::Send(q.to_bytes());
        }
        Act::honest(o)
    };
    let run = testing::psi(&p, sk.clone(), &["zzz"], &sender, &mut bug, 12);
    let ans_bytes = &run.transcript[1].1;
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
    let sender = Sender::new(&p, &set("s", 4), 256, 4096).unwrap();
    let other = PrivateKey::generate(256).unwrap();
    let mut bug = |o: &Outgoing<'_>| {
        if o.from == Party::A {
            let mut q = fnp::Query::from_bytes(o.honest, &p, 0, 4096).unwrap();
            q.proof = other.modulus_proof().unwrap();
            return Act::Send(q.to_bytes());
        }
        Act::honest(o)
    };
    let run = testing::psi(&p, key(), &set("c", 2), &sender, &mut bug, 13);
    assert!(matches!(run.b, Err(Error::BadKey(_))), "{:?}", run.b);
    assert!(matches!(run.a, Err(Error::PeerRefused(_))));
}
