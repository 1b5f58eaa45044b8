//! PrivateDrop and legacy AirDrop exchanges between in-process parties: mutual
//! contacts, non-contacts, deviating peers, and the attack on captures.

use std::sync::Arc;
use tacit_crypto::oprf::{KeyPair, Mode, Oprf};
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{Ristretto255, SecretScalar};
use tacit_drop::attack::{PhoneRange, brute_force, read_capture, write_capture};
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::legacy::{DiscoverRequest, receiver_on_discover, sender_on_response};
use tacit_drop::protocol::{
    AddressBook, Ask, Context, Discoverability, DropReceiver, DropSender, FinishPsiRequest, Peer,
};
use tacit_drop::{DropParams, Error};
use tacit_psi::{Reuse, Sender, SenderKey, SenderPrecomputation};

type G = Ristretto255;
const NOW: u64 = 1_800_000_000;

struct Device {
    identity: Arc<DropIdentity<G>>,
    book: Arc<AddressBook>,
}

fn params() -> DropParams {
    DropParams::default().with_bounds(3, 20)
}

fn device(ca: &CertificateAuthority, ids: &[&str], book: &[&str], rng: &mut SecureRng) -> Device {
    let e = DeviceEnrollment::<G>::new(&params(), ids, rng).unwrap();
    let issued = ca
        .enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), NOW - 10, rng)
        .unwrap();
    Device {
        identity: Arc::new(e.finish(issued, &ca.public_key(), NOW).unwrap()),
        book: Arc::new(AddressBook::new(book)),
    }
}

fn book_sender(d: &Device, rng: &mut SecureRng) -> Sender<G> {
    let p = params().psi;
    let key = SenderKey::<G>::generate(rng, 1);
    let pre = SenderPrecomputation::compute(&p, &key, d.book.entries(), Reuse::FreshPerSession, rng).unwrap();
    Sender::new(&p, key, pre).unwrap()
}

fn ctx(me: &Device, ca: &CertificateAuthority, peer: &Device) -> Context<G> {
    Context {
        identity: me.identity.clone(),
        book: me.book.clone(),
        ca: ca.public_key(),
        peer: peer.identity.account,
        now: NOW,
        device_name: "device".into(),
    }
}

/// Runs a whole exchange; returns what each side concluded and every message.
struct Run {
    sender_saw: Result<tacit_drop::protocol::SenderOutcome, Error>,
    receiver_saw: Result<tacit_drop::protocol::ReceiverOutcome, Error>,
    messages_to_receiver: Vec<Vec<u8>>,
    messages_to_sender: Vec<Vec<u8>>,
}

fn run(ca: &CertificateAuthority, s: &Device, r: &Device, mode: Discoverability, rng: &mut SecureRng) -> Run {
    let (sw, start) = DropSender::start(ctx(s, ca, r), book_sender(s, rng)).unwrap();
    let (rw, m1) = DropReceiver::on_start(ctx(r, ca, s), mode, book_sender(r, rng), &start).unwrap();
    let (sw, m2) = sw.on_m1(&m1, rng).unwrap();
    let (rw, m3) = rw.on_m2(&m2, rng).unwrap();
    let outcome = sw.on_m3(&m3, rng);
    let ask = Ask {
        record: outcome.as_ref().ok().and_then(|o| o.ask_record.clone()),
        sender_name: "Alice's laptop".into(),
        files: vec![],
    }
    .to_bytes();
    let receiver_saw = rw.on_ask(&ask);
    Run {
        sender_saw: outcome,
        receiver_saw,
        messages_to_receiver: vec![start, m2, ask],
        messages_to_sender: vec![m1, m3],
    }
}

