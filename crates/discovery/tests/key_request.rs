//! Issue 10, "who may obtain keys": the IBE root extracts a prefix key only for a
//! requester that proves, over a fresh challenge, a valid blessing for that name. An
//! unauthorised requester gets nothing: no blessing from a trusted root, a blessing
//! for another name, a stolen blessing without its key, a replayed answer to an old
//! challenge, a revoked or expired blessing. The requester, for its part, accepts
//! only a key for its name under the master public key it trusts.

use std::sync::Arc;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{PrimeGroup, Ristretto255};
use tacit_discovery::blessing::{self, Blessing, Principal, TrustedRoots};
use tacit_discovery::ibe::MasterPublicKey;
use tacit_discovery::key_request::{self, Error, KeyAuthority, Requester, tags};
use tacit_discovery::prefix::{self, Prefix, PrefixAuthority, PrefixKey};
use tacit_wire::{Encode, Writer};

const NOW: u64 = 1_800_000_000;
const DAY: u64 = 24 * 3600;

struct World {
    rng: SecureRng,
    home: Principal,
    home_b: Blessing,
    ibe: Arc<PrefixAuthority>,
    mpk: Arc<MasterPublicKey>,
    authority: KeyAuthority,
}

impl World {
    fn new(seed: u8) -> Self {
        let mut rng = SecureRng::from_seed([seed; 32]);
        let (home, home_b) = Principal::new_root(&mut rng, "Home", NOW + 365 * DAY).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("Home", home.public_key()).unwrap();
        let ibe = Arc::new(PrefixAuthority::generate(&mut rng));
        let mpk = Arc::new(ibe.public().clone());
        let authority = KeyAuthority::new(ibe.clone(), roots);
        World {
            rng,
            home,
            home_b,
            ibe,
            mpk,
            authority,
        }
    }

    /// A device blessed `Home/<ext>` until `not_after`.
    fn device(&mut self, ext: &str, not_after: u64) -> (Arc<Principal>, Blessing) {
        let p = Principal::generate(&mut self.rng);
        let b = self
            .home
            .bless(&self.home_b, &p.public_key(), ext, not_after, vec![])
            .unwrap();
        (Arc::new(p), b)
    }

    /// One honest exchange, in memory.
    fn ask(&mut self, who: &(Arc<Principal>, Blessing), now: u64) -> Result<PrefixKey, Error> {
        let (req, hello) = Requester::start(who.0.clone(), who.1.clone(), self.mpk.clone())?;
        let (root, challenge) = self.authority.on_hello(&hello, &mut self.rng)?;
        let (req, request) = req.on_challenge(&challenge, &mut self.rng)?;
        let (_granted, grant) = root.on_request(&request, now, &mut self.rng)?;
        req.on_grant(&grant)
    }

    /// The root's challenge nonce for a fresh connection, and the waiting root.
    fn challenge(&mut self) -> (key_request::AwaitingKeyRequest, [u8; 32]) {
        let mut w = Writer::new();
        w.put_envelope(tags::KEY_HELLO);
        let (root, ch) = self.authority.on_hello(&w.into_bytes(), &mut self.rng).unwrap();
        (root, ch[3..35].try_into().unwrap())
    }
}

fn mpk_hash(mpk: &MasterPublicKey) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(mpk.to_wire()).into()
}

/// A key request built by hand (the layout of `docs/wire.md`), signed by `signer`
/// over the documented transcript.
fn forged_request(
    nonce: &[u8; 32],
    mpk: &MasterPublicKey,
    name: &str,
    chain: &Blessing,
    signer: &Principal,
) -> Vec<u8> {
    let chain = chain.to_wire();
    let e = Ristretto255::element_bytes(&Ristretto255::mul_base(&Ristretto255::random_scalar(
        &mut SecureRng::from_os(),
    )));
    let mut t = Writer::new();
    t.put_str("tacit-discovery/key-request/v1");
    for f in [&nonce[..], &mpk_hash(mpk)[..], name.as_bytes(), &e[..], &chain[..]] {
        t.put_var_bytes(f);
    }
    let sig = signer.sign(&t.into_bytes());
    let mut w = Writer::new();
    w.put_envelope(tags::KEY_REQUEST);
    w.put_fixed(nonce);
    w.put_u8(name.len() as u8);
    w.put_fixed(name.as_bytes());
    w.put_var_bytes(&chain);
    w.put_fixed(&e);
    w.put_fixed(&sig);
    w.into_bytes()
}

