//! End-to-end tests of the PSI engines: correctness against the plain intersection,
//! padding, precomputation reuse, and deviating peers.

use proptest::prelude::*;
use std::collections::HashSet;
use tacit_crypto::oprf::{KeyPair, Mode, Oprf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{P256, PrimeGroup, Ristretto255, SecretScalar};
use tacit_psi::two_way::{Initiator, Responder};
use tacit_psi::{
    Error, PsiParams, Receiver, ReceiverPrecomputation, Request, Response, Reuse, Security, Sender, SenderKey,
    SenderPrecomputation,
};

fn rng(seed: u8) -> SecureRng {
    SecureRng::from_seed([seed; 32])
}

fn params<G: PrimeGroup>(security: Security, m: u32, n: u32) -> PsiParams {
    PsiParams::new(security).with_group(G::ID).with_bounds(m, n)
}

fn sender<G: PrimeGroup>(p: &PsiParams, set: &[Vec<u8>], reuse: Reuse, rng: &mut SecureRng) -> Sender<G> {
    let key = SenderKey::<G>::generate(rng, 1);
    let pre = SenderPrecomputation::compute(p, &key, set, reuse, rng).unwrap();
    Sender::new(p, key, pre).unwrap()
}

fn run<G: PrimeGroup>(p: &PsiParams, recv: &[Vec<u8>], send: &[Vec<u8>], seed: u8) -> Vec<Vec<u8>> {
    let mut r = rng(seed);
    let s = sender::<G>(p, send, Reuse::FreshPerSession, &mut r);
    let pre = ReceiverPrecomputation::<G>::compute(p, recv, &mut r).unwrap();
    let (waiting, req) = Receiver::start(&pre);
    let resp = s.respond(&req, &mut r).unwrap();
    waiting.on_response(&resp).unwrap().items().to_vec()
}

/// The plain computation the protocol replaces: receiver's distinct elements that the
/// sender holds, in the receiver's order.
fn plain(recv: &[Vec<u8>], send: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let s: HashSet<&Vec<u8>> = send.iter().collect();
    let mut seen = HashSet::new();
    recv.iter()
        .filter(|x| s.contains(x) && seen.insert(x.to_vec()))
        .cloned()
        .collect()
}

fn items(v: &[&str]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.as_bytes().to_vec()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn intersection_equals_plain_ristretto(
        recv in proptest::collection::vec(0u8..40, 0..=8),
        send in proptest::collection::vec(0u8..40, 0..=64),
        malicious in any::<bool>(),
        seed in any::<u8>(),
    ) {
        let recv: Vec<Vec<u8>> = recv.iter().map(|x| format!("id-{x}").into_bytes()).collect();
        let send: Vec<Vec<u8>> = send.iter().map(|x| format!("id-{x}").into_bytes()).collect();
        let sec = if malicious { Security::Malicious } else { Security::SemiHonest };
        let p = params::<Ristretto255>(sec, 8, 64);
        prop_assert_eq!(run::<Ristretto255>(&p, &recv, &send, seed), plain(&recv, &send));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn intersection_equals_plain_p256(
        recv in proptest::collection::vec(0u8..20, 0..=4),
        send in proptest::collection::vec(0u8..20, 0..=16),
        seed in any::<u8>(),
    ) {
        let recv: Vec<Vec<u8>> = recv.iter().map(|x| vec![*x]).collect();
        let send: Vec<Vec<u8>> = send.iter().map(|x| vec![*x]).collect();
        let p = params::<P256>(Security::Malicious, 4, 16);
        prop_assert_eq!(run::<P256>(&p, &recv, &send, seed), plain(&recv, &send));
    }
}

#[test]
fn empty_full_and_duplicate_sets() {
    let p = params::<Ristretto255>(Security::Malicious, 3, 5);
    // empty on either side
    assert!(run::<Ristretto255>(&p, &[], &items(&["a", "b"]), 1).is_empty());
    assert!(run::<Ristretto255>(&p, &items(&["a"]), &[], 2).is_empty());
    assert!(run::<Ristretto255>(&p, &[], &[], 3).is_empty());
    // both sets exactly at their bounds, everything in common
    let full_r = items(&["a", "b", "c"]);
    let full_s = items(&["c", "b", "a", "d", "e"]);
    assert_eq!(run::<Ristretto255>(&p, &full_r, &full_s, 4), full_r);
    // duplicates count once and do not use up the bounds
    let dup_r = items(&["b", "b", "a", "b", "a", "z"]);
    let dup_s = items(&["a", "a", "a", "a", "a", "a", "a", "b", "q"]);
    assert_eq!(run::<Ristretto255>(&p, &dup_r, &dup_s, 5), items(&["b", "a"]));
}

#[test]
fn sets_over_the_bounds_are_refused_locally() {
    let p = params::<Ristretto255>(Security::Malicious, 2, 3);
    let mut r = rng(9);
    let key = SenderKey::<Ristretto255>::generate(&mut r, 1);
    let err = SenderPrecomputation::compute(&p, &key, &items(&["a", "b", "c", "d"]), Reuse::FreshPerSession, &mut r)
        .unwrap_err();
    assert_eq!(err.to_string(), "sender set has 4 entries; the limit is 3");
    let err = ReceiverPrecomputation::<Ristretto255>::compute(&p, &items(&["a", "b", "c"]), &mut r).unwrap_err();
    assert_eq!(err.to_string(), "receiver set has 3 entries; the limit is 2");
}

#[test]
fn message_sizes_depend_only_on_the_bounds() {
    for sec in [Security::Malicious, Security::SemiHonest] {
        let p = params::<Ristretto255>(sec, 4, 50);
        let mut sizes = HashSet::new();
        for (nr, ns) in [(0, 0), (1, 1), (4, 50), (2, 17)] {
            let recv: Vec<Vec<u8>> = (0..nr).map(|i| format!("r{i}").into_bytes()).collect();
            let send: Vec<Vec<u8>> = (0..ns).map(|i| format!("s{i}").into_bytes()).collect();
            let mut r = rng((nr + 10 * ns) as u8);
            let s = sender::<Ristretto255>(&p, &send, Reuse::FreshPerSession, &mut r);
            let pre = ReceiverPrecomputation::<Ristretto255>::compute(&p, &recv, &mut r).unwrap();
            let (_, req) = Receiver::start(&pre);
            let resp = s.respond(&req, &mut r).unwrap();
            assert_eq!(req.len(), Request::<Ristretto255>::encoded_len(&p));
            assert_eq!(resp.len(), Response::<Ristretto255>::encoded_len(&p));
            sizes.insert((req.len(), resp.len()));
        }
        assert_eq!(sizes.len(), 1, "{sizes:?}");
    }
}

#[test]
fn fresh_precomputation_serves_one_session_epoch_many() {
    let p = params::<Ristretto255>(Security::Malicious, 2, 4);
    let mut r = rng(20);
    let set = items(&["a", "b"]);
    let pre = ReceiverPrecomputation::<Ristretto255>::compute(&p, &items(&["a"]), &mut r).unwrap();
    let fresh = sender::<Ristretto255>(&p, &set, Reuse::FreshPerSession, &mut r);
    let (_, req) = Receiver::start(&pre);
    fresh.respond(&req, &mut r).unwrap();
    assert_eq!(fresh.respond(&req, &mut r).unwrap_err(), Error::PrecomputationReused);

    let epoch = sender::<Ristretto255>(&p, &set, Reuse::WithinEpoch, &mut r);
    for _ in 0..3 {
        let (w, req) = Receiver::start(&pre);
        let resp = epoch.respond(&req, &mut r).unwrap();
        assert_eq!(w.on_response(&resp).unwrap().items(), &items(&["a"])[..]);
    }
}

#[test]
fn stored_precomputations_give_the_same_results() {
    let p = params::<P256>(Security::Malicious, 3, 8);
    let mut r = rng(30);
    let key = SenderKey::<P256>::generate(&mut r, 7);
    let key2 = SenderKey::<P256>::from_bytes(&key.to_bytes()).unwrap();
    assert_eq!(key2.epoch(), 7);
    let pre = SenderPrecomputation::compute(&p, &key, &items(&["x", "y", "z"]), Reuse::WithinEpoch, &mut r).unwrap();
    let pre2 = SenderPrecomputation::<P256>::from_bytes(&pre.to_bytes()).unwrap();
    let s = Sender::new(&p, key2, pre2).unwrap();
    let rp = ReceiverPrecomputation::<P256>::compute(&p, &items(&["q", "z", "x"]), &mut r).unwrap();
    let rp2 = ReceiverPrecomputation::<P256>::from_bytes(&rp.to_bytes()).unwrap();
    let (w, req) = Receiver::start(&rp2);
    let resp = s.respond(&req, &mut r).unwrap();
    assert_eq!(w.on_response(&resp).unwrap().items(), &items(&["z", "x"])[..]);
    // a precomputation cannot be used with another key
    let other = SenderKey::<P256>::generate(&mut r, 7);
    assert!(matches!(
        Sender::new(&p, other, pre),
        Err(Error::PrecomputationMismatch(_))
    ));
}

#[test]
fn two_way_run_in_three_messages() {
    let p = params::<Ristretto255>(Security::Malicious, 3, 20);
    let mut r = rng(40);
    // Alice (AirDrop sender, initiator) and Bob (AirDrop receiver, responder).
    let alice_ids = items(&["15550001111", "alice@example.com"]);
    let bob_ids = items(&["bob@example.com", "15550002222"]);
    let alice_book = items(&["15550002222", "carol@example.com"]);
    let bob_book = items(&["alice@example.com", "dave@example.com"]);

    let alice_sender = sender::<Ristretto255>(&p, &alice_book, Reuse::FreshPerSession, &mut r);
    let alice_own = ReceiverPrecomputation::compute(&p, &alice_ids, &mut r).unwrap();
    let bob_sender = sender::<Ristretto255>(&p, &bob_book, Reuse::FreshPerSession, &mut r);
    let bob_own = ReceiverPrecomputation::compute(&p, &bob_ids, &mut r).unwrap();

    let (bob, m1) = Responder::start(bob_sender, &bob_own).unwrap();
    let (alice, m2) = Initiator::new(alice_sender, alice_own)
        .unwrap()
        .on_m1(&m1, &mut r)
        .unwrap();
    let (bob_learned, m3) = bob.on_m2(&m2, &mut r).unwrap();
    let alice_learned = alice.on_m3(&m3).unwrap();
    // Bob learns which of his IDs Alice has; Alice which of hers Bob has.
    assert_eq!(bob_learned.items(), &items(&["15550002222"])[..]);
    assert_eq!(alice_learned.items(), &items(&["alice@example.com"])[..]);
}

#[test]
fn two_way_tampered_m2_is_caught() {
    let p = params::<Ristretto255>(Security::Malicious, 2, 4);
    let mut r = rng(41);
    let a = sender::<Ristretto255>(&p, &items(&["b"]), Reuse::FreshPerSession, &mut r);
    let a_own = ReceiverPrecomputation::compute(&p, &items(&["a"]), &mut r).unwrap();
    let b = sender::<Ristretto255>(&p, &items(&["a"]), Reuse::FreshPerSession, &mut r);
    let b_own = ReceiverPrecomputation::compute(&p, &items(&["b"]), &mut r).unwrap();
    let (bob, m1) = Responder::start(b, &b_own).unwrap();
    let (_, mut m2) = Initiator::new(a, a_own).unwrap().on_m1(&m1, &mut r).unwrap();
    // flip a bit inside the first evaluated element of the response
    let off = 3 + 3 + 12 + 32 + 4 + 5;
    m2[off] ^= 1;
    assert!(bob.on_m2(&m2, &mut r).is_err());
}

// ---------------------------------------------------------------------------
// Deviating senders, caught by the receiver.

struct Honest {
    p: PsiParams,
    waiting: Option<tacit_psi::ReceiverAwaitingResponse<Ristretto255>>,
    req: Request<Ristretto255>,
    resp: Response<Ristretto255>,
    key: SenderKey<Ristretto255>,
}

fn honest_run(security: Security) -> Honest {
    let p = params::<Ristretto255>(security, 3, 6);
    let mut r = rng(50);
    let key = SenderKey::<Ristretto255>::generate(&mut r, 1);
    let pre = SenderPrecomputation::compute(&p, &key, &items(&["a", "b"]), Reuse::WithinEpoch, &mut r).unwrap();
    let s = Sender::new(&p, key.clone(), pre).unwrap();
    let rp = ReceiverPrecomputation::<Ristretto255>::compute(&p, &items(&["a", "c"]), &mut r).unwrap();
    let (waiting, req_bytes) = Receiver::start(&rp);
    let req = Request::<Ristretto255>::from_bytes(&req_bytes, &p).unwrap();
    let resp = s.respond_to(&req, &mut r).unwrap();
    Honest {
        p,
        waiting: Some(waiting),
        req,
        resp,
        key,
    }
}

impl Honest {
    fn deliver(&mut self, bytes: &[u8]) -> Result<tacit_psi::Intersection, Error> {
        self.waiting.take().unwrap().on_response(bytes)
    }
}

#[test]
fn honest_baseline_matches() {
    let mut h = honest_run(Security::Malicious);
    let bytes = h.resp.to_bytes();
    assert_eq!(h.deliver(&bytes).unwrap().items(), &items(&["a"])[..]);
}

#[test]
fn sender_using_another_key_for_one_element_is_caught() {
    let mut h = honest_run(Security::Malicious);
    let other = KeyPair::<Ristretto255>::from_secret(SecretScalar::random(&mut rng(51)));
    let oprf = Oprf::<Ristretto255>::new(Mode::Voprf);
    h.resp.evaluated[1] = oprf.blind_evaluate(&other, &h.req.blinded[1]);
    let bytes = h.resp.to_bytes();
    assert_eq!(h.deliver(&bytes).unwrap_err(), Error::ProofFailed);
}

#[test]
fn sender_proof_made_with_another_key_is_caught() {
    let mut h = honest_run(Security::Malicious);
    // All answers and the proof under k', but the public key of k.
    let other = KeyPair::<Ristretto255>::from_secret(SecretScalar::random(&mut rng(52)));
    let oprf = Oprf::<Ristretto255>::new(Mode::Voprf);
    h.resp.evaluated = h.req.blinded.iter().map(|b| oprf.blind_evaluate(&other, b)).collect();
    h.resp.proof = Some(oprf.generate_proof(&other, &h.req.blinded, &h.resp.evaluated, &mut rng(53)));
    let bytes = h.resp.to_bytes();
    assert_eq!(h.deliver(&bytes).unwrap_err(), Error::ProofFailed);
}

#[test]
fn sender_proof_for_other_values_is_caught() {
    let mut h = honest_run(Security::Malicious);
    let oprf = Oprf::<Ristretto255>::new(Mode::Voprf);
    let mut r = rng(54);
    let others: Vec<_> = (0..3)
        .map(|_| Ristretto255::mul_base(&Ristretto255::random_scalar(&mut r)))
        .collect();
    let evals: Vec<_> = others
        .iter()
        .map(|b| oprf.blind_evaluate(h.key.key_pair(), b))
        .collect();
    h.resp.proof = Some(oprf.generate_proof(h.key.key_pair(), &others, &evals, &mut r));
    let bytes = h.resp.to_bytes();
    assert_eq!(h.deliver(&bytes).unwrap_err(), Error::ProofFailed);
}

#[test]
fn sender_omitting_the_proof_is_caught() {
    let mut h = honest_run(Security::Malicious);
    h.resp.proof = None;
    let bytes = h.resp.to_bytes();
    assert!(matches!(h.deliver(&bytes).unwrap_err(), Error::Wire(_)));
}

#[test]
fn truncated_and_extended_responses_are_caught() {
    let h = honest_run(Security::Malicious);
    let bytes = h.resp.to_bytes();
    for cut in [1, 5, 9, bytes.len() - 10, bytes.len() - 1] {
        let mut h2 = honest_run(Security::Malicious);
        assert!(
            matches!(h2.deliver(&bytes[..cut]).unwrap_err(), Error::Wire(_)),
            "cut at {cut}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    let mut h3 = honest_run(Security::Malicious);
    assert_eq!(
        h3.deliver(&longer).unwrap_err(),
        Error::Wire(tacit_wire::Error::TrailingBytes(1))
    );
}

#[test]
fn sender_sending_more_set_elements_than_the_bound_is_caught() {
    let mut h = honest_run(Security::Malicious);
    let lb = h.p.truncation_bytes();
    h.resp.truncated.extend(vec![0u8; lb]);
    let bytes = h.resp.to_bytes();
    assert!(matches!(
        h.deliver(&bytes).unwrap_err(),
        Error::WrongCount {
            who: "sender",
            count: 7,
            expected: 6,
            ..
        }
    ));
}

#[test]
fn sender_sending_extra_evaluations_is_caught() {
    let mut h = honest_run(Security::Malicious);
    let extra = h.resp.evaluated[0];
    h.resp.evaluated.push(extra);
    let bytes = h.resp.to_bytes();
    assert!(matches!(
        h.deliver(&bytes).unwrap_err(),
        Error::WrongCount {
            count: 4,
            expected: 3,
            ..
        }
    ));
}

/// Offset of evaluated element `i` in an encoded ristretto255 response.
fn eval_offset(i: usize) -> usize {
    3 + 12 + 32 + 4 + 32 * i
}

#[test]
fn non_canonical_and_identity_points_from_the_sender_are_caught() {
    let h = honest_run(Security::Malicious);
    let bytes = h.resp.to_bytes();
    // a non-canonical ristretto255 encoding (field element ≥ p)
    let mut noncanon = bytes.clone();
    let mut enc = [0xffu8; 32];
    enc[0] = 0xed;
    enc[31] = 0x7f;
    noncanon[eval_offset(0)..eval_offset(1)].copy_from_slice(&enc);
    let mut h1 = honest_run(Security::Malicious);
    assert!(matches!(h1.deliver(&noncanon).unwrap_err(), Error::Crypto(_)));
    // the identity element
    let mut ident = bytes.clone();
    ident[eval_offset(2)..eval_offset(3)].fill(0);
    let mut h2 = honest_run(Security::Malicious);
    assert!(matches!(h2.deliver(&ident).unwrap_err(), Error::Crypto(_)));
    // the identity as public key
    let mut pk = bytes.clone();
    pk[15..47].fill(0);
    let mut h3 = honest_run(Security::Malicious);
    assert!(matches!(h3.deliver(&pk).unwrap_err(), Error::Crypto(_)));
}

#[test]
fn semi_honest_receiver_does_not_accept_a_proof_it_did_not_ask_for() {
    let mut h = honest_run(Security::SemiHonest);
    assert!(h.resp.proof.is_none());
    let bytes = h.resp.to_bytes();
    assert_eq!(h.deliver(&bytes).unwrap().items(), &items(&["a"])[..]);
}

#[test]
fn sender_with_other_parameters_is_refused() {
    let mut h = honest_run(Security::Malicious);
    h.resp.params.max_sender = 7;
    let bytes = h.resp.to_bytes();
    assert!(matches!(h.deliver(&bytes).unwrap_err(), Error::ParamsMismatch { .. }));
}

#[test]
fn peer_refusal_is_surfaced() {
    let mut h = honest_run(Security::Malicious);
    let refusal = tacit_wire::Encode::to_wire(&tacit_wire::ErrorMessage::new("not today"));
    assert_eq!(h.deliver(&refusal).unwrap_err(), Error::PeerRefused("not today".into()));
}

// ---------------------------------------------------------------------------
// Deviating receivers, refused by the sender.

fn sender_for_refusals() -> (PsiParams, Sender<Ristretto255>, Vec<u8>) {
    let p = params::<Ristretto255>(Security::Malicious, 3, 6);
    let mut r = rng(60);
    let s = sender::<Ristretto255>(&p, &items(&["a"]), Reuse::WithinEpoch, &mut r);
    let rp = ReceiverPrecomputation::<Ristretto255>::compute(&p, &items(&["a"]), &mut r).unwrap();
    let (_, req) = Receiver::start(&rp);
    (p, s, req)
}

#[test]
fn receiver_sending_more_elements_than_the_bound_is_refused() {
    let (p, s, _) = sender_for_refusals();
    let mut r = rng(61);
    let blinded: Vec<_> = (0..4)
        .map(|_| Ristretto255::mul_base(&Ristretto255::random_scalar(&mut r)))
        .collect();
    let req = Request::<Ristretto255>::new(p, blinded);
    let err = s.respond(&req.to_bytes(), &mut r).unwrap_err();
    assert_eq!(
        err.to_string(),
        "receiver sent 4 blinded elements; the protocol requires exactly 3"
    );
    // or declaring a larger bound than ours
    let mut big = p;
    big.max_receiver = 4;
    let req = Request::<Ristretto255>::new(big, req.blinded);
    assert!(matches!(
        s.respond(&req.to_bytes(), &mut r).unwrap_err(),
        Error::ParamsMismatch { .. }
    ));
}

#[test]
fn receiver_sending_bad_points_or_bad_lengths_is_refused() {
    let (_, s, req) = sender_for_refusals();
    let mut r = rng(62);
    let first = 3 + 12 + 4;
    let mut ident = req.clone();
    ident[first..first + 32].fill(0);
    assert!(matches!(s.respond(&ident, &mut r).unwrap_err(), Error::Crypto(_)));
    let mut noncanon = req.clone();
    noncanon[first] = 1; // odd, hence non-canonical
    assert!(s.respond(&noncanon, &mut r).is_err());
    assert!(matches!(
        s.respond(&req[..req.len() - 1], &mut r).unwrap_err(),
        Error::Wire(_)
    ));
    let mut longer = req.clone();
    longer.extend_from_slice(&[0; 32]);
    assert!(matches!(s.respond(&longer, &mut r).unwrap_err(), Error::Wire(_)));
    // a P-256 request to a ristretto255 sender
    let p256 = params::<P256>(Security::Malicious, 3, 6);
    let rp = ReceiverPrecomputation::<P256>::compute(&p256, &items(&["a"]), &mut r).unwrap();
    let (_, preq) = Receiver::start(&rp);
    assert!(matches!(
        s.respond(&preq, &mut r).unwrap_err(),
        Error::GroupMismatch { .. }
    ));
    // the honest request still works afterwards
    s.respond(&req, &mut r).unwrap();
}

#[test]
fn certified_slots_keep_their_order_and_match() {
    use tacit_psi::CertifiedSlot;
    let p = params::<Ristretto255>(Security::Malicious, 3, 8);
    let mut r = rng(70);
    let alpha = SecretScalar::<Ristretto255>::random(&mut r);
    let dummy = Ristretto255::mul_base(&Ristretto255::random_scalar(&mut r));
    let oprf = Oprf::<Ristretto255>::new(Mode::Voprf);
    let y = Ristretto255::mul(&oprf.hash_to_group(b"bob@example.com").unwrap(), alpha.expose());
    let slots = vec![
        CertifiedSlot::Dummy { blinded: dummy },
        CertifiedSlot::Real {
            input: b"bob@example.com".to_vec(),
            blind: alpha,
        },
        CertifiedSlot::Dummy { blinded: dummy },
    ];
    let pre = ReceiverPrecomputation::from_certified_slots(&p, slots).unwrap();
    // the request carries exactly the certified elements, in the certified order
    assert_eq!(pre.request_elements(), vec![dummy, y, dummy]);
    let s = sender::<Ristretto255>(&p, &items(&["bob@example.com", "x"]), Reuse::FreshPerSession, &mut r);
    let (w, req) = Receiver::start(&pre);
    let resp = s.respond(&req, &mut r).unwrap();
    assert_eq!(w.on_response(&resp).unwrap().items(), &items(&["bob@example.com"])[..]);
    let back = ReceiverPrecomputation::<Ristretto255>::from_bytes(&pre.to_bytes()).unwrap();
    assert_eq!(back.request_elements(), pre.request_elements());
    // wrong number of slots
    assert!(ReceiverPrecomputation::<Ristretto255>::from_certified_slots(&p, vec![]).is_err());
}

#[test]
fn many_receiver_elements_use_the_hashed_prefix_path() {
    // More than 16 real receiver elements take the HashSet branch of the matcher.
    let p = params::<Ristretto255>(Security::Malicious, 24, 64);
    let recv: Vec<Vec<u8>> = (0..24).map(|i| format!("id-{i}").into_bytes()).collect();
    let send: Vec<Vec<u8>> = (10..60).map(|i| format!("id-{i}").into_bytes()).collect();
    assert_eq!(run::<Ristretto255>(&p, &recv, &send, 90), plain(&recv, &send));
}

#[test]
fn remembered_encodings_never_outlive_a_changed_element() {
    // Messages remember the encodings they were decoded from; changing an element
    // must change what is encoded (and hashed), never reuse the old bytes.
    let mut h = honest_run(Security::Malicious);
    let other = Ristretto255::mul_base(&Ristretto255::random_scalar(&mut rng(71)));
    let decoded = Response::<Ristretto255>::from_bytes(&h.resp.to_bytes(), &h.p).unwrap();
    let mut changed = decoded.clone();
    changed.evaluated[0] = other;
    let again = Response::<Ristretto255>::from_bytes(&changed.to_bytes(), &h.p).unwrap();
    assert_eq!(again.evaluated[0], other);
    assert_eq!(again.evaluated[1..], decoded.evaluated[1..]);
    // and the receiver, hashing the changed element, rejects the proof
    assert!(matches!(h.deliver(&changed.to_bytes()), Err(Error::ProofFailed)));

    let mut req = Request::<Ristretto255>::from_bytes(&h.req.to_bytes(), &h.p).unwrap();
    req.blinded[2] = other;
    let again = Request::<Ristretto255>::from_bytes(&req.to_bytes(), &h.p).unwrap();
    assert_eq!(again.blinded[2], other);
}

/// Issue 9, defect 6: `Debug` of the parties' state shows no input and not the real
/// set size; the stored receiver precomputation is written without growing its buffer
/// (a grown buffer leaves a copy of the blinds behind); a fresh-per-session sender
/// precomputation cannot be shared into a second session; the frame a response
/// needs is derived from the parameters.
#[test]
fn state_is_not_printed_not_copied_and_not_reused() {
    let mut rng = SecureRng::from_seed([44; 32]);
    let params = PsiParams::new(Security::Malicious).with_bounds(4, 50);
    let pre =
        ReceiverPrecomputation::<Ristretto255>::compute(&params, &["secret-id-1", "secret-id-2"], &mut rng).unwrap();
    let shown = format!("{pre:?} {:?}", Receiver::start(&pre).0);
    assert!(!shown.contains("secret-id"), "{shown}");
    assert!(!shown.contains("115, 101, 99"), "{shown}"); // "sec" as bytes
    let bytes = pre.to_bytes();
    assert_eq!(bytes.capacity(), bytes.len());
    let key = SenderKey::<Ristretto255>::generate(&mut rng, 1);
    let book: Vec<String> = (0..7).map(|i| format!("contact-{i}")).collect();
    let fresh = SenderPrecomputation::compute(&params, &key, &book, Reuse::FreshPerSession, &mut rng).unwrap();
    let shown = format!("{fresh:?}");
    assert!(!shown.contains("real") && !shown.contains('7'), "{shown}");
    assert!(fresh.share().is_none());
    let epoch = SenderPrecomputation::compute(&params, &key, &book, Reuse::WithinEpoch, &mut rng).unwrap();
    assert!(epoch.share().is_some());
    let sender = Sender::new(&params, key, fresh).unwrap();
    assert!(!format!("{sender:?}").contains("contact-"));
    // n = 2^20: a response is far above the old fixed 4 MiB frame
    let big = PsiParams::new(Security::Malicious).with_bounds(10, tacit_psi::MAX_SENDER_BOUND);
    assert!(big.max_message_len() > tacit_wire::DEFAULT_MAX_FRAME);
    assert!(big.max_message_len() >= tacit_psi::Response::<Ristretto255>::encoded_len(&big));
}