#[test]
fn mutual_contacts_authenticate_each_other() {
    let mut rng = SecureRng::from_seed([1; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(
        &ca,
        &["14155551111", "alice@example.com"],
        &["bob@example.com", "14155559999"],
        &mut rng,
    );
    let bob = device(
        &ca,
        &["bob@example.com", "14155552222"],
        &["alice@example.com", "14155553333"],
        &mut rng,
    );
    let out = run(&ca, &alice, &bob, Discoverability::ContactsOnly, &mut rng);
    let s = out.sender_saw.unwrap();
    assert_eq!(
        s.receiver,
        Peer::Contact {
            identifier: "bob@example.com".into()
        }
    );
    assert_eq!(s.known_by_receiver, ["alice@example.com"]);
    let r = out.receiver_saw.unwrap();
    assert_eq!(
        r.sender,
        Peer::Contact {
            identifier: "alice@example.com".into()
        }
    );
    assert_eq!(r.known_by_sender, ["bob@example.com"]);
}

#[test]
fn a_non_contact_learns_nothing_and_is_refused_in_contacts_only_mode() {
    let mut rng = SecureRng::from_seed([2; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let mallory = device(
        &ca,
        &["14155556666"],
        &["14155550001", "celebrity@example.com"],
        &mut rng,
    );
    let bob = device(
        &ca,
        &["bob@example.com", "14155552222"],
        &["alice@example.com"],
        &mut rng,
    );
    let out = run(&ca, &mallory, &bob, Discoverability::ContactsOnly, &mut rng);
    let s = out.sender_saw.unwrap();
    assert_eq!(s.receiver, Peer::Unknown);
    assert!(s.known_by_receiver.is_empty());
    assert!(s.ask_record.is_none());
    assert!(matches!(out.receiver_saw, Err(Error::NotDiscoverable(_))));
    // Nothing derived from Bob's identifiers reached Mallory that the attack can use.
    let capture = write_capture(&out.messages_to_sender);
    let summary = read_capture(&capture, &params()).unwrap();
    assert!(summary.hashes.is_empty(), "{summary:?}");
    assert_eq!(summary.messages.len(), 2);
    // …and nothing of Mallory's reached Bob either (Mallory's book did not match).
    let summary = read_capture(&write_capture(&out.messages_to_receiver), &params()).unwrap();
    assert!(summary.hashes.is_empty(), "{summary:?}");

    // In everyone mode the transfer may proceed, with the sender unidentified.
    let out = run(&ca, &mallory, &bob, Discoverability::Everyone, &mut rng);
    assert_eq!(out.receiver_saw.unwrap().sender, Peer::Unknown);
}

#[test]
fn a_sender_the_receiver_knows_only_one_way() {
    // Bob has Carol in his book, Carol does not have Bob: Carol gets no record of Bob's.
    let mut rng = SecureRng::from_seed([3; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let carol = device(&ca, &["carol@example.com"], &["someone@example.com"], &mut rng);
    let bob = device(&ca, &["bob@example.com"], &["carol@example.com"], &mut rng);
    let out = run(&ca, &carol, &bob, Discoverability::Everyone, &mut rng);
    let s = out.sender_saw.unwrap();
    assert_eq!(
        s.receiver,
        Peer::Unknown,
        "Bob's record must not reach a sender that does not know him"
    );
    assert_eq!(s.known_by_receiver, ["carol@example.com"]);
    let r = out.receiver_saw.unwrap();
    assert_eq!(
        r.sender,
        Peer::Contact {
            identifier: "carol@example.com".into()
        }
    );
    assert!(r.known_by_sender.is_empty());
}

#[test]
fn m1_replayed_in_another_tls_session_fails_the_uuid_check() {
    let mut rng = SecureRng::from_seed([4; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"], &mut rng);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let eve = device(&ca, &["eve@example.com"], &[], &mut rng);
    // Eve replays Bob's M1 while her own account is in the TLS certificate.
    let (_, start) = DropSender::start(ctx(&alice, &ca, &bob), book_sender(&alice, &mut rng)).unwrap();
    let (_, bobs_m1) = DropReceiver::on_start(
        ctx(&bob, &ca, &alice),
        Discoverability::Everyone,
        book_sender(&bob, &mut rng),
        &start,
    )
    .unwrap();
    let (sw, _) = DropSender::start(ctx(&alice, &ca, &eve), book_sender(&alice, &mut rng)).unwrap();
    assert!(matches!(sw.on_m1(&bobs_m1, &mut rng), Err(Error::AccountMismatch(_))));
}

#[test]
fn certificates_from_another_ca_or_expired_are_refused() {
    let mut rng = SecureRng::from_seed([5; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let rogue = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"], &mut rng);
    let forged_bob = device(&rogue, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let (sw, start) = DropSender::start(ctx(&alice, &ca, &forged_bob), book_sender(&alice, &mut rng)).unwrap();
    // a receiver that trusts only the rogue CA refuses Alice's inputs at StartPSI…
    let r = DropReceiver::on_start(
        ctx(&forged_bob, &rogue, &alice),
        Discoverability::Everyone,
        book_sender(&forged_bob, &mut rng),
        &start,
    );
    assert!(matches!(r, Err(Error::BadCertificate(_))), "{r:?}");
    // …and a forged receiver that accepts them gets its rogue M1 refused by Alice
    let (_, m1) = DropReceiver::on_start(
        ctx(&forged_bob, &ca, &alice),
        Discoverability::Everyone,
        book_sender(&forged_bob, &mut rng),
        &start,
    )
    .unwrap();
    assert!(matches!(sw.on_m1(&m1, &mut rng), Err(Error::BadCertificate(_))));

    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let mut late = ctx(&alice, &ca, &bob);
    late.now = NOW + 2 * tacit_drop::ca::DEFAULT_VALIDITY_SECS;
    let (sw, start) = DropSender::start(late, book_sender(&alice, &mut rng)).unwrap();
    let (_, m1) = DropReceiver::on_start(
        ctx(&bob, &ca, &alice),
        Discoverability::Everyone,
        book_sender(&bob, &mut rng),
        &start,
    )
    .unwrap();
    assert!(matches!(sw.on_m1(&m1, &mut rng), Err(Error::Expired { .. })));
}

#[test]
fn a_sender_whose_proof_fails_gets_no_validation_record() {
    let mut rng = SecureRng::from_seed([6; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"], &mut rng);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let (sw, start) = DropSender::start(ctx(&alice, &ca, &bob), book_sender(&alice, &mut rng)).unwrap();
    let (rw, m1) = DropReceiver::on_start(
        ctx(&bob, &ca, &alice),
        Discoverability::Everyone,
        book_sender(&bob, &mut rng),
        &start,
    )
    .unwrap();
    let (_, m2) = sw.on_m1(&m1, &mut rng).unwrap();
    // Alice answers one of Bob's blinded identifiers with a second key.
    let mut typed = FinishPsiRequest::<G>::from_bytes(&m2, &params()).unwrap();
    let other = KeyPair::<G>::from_secret(SecretScalar::random(&mut rng));
    let oprf = Oprf::<G>::new(Mode::Voprf);
    typed.response.evaluated[1] = oprf.blind_evaluate(&other, &bob.identity.blinded_ids.elements[1]);
    let r = rw.on_m2(&typed.to_bytes(), &mut rng);
    assert!(matches!(r, Err(Error::Psi(tacit_psi::Error::ProofFailed))), "{r:?}");
}

#[test]
fn a_prepared_do3_answer_changes_nothing_and_is_withheld_on_a_bad_proof() {
    let mut rng = SecureRng::from_seed([8; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"], &mut rng);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    for bad_proof in [false, true] {
        let (sw, start) = DropSender::start(ctx(&alice, &ca, &bob), book_sender(&alice, &mut rng)).unwrap();
        let (mut rw, m1) = DropReceiver::on_start(
            ctx(&bob, &ca, &alice),
            Discoverability::ContactsOnly,
            book_sender(&bob, &mut rng),
            &start,
        )
        .unwrap();
        // the receiver answers DO3 before M2 arrives
        rw.prepare_answer(&mut rng).unwrap();
        let (sw, mut m2) = sw.on_m1(&m1, &mut rng).unwrap();
        if bad_proof {
            let mut typed = FinishPsiRequest::<G>::from_bytes(&m2, &params()).unwrap();
            let other = KeyPair::<G>::from_secret(SecretScalar::random(&mut rng));
            typed.response.evaluated[0] =
                Oprf::<G>::new(Mode::Voprf).blind_evaluate(&other, &bob.identity.blinded_ids.elements[0]);
            m2 = typed.to_bytes();
            // the prepared answer never leaves: no M3 at all
            assert!(matches!(
                rw.on_m2(&m2, &mut rng),
                Err(Error::Psi(tacit_psi::Error::ProofFailed))
            ));
            continue;
        }
        let (rw, m3) = rw.on_m2(&m2, &mut rng).unwrap();
        let o = sw.on_m3(&m3, &mut rng).unwrap();
        assert!(matches!(o.receiver, Peer::Contact { .. }));
        assert_eq!(o.known_by_receiver, vec!["alice@example.com".to_string()]);
        let ask = Ask {
            record: o.ask_record.clone(),
            sender_name: "a".into(),
            files: vec![],
        };
        assert!(matches!(
            rw.on_ask(&ask.to_bytes()).unwrap().sender,
            Peer::Contact { .. }
        ));
    }
}

#[test]
fn a_start_psi_carrying_another_accounts_inputs_fails_the_uuid_check() {
    let mut rng = SecureRng::from_seed([9; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &["bob@example.com"], &mut rng);
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let mallory = device(&ca, &["mallory@example.com"], &["bob@example.com"], &mut rng);
    // Alice's StartPSI (with her certified inputs) replayed by Mallory in her own TLS session
    let (_, start) = DropSender::start(ctx(&alice, &ca, &bob), book_sender(&alice, &mut rng)).unwrap();
    let r = DropReceiver::on_start(
        ctx(&bob, &ca, &mallory),
        Discoverability::Everyone,
        book_sender(&bob, &mut rng),
        &start,
    );
    assert!(matches!(r, Err(Error::AccountMismatch(_))), "{r:?}");
}

#[test]
fn enrolment_checks() {
    let mut rng = SecureRng::from_seed([7; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let p = params();
    let mut reg = MemoryRegistry::new();
    let e = DeviceEnrollment::<G>::new(&p, &["alice@example.com", "14155551111"], &mut rng).unwrap();
    // ownership not confirmed
    assert!(matches!(
        ca.enroll(e.request(), &|id| id != "14155551111", &mut reg, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    // a proof moved to another account
    let mut moved = e.request().clone();
    moved.account = tacit_drop::AccountId::random(&mut rng);
    assert!(matches!(
        ca.enroll(&moved, &|_| true, &mut reg, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    // a blinded value for another identifier than the one claimed
    let mut swapped = e.request().clone();
    swapped.entries[0].identifier = "celebrity@example.com".into();
    assert!(matches!(
        ca.enroll(&swapped, &|_| true, &mut reg, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    // not normalised
    let bad = DeviceEnrollment::<G>::new(&p, &["Alice@Example.com"], &mut rng).unwrap();
    assert!(matches!(
        ca.enroll(bad.request(), &|_| true, &mut reg, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    // more than m
    assert!(DeviceEnrollment::<G>::new(&p, &["1", "2", "3", "4"], &mut rng).is_err());
    // the vector is padded to m and holds the real values at some positions
    let issued = ca.enroll(e.request(), &|_| true, &mut reg, NOW, &mut rng).unwrap();
    assert_eq!(issued.blinded_ids.elements.len(), 3);
    let id = e.finish(issued, &ca.public_key(), NOW).unwrap();
    assert_eq!(id.identifiers(), ["alice@example.com", "14155551111"]);
}

#[test]
fn legacy_flow_leaks_and_the_attack_recovers_the_numbers() {
    let mut rng = SecureRng::from_seed([8; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(
        &ca,
        &["14155551234", "alice@example.com"],
        &["bob@example.com"],
        &mut rng,
    );
    // Mallory runs a receiver and records what Alice's Discover request carries.
    let mallory = device(&ca, &["12125550000"], &[], &mut rng);
    let req = DiscoverRequest {
        record: alice.identity.legacy.clone(),
        sender_name: "Alice's laptop".into(),
    }
    .to_bytes();
    let refused = receiver_on_discover(
        &mallory.identity.legacy,
        "mallory",
        &mallory.book,
        &ca.public_key(),
        &alice.identity.account,
        NOW,
        Discoverability::ContactsOnly,
        &req,
    );
    assert!(
        refused.is_err(),
        "a contacts-only receiver refuses, but has already seen the hashes"
    );
    let summary = read_capture(&write_capture(&[req]), &params()).unwrap();
    assert_eq!(summary.hashes.len(), 2);
    let found = brute_force(&summary.hashes, &PhoneRange::parse("+141555XXXXX").unwrap(), &|_| {});
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "14155551234");

    // Between mutual contacts the legacy flow works (and leaks both ways).
    let bob = device(&ca, &["bob@example.com"], &["alice@example.com"], &mut rng);
    let req = DiscoverRequest {
        record: alice.identity.legacy.clone(),
        sender_name: "Alice".into(),
    }
    .to_bytes();
    let (seen, resp) = receiver_on_discover(
        &bob.identity.legacy,
        "Bob's phone",
        &bob.book,
        &ca.public_key(),
        &alice.identity.account,
        NOW,
        Discoverability::ContactsOnly,
        &req,
    )
    .unwrap();
    assert_eq!(
        seen,
        Peer::Contact {
            identifier: "alice@example.com".into()
        }
    );
    let (receiver, name) =
        sender_on_response(&alice.book, &ca.public_key(), &bob.identity.account, NOW, &resp).unwrap();
    assert_eq!(
        receiver,
        Peer::Contact {
            identifier: "bob@example.com".into()
        }
    );
    assert_eq!(name, "Bob's phone");
}

#[test]
fn enrolment_and_identity_survive_encoding() {
    let mut rng = SecureRng::from_seed([9; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let mut reg = MemoryRegistry::new();
    let e = DeviceEnrollment::<G>::new(&params(), &["alice@example.com", "14155551111"], &mut rng).unwrap();
    // The pending enrolment and the request travel as files.
    let pending = DeviceEnrollment::<G>::from_bytes(&e.to_bytes()).unwrap();
    let req = tacit_drop::ca::EnrollmentRequest::<G>::from_bytes(&e.request().to_bytes()).unwrap();
    let issued = ca.enroll(&req, &|_| true, &mut reg, NOW, &mut rng).unwrap();
    let issued = tacit_drop::ca::Issued::<G>::from_bytes(&issued.to_bytes(), &params()).unwrap();
    let id = pending.finish(issued, &ca.public_key(), NOW).unwrap();
    let back = DropIdentity::<G>::from_bytes(&id.to_bytes()).unwrap();
    assert_eq!(back.identifiers(), id.identifiers());
    assert_eq!(back.blinded_ids, id.blinded_ids);
    // truncated or extended encodings are refused
    let bytes = id.to_bytes();
    assert!(DropIdentity::<G>::from_bytes(&bytes[..bytes.len() - 1]).is_err());
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(DropIdentity::<G>::from_bytes(&longer).is_err());
    let rb = e.request().to_bytes();
    assert!(tacit_drop::ca::EnrollmentRequest::<G>::from_bytes(&rb[..rb.len() - 3]).is_err());
}

/// Issue 9, defect 2, executed: Mallory takes Alice's account UUID (it is in her TLS
/// certificate), enrols his own number under it, and replays Alice's certified
/// blinded identifiers and the validation record Alice released to him in M3. Against
/// a CA that certifies whatever UUID it is sent, Bob (who has Alice in his book)
/// accepts Mallory as Alice; the CA's account registry stops the attack at enrolment.
#[test]
fn an_account_uuid_cannot_be_taken_over() {
    let mut rng = SecureRng::from_seed([21; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let mut registry = MemoryRegistry::new();
    let enrol = |ids: &[&str], reg: &mut MemoryRegistry, rng: &mut SecureRng| {
        let e = DeviceEnrollment::<G>::new(&params(), ids, rng).unwrap();
        let issued = ca.enroll(e.request(), &|_| true, reg, NOW - 10, rng).unwrap();
        Arc::new(e.finish(issued, &ca.public_key(), NOW).unwrap())
    };
    let alice = Device {
        identity: enrol(&["alice@example.com"], &mut registry, &mut rng),
        book: Arc::new(AddressBook::new(&["14155550666"])),
    };
    let bob = Device {
        identity: enrol(&["bob@example.com"], &mut registry, &mut rng),
        book: Arc::new(AddressBook::new(&["alice@example.com"])),
    };
    // Mallory, a contact of Alice's, gets her validation record in M3.
    let mallory_honest = Device {
        identity: enrol(&["14155550666"], &mut registry, &mut rng),
        book: Arc::new(AddressBook::new(&["alice@example.com"])),
    };
    let seen = run(&ca, &mallory_honest, &alice, Discoverability::ContactsOnly, &mut rng);
    let m3 = tacit_drop::protocol::FinishPsiResponse::<G>::from_bytes(&seen.messages_to_sender[1], &params()).unwrap();
    let alice_record = m3.record.expect("Alice released a validation record to a contact");

    let take_over = |reg: &mut MemoryRegistry, rng: &mut SecureRng| -> Result<Peer, Error> {
        // 1. enrol Mallory's number under Alice's UUID
        let e = DeviceEnrollment::<G>::for_account(&params(), alice.identity.account, &["14155550666"], rng)?;
        let issued = ca.enroll(e.request(), &|_| true, reg, NOW - 5, rng)?;
        let forged = Device {
            identity: Arc::new(e.finish(issued, &ca.public_key(), NOW)?),
            book: Arc::new(AddressBook::new(&["bob@example.com"])),
        };
        assert_eq!(forged.identity.account, alice.identity.account);
        // 2. authenticate to Bob with Alice's certified inputs and record
        let start = tacit_drop::protocol::StartPsiRequest::<G> {
            params: params().psi,
            blinded_ids: alice.identity.blinded_ids.clone(),
        }
        .to_bytes();
        let (rw, m1) = DropReceiver::on_start(
            ctx(&bob, &ca, &forged),
            Discoverability::ContactsOnly,
            book_sender(&bob, rng),
            &start,
        )?;
        let m1 = tacit_drop::protocol::StartPsiResponse::<G>::from_bytes(&m1, &params())?;
        let response = book_sender(&forged, rng).respond_to(&m1.blinded_ids.as_request(&params().psi), rng)?;
        let (rw, _m3) = rw.on_m2(&FinishPsiRequest { response }.to_bytes(), rng)?;
        let ask = Ask {
            record: Some(alice_record.clone()),
            sender_name: "Alice's phone".into(),
            files: vec![],
        };
        Ok(rw.on_ask(&ask.to_bytes())?.sender)
    };
    // Before the fix (a CA that remembers no accounts) Bob is fooled.
    assert_eq!(
        take_over(&mut MemoryRegistry::new(), &mut rng).unwrap(),
        Peer::Contact {
            identifier: "alice@example.com".into()
        }
    );
    // With the registry the CA refuses the UUID, so Mallory never gets a certificate.
    match take_over(&mut registry, &mut rng) {
        Err(Error::EnrollmentRefused(why)) => assert!(why.contains("already registered"), "{why}"),
        other => panic!("the take-over was not refused at enrolment: {other:?}"),
    }
    // Alice herself renews with a request signed by her current certificate's key.
    let e = DeviceEnrollment::<G>::renew(&alice.identity, &params(), &["alice@example.com"], &mut rng).unwrap();
    let issued = ca.enroll(e.request(), &|_| true, &mut registry, NOW, &mut rng).unwrap();
    let renewed = e.finish(issued, &ca.public_key(), NOW).unwrap();
    assert_eq!(renewed.account, alice.identity.account);
    // A renewal signed by another key, or replayed after the key changed, is refused.
    let e = DeviceEnrollment::<G>::renew(&mallory_honest.identity, &params(), &["14155550666"], &mut rng).unwrap();
    let mut stolen = e.request().clone();
    stolen.account = alice.identity.account;
    assert!(matches!(
        ca.enroll(&stolen, &|_| true, &mut registry, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    let old = DeviceEnrollment::<G>::renew(&alice.identity, &params(), &["alice@example.com"], &mut rng).unwrap();
    assert!(matches!(
        ca.enroll(old.request(), &|_| true, &mut registry, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
    // A revoked account is never certified again.
    assert!(registry.revoke(&alice.identity.account, NOW));
    let e = DeviceEnrollment::<G>::renew(&renewed, &params(), &["alice@example.com"], &mut rng).unwrap();
    match ca.enroll(e.request(), &|_| true, &mut registry, NOW, &mut rng) {
        Err(Error::EnrollmentRefused(why)) => assert!(why.contains("revoked"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// Issue 10, "who may obtain certificates": the CA issues without a challenge because
/// a recorded request is useless to whoever replays it. The first enrolment replayed:
/// the UUID is registered now. A renewal held back and delivered later: certified, but
/// for the request's own TLS key and blinded identifiers, whose secrets only the
/// device holds; replayed once more: the account's key changed, refused.
#[test]
fn a_replayed_enrolment_request_gets_nothing_useful() {
    use tacit_drop::ca::EnrollmentRequest;
    let mut rng = SecureRng::from_seed([23; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let mut registry = MemoryRegistry::new();
    let e = DeviceEnrollment::<G>::new(&params(), &["alice@example.com"], &mut rng).unwrap();
    let recorded = e.request().to_bytes();
    let issued = ca.enroll(e.request(), &|_| true, &mut registry, NOW, &mut rng).unwrap();
    let alice = e.finish(issued, &ca.public_key(), NOW).unwrap();
    let replay = EnrollmentRequest::<G>::from_bytes(&recorded).unwrap();
    match ca.enroll(&replay, &|_| true, &mut registry, NOW, &mut rng) {
        Err(Error::EnrollmentRefused(why)) => assert!(why.contains("already registered"), "{why}"),
        other => panic!("{other:?}"),
    }
    let held_back = DeviceEnrollment::<G>::renew(&alice, &params(), &["alice@example.com"], &mut rng).unwrap();
    let req = EnrollmentRequest::<G>::from_bytes(&held_back.request().to_bytes()).unwrap();
    let issued = ca.enroll(&req, &|_| true, &mut registry, NOW, &mut rng).unwrap();
    assert_eq!(
        tacit_drop::x509::spki_of_certificate(&issued.account_cert).unwrap(),
        req.tls_public_key
    );
    assert_ne!(req.tls_public_key, alice.tls_key.spki_der().unwrap());
    for entry in &req.entries {
        assert!(issued.blinded_ids.elements.contains(&entry.blinded));
    }
    // Only the holder of the pending enrolment (the αᵢ and the TLS key) can use it.
    let renewed = held_back.finish(issued, &ca.public_key(), NOW).unwrap();
    assert_eq!(renewed.account, alice.account);
    assert!(matches!(
        ca.enroll(&req, &|_| true, &mut registry, NOW, &mut rng),
        Err(Error::EnrollmentRefused(_))
    ));
}

/// Issue 9, defect 3: the TLS root in the CA's answer is authenticated by the CA key,
/// and the account certificate must chain to it.
#[test]
fn the_issued_tls_root_is_signed_by_the_ca() {
    let mut rng = SecureRng::from_seed([22; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let other = CertificateAuthority::generate(&mut rng).unwrap();
    let e = DeviceEnrollment::<G>::new(&params(), &["alice@example.com"], &mut rng).unwrap();
    let issued = ca
        .enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), NOW, &mut rng)
        .unwrap();
    // a man in the middle swaps in its own root (and keeps the CA's signature)
    let mut swapped = issued.clone();
    swapped.root_cert = other.tls_root().cert_der();
    let e2 = DeviceEnrollment::<G>::from_bytes(&e.to_bytes()).unwrap();
    assert!(matches!(
        e2.finish(swapped, &ca.public_key(), NOW),
        Err(Error::BadCertificate("TLS root certificate"))
    ));
    // or leaves the root and replaces the account certificate by one from another root
    let mut reissued = issued.clone();
    reissued.account_cert = other
        .tls_root()
        .issue(
            &e.request().account,
            &e.request().tls_public_key,
            &tacit_drop::records::Validity {
                not_before: NOW - 1,
                not_after: NOW + 1000,
            },
        )
        .unwrap();
    let e3 = DeviceEnrollment::<G>::from_bytes(&e.to_bytes()).unwrap();
    assert!(matches!(
        e3.finish(reissued, &ca.public_key(), NOW),
        Err(Error::BadCertificate("account certificate"))
    ));
    e.finish(issued, &ca.public_key(), NOW).unwrap();
}

/// Issue 32, item 3: the record slot and the device names have one size whatever is
/// in them, and their padding has one encoding (a decoder refuses anything else).
#[test]
fn ask_has_one_length_whatever_the_record_and_name() {
    let mut rng = SecureRng::from_seed([33; 32]);
    let ca = CertificateAuthority::generate(&mut rng).unwrap();
    let alice = device(&ca, &["alice@example.com"], &[], &mut rng);
    let record = alice.identity.records[0].clone();
    let ask = |record: Option<tacit_drop::records::SignedValidationRecord>, name: &str| {
        Ask {
            record,
            sender_name: name.into(),
            files: vec![],
        }
        .to_bytes()
    };
    let with = ask(Some(record.clone()), "a");
    let without = ask(None, "a much longer device name, ünicode included");
    assert_eq!(with.len(), without.len());
    assert_eq!(Ask::from_bytes(&with).unwrap().record, Some(record));
    let back = Ask::from_bytes(&without).unwrap();
    assert_eq!(back.record, None);
    assert_eq!(back.sender_name, "a much longer device name, ünicode included");
    // A name over 255 bytes is cut at a character boundary, not refused.
    let long = "é".repeat(200);
    let cut = Ask::from_bytes(&ask(None, &long)).unwrap().sender_name;
    assert_eq!(cut, "é".repeat(127));
    // A non-zero byte in an empty slot or after the name is refused.
    let slot = 3 + 1; // envelope, flag
    let mut bad = without.clone();
    bad[slot + 5] = 1;
    assert!(Ask::from_bytes(&bad).unwrap_err().to_string().contains("must be zero"));
    let name_pad = 3 + tacit_drop::protocol::RECORD_SLOT_LEN + tacit_drop::protocol::NAME_SLOT_LEN - 1;
    let mut bad = without.clone();
    bad[name_pad] = b'x';
    assert!(Ask::from_bytes(&bad).unwrap_err().to_string().contains("must be zero"));
}