#[test]
fn a_blessed_requester_gets_a_working_key_for_its_name() {
    let mut w = World::new(1);
    let cam = w.device("Camera", NOW + DAY);
    let key = w.ask(&cam, NOW).unwrap();
    assert_eq!(key.name().to_string(), "Home/Camera");
    // It opens what is encrypted to Home/* and to Home/Camera/*, nothing else.
    let ct = prefix::encrypt(&w.mpk, &Prefix::parse("Home").unwrap(), b"", b"hi", &mut w.rng).unwrap();
    assert_eq!(key.decrypt(&ct, b"").unwrap(), b"hi");
    let ct = prefix::encrypt(&w.mpk, &Prefix::parse("Home/Phone").unwrap(), b"", b"x", &mut w.rng).unwrap();
    assert!(key.decrypt(&ct, b"").is_err());
}

#[test]
fn a_requester_without_a_trusted_blessing_gets_nothing() {
    let mut w = World::new(2);
    // Mallory calls herself "Home", with her own key: the root trusts Home with
    // another key.
    let (mallory, fake_home) = Principal::new_root(&mut w.rng, "Home", NOW + DAY).unwrap();
    let e = w.ask(&(Arc::new(mallory), fake_home), NOW).unwrap_err();
    assert!(
        matches!(e, Error::Blessing(blessing::Error::RootKeyMismatch { .. })),
        "{e}"
    );
    // A root the IBE root does not trust at all.
    let (street, street_b) = Principal::new_root(&mut w.rng, "Street", NOW + DAY).unwrap();
    let visitor = Principal::generate(&mut w.rng);
    let vb = street
        .bless(&street_b, &visitor.public_key(), "Visitor", NOW + DAY, vec![])
        .unwrap();
    let e = w.ask(&(Arc::new(visitor), vb), NOW).unwrap_err();
    assert!(
        matches!(e, Error::Blessing(blessing::Error::UntrustedRoot { .. })),
        "{e}"
    );
}

#[test]
fn a_blessing_for_another_name_gets_nothing() {
    let mut w = World::new(3);
    let phone = w.device("Phone", NOW + DAY);
    // The phone asks for Home/Camera with its own (valid) chain, correctly signed.
    let (root, nonce) = w.challenge();
    let req = forged_request(&nonce, &w.mpk, "Home/Camera", &phone.1, &phone.0);
    let e = root.on_request(&req, NOW, &mut w.rng).unwrap_err();
    assert!(matches!(e, Error::NameMismatch { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "the request asks for Home/Camera but its blessing is for Home/Phone"
    );
    // …or for a prefix of its name, which would open more than its own key does.
    let (root, nonce) = w.challenge();
    let req = forged_request(&nonce, &w.mpk, "Home", &phone.1, &phone.0);
    assert!(matches!(
        root.on_request(&req, NOW, &mut w.rng).unwrap_err(),
        Error::NameMismatch { .. }
    ));
}

#[test]
fn a_stolen_blessing_without_its_key_gets_nothing() {
    let mut w = World::new(4);
    let cam = w.device("Camera", NOW + DAY);
    // Mallory copied the camera's chain (it travels in handshakes) but not its key.
    let mallory = Principal::generate(&mut w.rng);
    let (root, nonce) = w.challenge();
    let req = forged_request(&nonce, &w.mpk, "Home/Camera", &cam.1, &mallory);
    assert!(matches!(
        root.on_request(&req, NOW, &mut w.rng).unwrap_err(),
        Error::BadSignature
    ));
    // The library refuses to start a request with someone else's blessing at all.
    assert!(Requester::start(Arc::new(mallory), cam.1.clone(), w.mpk.clone()).is_err());
}

#[test]
fn a_replayed_answer_to_an_old_challenge_gets_nothing() {
    let mut w = World::new(5);
    let cam = w.device("Camera", NOW + DAY);
    // An eavesdropper records the camera's honest request…
    let (req, hello) = Requester::start(cam.0.clone(), cam.1.clone(), w.mpk.clone()).unwrap();
    let (root, challenge) = w.authority.on_hello(&hello, &mut w.rng).unwrap();
    let (_req, recorded) = req.on_challenge(&challenge, &mut w.rng).unwrap();
    let (_, grant) = root.on_request(&recorded, NOW, &mut w.rng).unwrap();
    // …and the grant it saw is of no use without the camera's ephemeral secret: the
    // grant is sealed to it. Replaying the request on a new connection is refused.
    assert!(!grant.windows(4).any(|x| x == b"Home"));
    let (root, _) = w.challenge();
    assert!(matches!(
        root.on_request(&recorded, NOW, &mut w.rng).unwrap_err(),
        Error::WrongChallenge
    ));
    // Rewriting the nonce to the new challenge breaks the camera's signature.
    let (root, fresh) = w.challenge();
    let mut rewritten = recorded.clone();
    rewritten[3..35].copy_from_slice(&fresh);
    assert!(matches!(
        root.on_request(&rewritten, NOW, &mut w.rng).unwrap_err(),
        Error::BadSignature
    ));
}

#[test]
fn a_revoked_or_expired_blessing_gets_nothing() {
    let mut w = World::new(6);
    let cam = w.device("Camera", NOW + DAY);
    let phone = w.device("Phone", NOW + DAY);
    assert!(w.ask(&cam, NOW).is_ok());
    let list = w
        .home
        .sign_revocations(&w.home_b, 1, NOW, NOW + DAY, [cam.1.id()])
        .unwrap();
    w.authority.roots().apply_revocations(&list).unwrap();
    let e = w.ask(&cam, NOW).unwrap_err();
    assert!(
        matches!(e, Error::Blessing(blessing::Error::Revoked { link: 2, .. })),
        "{e}"
    );
    assert!(w.ask(&phone, NOW).is_ok(), "only the revoked link is refused");
    let e = w.ask(&phone, NOW + DAY + 1).unwrap_err();
    assert!(matches!(e, Error::Blessing(blessing::Error::Expired { .. })), "{e}");
}

#[test]
fn the_requester_accepts_only_its_own_key_from_the_authority_it_trusts() {
    let mut w = World::new(7);
    let cam = w.device("Camera", NOW + DAY);
    // A root serving another master key is noticed at the challenge.
    let other = World::new(8);
    let (req, hello) = Requester::start(cam.0.clone(), cam.1.clone(), other.mpk.clone()).unwrap();
    let (_root, challenge) = w.authority.on_hello(&hello, &mut w.rng).unwrap();
    assert!(matches!(
        req.on_challenge(&challenge, &mut w.rng).unwrap_err(),
        Error::WrongAuthority
    ));
    // A tampered grant does not decrypt.
    let (req, hello) = Requester::start(cam.0.clone(), cam.1.clone(), w.mpk.clone()).unwrap();
    let (root, challenge) = w.authority.on_hello(&hello, &mut w.rng).unwrap();
    let (req, request) = req.on_challenge(&challenge, &mut w.rng).unwrap();
    let (_, mut grant) = root.on_request(&request, NOW, &mut w.rng).unwrap();
    let n = grant.len();
    grant[n - 1] ^= 1;
    assert!(matches!(req.on_grant(&grant).unwrap_err(), Error::Decrypt));
    // A refusal surfaces with its reason.
    let (req, hello) = Requester::start(cam.0.clone(), cam.1.clone(), w.mpk.clone()).unwrap();
    let refusal = tacit_wire::ErrorMessage::new("not today").to_wire();
    drop(hello);
    assert_eq!(
        req.on_challenge(&refusal, &mut w.rng).unwrap_err().to_string(),
        "the IBE root refused: not today"
    );
    // The IBE root's own extraction is unchanged for the operator path.
    let k = w
        .ibe
        .extract(&Prefix::parse("Home/Camera").unwrap(), &mut w.rng)
        .unwrap();
    assert_eq!(k.name().to_string(), "Home/Camera");
}

/// One exchange with `authority`, in memory.
fn ask_authority(
    authority: &KeyAuthority,
    who: &(Arc<Principal>, Blessing),
    mpk: &Arc<MasterPublicKey>,
    rng: &mut SecureRng,
) -> Result<PrefixKey, Error> {
    let (req, hello) = Requester::start(who.0.clone(), who.1.clone(), mpk.clone())?;
    let (root, challenge) = authority.on_hello(&hello, rng)?;
    let (req, request) = req.on_challenge(&challenge, rng)?;
    let (_granted, grant) = root.on_request(&request, NOW, rng)?;
    req.on_grant(&grant)
}

/// Issue 32, item 6: IBE identities name only names. An IBE root that trusts two
/// naming roots called `Home` (two households, or Mallory's own) gave a member blessed
/// under the second the key for `Home`, which opens every advertisement and private
/// server identity meant for the first one's `Home/*`. Now the root refuses a key to
/// a chain whose root name it trusts under more than one key, unless those keys are
/// marked as one root's rollover.
#[test]
fn a_second_root_of_the_same_name_gets_no_key_to_the_first_ones_namespace() {
    let mut w = World::new(77);
    let (mallory_root, mallory_b) = Principal::new_root(&mut w.rng, "Home", NOW + 365 * DAY).unwrap();
    let mut roots = w.authority.roots().clone();
    roots.add("Home", mallory_root.public_key()).unwrap();
    let authority = KeyAuthority::new(w.ibe.clone(), roots);
    let member = Principal::generate(&mut w.rng);
    let member_b = mallory_root
        .bless(&mallory_b, &member.public_key(), "Mallory", NOW + DAY, vec![])
        .unwrap();
    let who = (Arc::new(member), member_b);
    match ask_authority(&authority, &who, &w.mpk.clone(), &mut w.rng) {
        Err(e) => assert!(e.to_string().contains("trusts the root name Home under 2 keys"), "{e}"),
        Ok(key) => {
            // The damage: what the first Home's camera encrypts to Home/* opens.
            let ct = prefix::encrypt(
                &w.mpk,
                &Prefix::parse("Home").unwrap(),
                b"bid",
                b"the camera's identity",
                &mut w.rng,
            )
            .unwrap();
            panic!(
                "a member of another root named Home got a key that opens Home/*: {:?}",
                key.decrypt(&ct, b"bid")
                    .map(|m| String::from_utf8_lossy(&m).into_owned())
            );
        }
    }
    // A member of the first Home is refused as well while the name is ambiguous.
    let honest = w.device("Phone", NOW + DAY);
    assert!(ask_authority(&authority, &honest, &w.mpk.clone(), &mut w.rng).is_err());
}

/// A root that rotates its key: the old and the new key, marked as one root's
/// rollover, both give members their keys (the keys work for the same names).
#[test]
fn a_marked_rollover_keeps_granting_under_both_keys() {
    let mut w = World::new(78);
    let (new_home, new_home_b) = Principal::new_root(&mut w.rng, "Home", NOW + 365 * DAY).unwrap();
    let mut roots = w.authority.roots().clone();
    roots.add("Home", new_home.public_key()).unwrap();
    let plain = KeyAuthority::new(w.ibe.clone(), roots.clone());
    assert_eq!(plain.ambiguous_root_names(), [("Home".to_string(), 2)]);
    let authority = KeyAuthority::new(w.ibe.clone(), roots).with_rollover("Home");
    assert!(authority.ambiguous_root_names().is_empty());
    let old_member = w.device("Phone", NOW + DAY);
    let member = Principal::generate(&mut w.rng);
    let member_b = new_home
        .bless(&new_home_b, &member.public_key(), "Tablet", NOW + DAY, vec![])
        .unwrap();
    let mpk = w.mpk.clone();
    let k1 = ask_authority(&authority, &old_member, &mpk, &mut w.rng).unwrap();
    let k2 = ask_authority(&authority, &(Arc::new(member), member_b), &mpk, &mut w.rng).unwrap();
    let ct = prefix::encrypt(&w.mpk, &Prefix::parse("Home").unwrap(), b"", b"x", &mut w.rng).unwrap();
    assert_eq!(k1.decrypt(&ct, b"").unwrap(), b"x");
    assert_eq!(k2.decrypt(&ct, b"").unwrap(), b"x");
}
