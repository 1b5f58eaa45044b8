//! Blessings against deviating peers: every check of `Blessing::validate` and of the
//! strict decoders is tripped by a chain a dishonest or careless peer could present
//! (paper §3: a principal "validates its peer's certificate chain, and extracts the
//! name bound to the certificate chain").

use proptest::prelude::*;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::sign::VerifyingKey;
use tacit_discovery::blessing::{
    Blessing, Caveat, Certificate, Error, MAX_DEPTH, Name, OpaqueCaveat, Policy, PrefixPolicy, Principal, TrustedRoot,
    TrustedRoots, tags,
};
use tacit_wire::{Decode, Encode, Writer};

/// 2026-01-01T00:00:00Z.
const NOW: u64 = 1_767_225_600;
const DAY: u64 = 86_400;

struct Pki {
    corp: Principal,
    tech: Principal,
    bob: Principal,
    corp_b: Blessing,
    tech_b: Blessing,
    bob_b: Blessing,
    roots: TrustedRoots,
}

/// `HomeSecurityCorp` → `Technician` → `Bob`, with caveats on the last two links so
/// that caveat tampering can be tested.
fn pki() -> Pki {
    let mut corp = Principal::from_seed(&[1; 32]);
    let tech = Principal::from_seed(&[2; 32]);
    let bob = Principal::from_seed(&[3; 32]);
    let corp_b = corp.bless_self("HomeSecurityCorp", NOW + 365 * DAY).unwrap();
    let tech_b = corp
        .bless(
            &corp_b,
            &tech.public_key(),
            "Technician",
            NOW + 90 * DAY,
            vec![Caveat::Other(OpaqueCaveat::new(0x07, b"audit".to_vec()).unwrap())],
        )
        .unwrap();
    let bob_b = tech
        .bless(
            &tech_b,
            &bob.public_key(),
            "Bob",
            NOW + 30 * DAY,
            vec![Caveat::NotBefore(NOW - DAY)],
        )
        .unwrap();
    let mut roots = TrustedRoots::new();
    roots.add("HomeSecurityCorp", corp.public_key()).unwrap();
    Pki {
        corp,
        tech,
        bob,
        corp_b,
        tech_b,
        bob_b,
        roots,
    }
}

type Parts = (String, VerifyingKey, u64, Vec<Caveat>, [u8; 64]);

/// The chain with link `i` (from 0) rebuilt from its fields after `f` changed them.
fn tamper(b: &Blessing, i: usize, f: impl FnOnce(&mut Parts)) -> Blessing {
    let mut links = b.links().to_vec();
    let c = &links[i];
    let mut p: Parts = (
        c.extension().to_owned(),
        c.public_key(),
        c.not_after(),
        c.caveats().to_vec(),
        *c.signature(),
    );
    f(&mut p);
    links[i] = Certificate::from_parts(&p.0, p.1, p.2, p.3, p.4).unwrap();
    Blessing::from_links(links).unwrap()
}

fn other_key(seed: u8) -> VerifyingKey {
    Principal::from_seed(&[seed; 32]).public_key()
}

#[test]
fn valid_chain_yields_name_and_key() {
    let p = pki();
    let v = p.bob_b.validate(&p.roots, NOW).unwrap();
    assert_eq!(v.name(), &Name::parse("HomeSecurityCorp/Technician/Bob").unwrap());
    assert_eq!(v.public_key(), p.bob.public_key());
    assert_eq!(v.expires_at(), NOW + 30 * DAY);
    assert_eq!(p.bob_b.public_key(), p.bob.public_key());
    assert_eq!(p.bob_b.root_name(), "HomeSecurityCorp");
    assert_eq!(p.bob_b.unverified_name().to_string(), "HomeSecurityCorp/Technician/Bob");
    let sig = p.bob.sign(b"session");
    v.verify(b"session", &sig).unwrap();
    // Signatures by another principal of the chain are not Bob's.
    assert!(v.verify(b"session", &p.tech.sign(b"session")).is_err());
    assert!(p.tech_b.validate(&p.roots, NOW).is_ok());
    assert!(p.corp_b.validate(&p.roots, NOW).is_ok());
}

#[test]
fn three_link_chain_size() {
    let p = pki();
    let plain = p
        .tech
        .bless(&p.tech_b, &p.bob.public_key(), "Bob", NOW + DAY, vec![])
        .unwrap();
    let bytes = plain.to_wire();
    println!(
        "HomeSecurityCorp/Technician/Bob (caveats of the middle link included): {} bytes",
        bytes.len()
    );
    assert!(bytes.len() <= 360, "{} bytes", bytes.len());
    // Without any caveat: 1 + 122 + 116 + 109.
    let corp2 = Principal::from_seed(&[1; 32]);
    let t = corp2
        .bless(&p.corp_b, &p.tech.public_key(), "Technician", NOW + DAY, vec![])
        .unwrap();
    let b = p.tech.bless(&t, &p.bob.public_key(), "Bob", NOW + DAY, vec![]).unwrap();
    println!(
        "HomeSecurityCorp/Technician/Bob without caveats: {} bytes",
        b.to_wire().len()
    );
    assert_eq!(b.to_wire().len(), 348);
    assert_eq!(b.encoded_len(), 348);
    assert_eq!(b.to_file_bytes().len(), 351);
}

#[test]
fn untrusted_root() {
    let p = pki();
    let e = p.bob_b.validate(&TrustedRoots::new(), NOW).unwrap_err();
    assert_eq!(e.to_string(), "root HomeSecurityCorp is not trusted");
    let mut others = TrustedRoots::new();
    others.add("OtherCorp", p.corp.public_key()).unwrap();
    assert_eq!(
        p.bob_b.validate(&others, NOW).unwrap_err(),
        Error::UntrustedRoot {
            root: "HomeSecurityCorp".into()
        }
    );
}

#[test]
fn root_with_right_name_but_wrong_key() {
    let p = pki();
    let mut roots = TrustedRoots::new();
    roots.add("HomeSecurityCorp", other_key(42)).unwrap();
    assert!(matches!(
        p.bob_b.validate(&roots, NOW),
        Err(Error::RootKeyMismatch { .. })
    ));
    // An impostor root with the trusted name and its own key, blessing its own "Bob".
    let (mallory, fake_root) =
        Principal::new_root(&mut SecureRng::from_seed([66; 32]), "HomeSecurityCorp", NOW + DAY).unwrap();
    let fake = mallory
        .bless(&fake_root, &p.bob.public_key(), "Technician", NOW + DAY, vec![])
        .unwrap();
    assert_eq!(fake.unverified_name().to_string(), "HomeSecurityCorp/Technician");
    let e = fake.validate(&p.roots, NOW).unwrap_err();
    assert!(e.to_string().contains("trusted, but with another key"), "{e}");
    // Trusting both keys for the name (key rollover) accepts both.
    roots.add("HomeSecurityCorp", p.corp.public_key()).unwrap();
    assert!(p.bob_b.validate(&roots, NOW).is_ok());
}

#[test]
fn expiry_is_inclusive_and_names_the_link() {
    let p = pki();
    // Technician expires first: clamping made Bob's link expire no later.
    let tech = p
        .corp
        .bless(&p.corp_b, &p.tech.public_key(), "Technician", NOW + 10, vec![])
        .unwrap();
    let bob = p
        .tech
        .bless(&tech, &p.bob.public_key(), "Bob", NOW + 30 * DAY, vec![])
        .unwrap();
    assert_eq!(bob.links()[2].not_after(), NOW + 10, "clamped to the parent");
    assert!(
        bob.validate(&p.roots, NOW + 10).is_ok(),
        "now = not_after is still valid"
    );
    let e = bob.validate(&p.roots, NOW + 11).unwrap_err();
    assert_eq!(
        e.to_string(),
        "link 2 (Technician) expired at 2026-01-01T00:00:10Z (now 2026-01-01T00:00:11Z)"
    );

    // A middle link that expires through an ExpiresAt caveat.
    let tech = p
        .corp
        .bless(
            &p.corp_b,
            &p.tech.public_key(),
            "Technician",
            NOW + DAY,
            vec![Caveat::ExpiresAt(NOW + 5)],
        )
        .unwrap();
    let bob = p
        .tech
        .bless(&tech, &p.bob.public_key(), "Bob", NOW + DAY, vec![])
        .unwrap();
    assert_eq!(bob.expires_at(), NOW + 5);
    assert!(bob.validate(&p.roots, NOW + 5).is_ok());
    assert!(matches!(
        bob.validate(&p.roots, NOW + 6),
        Err(Error::Expired { link: 2, .. })
    ));
    // Not yet valid.
    assert!(matches!(
        p.bob_b.validate(&p.roots, NOW - DAY - 1),
        Err(Error::NotYetValid { link: 3, .. })
    ));
}

#[test]
fn tampering_with_any_field_of_any_link_is_detected() {
    let p = pki();
    let b = &p.bob_b;
    for i in 0..b.depth() {
        let link = i + 1;
        let mut variants: Vec<(&str, Blessing)> = vec![
            ("extension", tamper(b, i, |x| x.0.push('x'))),
            ("not_after", tamper(b, i, |x| x.2 += 1)),
            ("signature", tamper(b, i, |x| x.4[0] ^= 1)),
            ("signature S", tamper(b, i, |x| x.4[40] ^= 1)),
            ("added caveat", tamper(b, i, |x| x.3.push(Caveat::ExpiresAt(u64::MAX)))),
            ("key", tamper(b, i, |x| x.1 = other_key(77))),
        ];
        if !b.links()[i].caveats().is_empty() {
            variants.push(("removed caveat", tamper(b, i, |x| x.3.clear())));
            variants.push((
                "changed caveat",
                tamper(b, i, |x| {
                    x.3[0] = match &x.3[0] {
                        Caveat::NotBefore(t) => Caveat::NotBefore(t - 1),
                        Caveat::Other(o) => Caveat::Other(OpaqueCaveat::new(o.kind(), b"audiT".to_vec()).unwrap()),
                        Caveat::ExpiresAt(t) => Caveat::ExpiresAt(t - 1),
                    }
                }),
            ));
        }
        for (what, t) in variants {
            let e = t.validate(&p.roots, NOW).unwrap_err();
            if i == 0 && what == "extension" {
                assert!(matches!(e, Error::UntrustedRoot { .. }), "{what}: {e}");
            } else if i == 0 && what == "key" {
                assert!(matches!(e, Error::RootKeyMismatch { .. }), "{what}: {e}");
                // Even with the tampered root trusted, its self-signature fails.
                let mut roots = p.roots.clone();
                roots.insert(TrustedRoot::of(&t)).unwrap();
                assert!(matches!(
                    t.validate(&roots, NOW),
                    Err(Error::BadSignature { link: 1, .. })
                ));
            } else {
                assert!(
                    matches!(&e, Error::BadSignature { link: l, .. } if *l == link),
                    "link {link} {what}: {e}"
                );
            }
            // The tampered chain still round-trips: the decoder is not the defence.
            assert_eq!(Blessing::from_wire(&t.to_wire()).unwrap(), t);
        }
    }
    assert_eq!(
        tamper(b, 2, |x| x.4[0] ^= 1)
            .validate(&p.roots, NOW)
            .unwrap_err()
            .to_string(),
        "signature of link 3 (Bob) does not verify"
    );
}

#[test]
fn spliced_links_are_refused() {
    let p = pki();
    // The technician also holds HomeSecurityCorp/Contractor. Its key signs Bob's link in
    // both chains with the same body, yet the link of one chain does not verify in the
    // other: each link is bound to the digest of the chain above it.
    let contractor = p
        .corp
        .bless(&p.corp_b, &p.tech.public_key(), "Contractor", NOW + 90 * DAY, vec![])
        .unwrap();
    let bob_c = p
        .tech
        .bless(&contractor, &p.bob.public_key(), "Bob", NOW + 30 * DAY, vec![])
        .unwrap();
    assert!(bob_c.validate(&p.roots, NOW).is_ok());
    let bob_t = p
        .tech
        .bless(&p.tech_b, &p.bob.public_key(), "Bob", NOW + 30 * DAY, vec![])
        .unwrap();
    // Same signer, same body.
    assert_eq!(bob_c.links()[2].extension(), bob_t.links()[2].extension());
    assert_eq!(bob_c.links()[2].not_after(), bob_t.links()[2].not_after());
    let mut spliced = contractor.links().to_vec();
    spliced.push(bob_t.links()[2].clone());
    let spliced = Blessing::from_links(spliced).unwrap();
    assert!(matches!(
        spliced.validate(&p.roots, NOW),
        Err(Error::BadSignature { link: 3, .. })
    ));

    // A link from a chain under another root.
    let (other, other_root) = Principal::new_root(&mut SecureRng::from_seed([5; 32]), "Other", NOW + DAY).unwrap();
    let t2 = other
        .bless(&other_root, &p.tech.public_key(), "Technician", NOW + DAY, vec![])
        .unwrap();
    let b2 = p
        .tech
        .bless(&t2, &p.bob.public_key(), "Bob", NOW + DAY, vec![])
        .unwrap();
    let mut spliced = p.tech_b.links().to_vec();
    spliced.push(b2.links()[2].clone());
    assert!(matches!(
        Blessing::from_links(spliced).unwrap().validate(&p.roots, NOW),
        Err(Error::BadSignature { link: 3, .. })
    ));
    // Grafting the root of one chain onto the rest of another.
    let mut roots = p.roots.clone();
    roots.add("Other", other.public_key()).unwrap();
    let mut grafted = vec![other_root.links()[0].clone()];
    grafted.extend_from_slice(&p.bob_b.links()[1..]);
    assert!(matches!(
        Blessing::from_links(grafted).unwrap().validate(&roots, NOW),
        Err(Error::BadSignature { link: 2, .. })
    ));
}

#[test]
fn reordered_links_are_refused() {
    let p = pki();
    let mut links = p.bob_b.links().to_vec();
    links.swap(1, 2);
    assert!(matches!(
        Blessing::from_links(links).unwrap().validate(&p.roots, NOW),
        Err(Error::BadSignature { link: 2, .. })
    ));
    let mut links = p.bob_b.links().to_vec();
    links.swap(0, 1);
    assert!(matches!(
        Blessing::from_links(links).unwrap().validate(&p.roots, NOW),
        Err(Error::UntrustedRoot { .. })
    ));
    let mut links = p.bob_b.links().to_vec();
    links.reverse();
    assert!(Blessing::from_links(links).unwrap().validate(&p.roots, NOW).is_err());
}

#[test]
fn truncated_chains() {
    let p = pki();
    // Dropping the last link gives back the parent's blessing, bound to the parent's
    // key: useless to anyone without the technician's secret key.
    let cut = Blessing::from_links(p.bob_b.links()[..2].to_vec()).unwrap();
    let v = cut.validate(&p.roots, NOW).unwrap();
    assert_eq!(v.name().as_str(), "HomeSecurityCorp/Technician");
    assert_eq!(v.public_key(), p.tech.public_key());
    assert_ne!(v.public_key(), p.bob.public_key());
    assert!(v.verify(b"m", &p.bob.sign(b"m")).is_err());
    // Dropping the root.
    let headless = Blessing::from_links(p.bob_b.links()[1..].to_vec()).unwrap();
    assert_eq!(
        headless.validate(&p.roots, NOW).unwrap_err().to_string(),
        "root Technician is not trusted"
    );
    // Even if "Technician" were trusted with the technician's key, the link is not
    // self-signed.
    let mut roots = TrustedRoots::new();
    roots.add("Technician", p.tech.public_key()).unwrap();
    assert!(matches!(
        headless.validate(&roots, NOW),
        Err(Error::BadSignature { link: 1, .. })
    ));
    assert_eq!(Blessing::from_links(vec![]).unwrap_err(), Error::EmptyChain);
    // Truncated bytes never decode.
    let bytes = p.bob_b.to_wire();
    for n in 0..bytes.len() {
        assert!(Blessing::from_wire(&bytes[..n]).is_err(), "prefix of {n} bytes");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(Blessing::from_wire(&longer).is_err());
    assert!(Blessing::from_wire(&[0]).is_err());
}

#[test]
fn depth_is_limited() {
    let mut rng = SecureRng::from_seed([8; 32]);
    let (p, mut b) = Principal::new_root(&mut rng, "R", NOW + DAY).unwrap();
    for i in 2..=MAX_DEPTH {
        b = p
            .bless(&b, &p.public_key(), &format!("L{i}"), NOW + DAY, vec![])
            .unwrap();
    }
    let mut roots = TrustedRoots::new();
    roots.insert(TrustedRoot::of(&b)).unwrap();
    assert_eq!(b.validate(&roots, NOW).unwrap().name().depth(), 8);
    let e = p.bless(&b, &p.public_key(), "L9", NOW + DAY, vec![]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "a blessing has at most 8 certificates; this one would have 9"
    );
    let mut nine = b.links().to_vec();
    nine.push(b.links()[7].clone());
    assert_eq!(
        Blessing::from_links(nine.clone()).unwrap_err(),
        Error::ChainTooDeep { depth: 9 }
    );
    // On the wire: a count of 9 is refused before anything else is read.
    let mut w = Writer::new();
    w.put_u8(9);
    for l in &nine {
        l.encode(&mut w);
    }
    let e = Blessing::from_wire(&w.into_bytes()).unwrap_err();
    assert!(e.to_string().contains("has 9 elements; the limit is 8"), "{e}");
}

#[test]
fn name_length_is_limited() {
    let mut rng = SecureRng::from_seed([9; 32]);
    let x64 = "x".repeat(64);
    let (p, mut b) = Principal::new_root(&mut rng, &x64, NOW + DAY).unwrap();
    for _ in 0..2 {
        b = p.bless(&b, &p.public_key(), &x64, NOW + DAY, vec![]).unwrap();
    }
    assert_eq!(b.unverified_name().as_str().len(), 194);
    assert!(p.bless(&b, &p.public_key(), &"y".repeat(60), NOW + DAY, vec![]).is_ok());
    let e = p
        .bless(&b, &p.public_key(), &"y".repeat(61), NOW + DAY, vec![])
        .unwrap_err();
    assert_eq!(e.to_string(), "name is 256 bytes long; the limit is 255");
    // From parts and on the wire.
    let mut links = b.links().to_vec();
    links.push(Certificate::from_parts(&"y".repeat(61), p.public_key(), NOW, vec![], [0; 64]).unwrap());
    assert_eq!(
        Blessing::from_links(links.clone()).unwrap_err(),
        Error::NameTooLong { len: 256 }
    );
    let mut w = Writer::new();
    w.put_u8(4);
    for l in &links {
        l.encode(&mut w);
    }
    let e = Blessing::from_wire(&w.into_bytes()).unwrap_err();
    assert!(
        e.to_string()
            .contains("blessing name is 256 bytes long; the limit is 255"),
        "{e}"
    );
    // A 65-byte component.
    assert!(p.bless(&b, &p.public_key(), &"z".repeat(65), NOW, vec![]).is_err());
    assert!(Principal::new_root(&mut rng, &"z".repeat(65), NOW).is_err());
}

#[test]
fn empty_and_forbidden_components() {
    let p = pki();
    assert_eq!(
        Name::parse("HomeSecurityCorp//Bob").unwrap_err().to_string(),
        "name component 2 is empty"
    );
    assert_eq!(
        p.tech
            .bless(&p.tech_b, &p.bob.public_key(), "", NOW, vec![])
            .unwrap_err()
            .to_string(),
        "extension is empty"
    );
    for bad in ["a/b", "*", "a b", "a,b", "\u{202E}baB", "tab\t"] {
        assert!(
            p.tech.bless(&p.tech_b, &p.bob.public_key(), bad, NOW, vec![]).is_err(),
            "{bad:?}"
        );
        assert!(Certificate::from_parts(bad, p.bob.public_key(), NOW, vec![], [0; 64]).is_err());
    }
    let mut rng = SecureRng::from_seed([4; 32]);
    assert_eq!(
        Principal::new_root(&mut rng, "", NOW).unwrap_err().to_string(),
        "root name is empty"
    );
    assert!(Principal::new_root(&mut rng, "Home/Corp", NOW).is_err());

    // On the wire: a zero-length extension in link 2, and a '/' inside one.
    let bytes = p.bob_b.to_wire();
    let link2 = 1 + p.bob_b.links()[0].encoded_len();
    let mut w = Writer::new();
    w.put_fixed(&bytes[..link2]);
    w.put_u8(0);
    w.put_fixed(&bytes[link2 + 1 + "Technician".len()..]);
    let e = Blessing::from_wire(&w.into_bytes()).unwrap_err();
    assert!(e.to_string().contains("name component 2 is empty"), "{e}");
    let mut slash = bytes.clone();
    slash[link2 + 1 + 4] = b'/';
    let e = Blessing::from_wire(&slash).unwrap_err();
    assert!(
        e.to_string()
            .contains("name component 2 contains the forbidden character '/'"),
        "{e}"
    );
}

#[test]
fn weak_keys_are_refused_on_decode() {
    let p = pki();
    let bytes = p.bob_b.to_wire();
    let link3 = 1 + p.bob_b.links()[0].encoded_len() + p.bob_b.links()[1].encoded_len();
    let key_at = link3 + 1 + "Bob".len();
    assert_eq!(&bytes[key_at..key_at + 32], p.bob.public_key().to_bytes());
    let mut identity = [0u8; 32];
    identity[0] = 1;
    // The identity, and a point of order 8 (the other small-order encodings).
    let order8 = {
        let mut k = [0u8; 32];
        k.copy_from_slice(&[
            0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f, 0x2a, 0x20,
            0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a,
        ]);
        k
    };
    for weak in [identity, order8] {
        let mut b = bytes.clone();
        b[key_at..key_at + 32].copy_from_slice(&weak);
        let e = Blessing::from_wire(&b).unwrap_err();
        assert!(e.to_string().contains("public key"), "{e}");
    }
}

#[test]
fn file_forms() {
    let p = pki();
    let f = p.bob_b.to_file_bytes();
    assert_eq!(&f[..3], &[1, (tags::BLESSING >> 8) as u8, tags::BLESSING as u8]);
    assert_eq!(Blessing::from_file_bytes(&f).unwrap(), p.bob_b);
    assert!(Blessing::from_file_bytes(&p.bob_b.to_wire()).is_err());
    let mut wrong = f.clone();
    wrong[2] = tags::PRINCIPAL as u8;
    assert!(Blessing::from_file_bytes(&wrong).is_err());

    let mut bob = Principal::from_seed(&[3; 32]);
    bob.add_blessing(p.bob_b.clone()).unwrap();
    let file = bob.to_file_bytes();
    let back = Principal::from_file_bytes(&file).unwrap();
    assert_eq!(back.blessings(), bob.blessings());
    assert!(Principal::from_file_bytes(&f).is_err());

    let roots = TrustedRoots::from_file_bytes(&p.roots.to_file_bytes()).unwrap();
    assert_eq!(roots, p.roots);
}

#[test]
fn policies_match_at_component_boundaries() {
    let p = pki();
    let v = p.bob_b.validate(&p.roots, NOW).unwrap();
    let yes = [
        "HomeSecurityCorp/*",
        "HomeSecurityCorp/Technician/*",
        "HomeSecurityCorp/Technician/Bob/*",
    ];
    let no = [
        "HomeSecurityCorp/Tech/*",
        "HomeSecurityCorp/Technician/Bo/*",
        "HomeSecurityCorp/Technician/Bob/Phone/*",
        "Home/*",
        "Technician/*",
    ];
    for s in yes {
        assert!(v.satisfies(&s.parse::<Policy>().unwrap()), "{s}");
    }
    for s in no {
        assert!(!v.satisfies(&s.parse::<Policy>().unwrap()), "{s}");
    }
    let abp = PrefixPolicy::parse("a/b/*").unwrap();
    assert!(abp.matches(&Name::parse("a/b").unwrap()));
    assert!(abp.matches(&Name::parse("a/b/c").unwrap()));
    assert!(!abp.matches(&Name::parse("a/bc").unwrap()));
    let set = Policy::parse("Alice/*,HomeSecurityCorp/Technician/*").unwrap();
    assert!(v.satisfies(&set));
    assert_eq!(set.matching(v.name()), Some(&set.prefixes()[1]));
}

/// Exhaustive: every single-bit flip (and two other masks) at every position of a
/// three-link chain either fails to decode or fails to validate.
#[test]
fn every_byte_is_authenticated() {
    let p = pki();
    let bytes = p.bob_b.to_wire();
    for i in 0..bytes.len() {
        for mask in [0x01u8, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            if let Ok(chain) = Blessing::from_wire(&b) {
                assert!(
                    chain.validate(&p.roots, NOW).is_err(),
                    "byte {i} ^ {mask:#04x} still validates"
                );
            }
        }
    }
}

/// A random chain of depth 1..=4 with random extensions, expiries and caveats.
fn arb_chain() -> impl Strategy<Value = (Blessing, TrustedRoots)> {
    let link = (
        "[A-Za-z0-9._@-]{1,12}",
        any::<u8>(),
        0u64..(400 * DAY),
        proptest::collection::vec(
            prop_oneof![
                (0u64..10 * DAY).prop_map(|t| Caveat::ExpiresAt(NOW + t)),
                (0u64..10 * DAY).prop_map(|t| Caveat::NotBefore(NOW - t)),
                (0u8..0x80, proptest::collection::vec(any::<u8>(), 0..8))
                    .prop_map(|(k, d)| Caveat::Other(OpaqueCaveat::new(k, d).unwrap())),
            ],
            0..3,
        ),
    );
    (any::<u8>(), proptest::collection::vec(link, 1..=4)).prop_map(|(seed, links)| {
        let mut signer = Principal::from_seed(&[seed; 32]);
        let mut chain = signer.bless_self(&links[0].0, NOW + links[0].2).unwrap();
        let mut roots = TrustedRoots::new();
        roots.insert(TrustedRoot::of(&chain)).unwrap();
        for (ext, k, life, caveats) in &links[1..] {
            let child = Principal::from_seed(&[*k; 32]);
            chain = signer
                .bless(&chain, &child.public_key(), ext, NOW + life, caveats.clone())
                .unwrap();
            signer = child;
        }
        (chain, roots)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn encode_decode_round_trips((chain, roots) in arb_chain(), later in 0u64..(20 * DAY)) {
        let bytes = chain.to_wire();
        prop_assert_eq!(bytes.len(), chain.encoded_len());
        let back = Blessing::from_wire(&bytes).unwrap();
        prop_assert_eq!(&back, &chain);
        prop_assert_eq!(back.to_wire(), bytes);
        prop_assert_eq!(Blessing::from_file_bytes(&chain.to_file_bytes()).unwrap(), chain.clone());
        // Validity matches the plain rule: valid iff `now` is within every link's window.
        let now = NOW - DAY + later;
        let ok = chain.links().iter().all(|l| {
            now <= l.not_after()
                && l.caveats().iter().all(|c| match c {
                    Caveat::ExpiresAt(t) => now <= *t,
                    Caveat::NotBefore(t) => now >= *t,
                    Caveat::Other(_) => true,
                })
        });
        prop_assert_eq!(chain.validate(&roots, now).is_ok(), ok);
        if let Ok(v) = chain.validate(&roots, now) {
            prop_assert_eq!(v.name(), &chain.unverified_name());
            prop_assert_eq!(v.public_key(), chain.public_key());
        }
    }

    #[test]
    fn any_single_byte_change_is_caught(
        (chain, roots) in arb_chain(),
        pos in any::<prop::sample::Index>(),
        xor in 1u8..=255,
    ) {
        // Every generated chain is valid at NOW (expiries ≥ NOW, NotBefore ≤ NOW).
        prop_assert!(chain.validate(&roots, NOW).is_ok());
        let mut bytes = chain.to_wire();
        let i = pos.index(bytes.len());
        bytes[i] ^= xor;
        if let Ok(t) = Blessing::from_wire(&bytes) {
            prop_assert!(t != chain);
            prop_assert!(t.validate(&roots, NOW).is_err(), "byte {} ^ {:#04x} still validates", i, xor);
        }
    }

    #[test]
    fn decoding_random_bytes_never_panics(b in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Ok(chain) = Blessing::from_wire(&b) {
            prop_assert_eq!(&chain.to_wire(), &b);
        }
        let _ = Principal::from_file_bytes(&b);
        let _ = TrustedRoots::from_file_bytes(&b);
    }
}

/// The body of the `discovery_blessing` fuzz target (kept identical), run on valid
/// encodings of every kind and on their single-byte mutations.
fn fuzz_checks(data: &[u8]) {
    use tacit_discovery::blessing::PrefixPolicy;
    if let Ok(b) = Blessing::from_wire(data) {
        assert_eq!(b.to_wire(), data);
        assert_eq!(b.encoded_len(), data.len());
        let mut roots = TrustedRoots::new();
        let _ = roots.insert(TrustedRoot::of(&b));
        let _ = b.validate(&roots, 1_767_225_600);
    }
    if let Ok(b) = Blessing::from_file_bytes(data) {
        assert_eq!(b.to_file_bytes(), data);
    }
    if let Ok(p) = Principal::from_file_bytes(data) {
        assert_eq!(p.to_file_bytes().as_slice(), data);
    }
    if let Ok(r) = TrustedRoots::from_file_bytes(data) {
        assert_eq!(r.to_file_bytes(), data);
    }
    if let Ok(n) = Name::from_wire(data) {
        assert_eq!(n.to_wire(), data);
    }
    if let Ok(p) = Policy::from_wire(data) {
        assert_eq!(p.to_wire(), data);
    }
    if let Ok(s) = core::str::from_utf8(data) {
        if let Ok(n) = Name::parse(s) {
            assert_eq!(n.to_string(), s);
        }
        if let Ok(p) = PrefixPolicy::parse(s) {
            assert_eq!(p.to_string(), s);
        }
        if let Ok(p) = Policy::parse(s) {
            assert_eq!(Policy::parse(&p.to_string()).ok(), Some(p));
        }
    }
}

#[test]
fn fuzz_target_body_on_valid_inputs_and_mutations() {
    let p = pki();
    let mut bob = Principal::from_seed(&[3; 32]);
    bob.add_blessing(p.bob_b.clone()).unwrap();
    let policy = Policy::parse("HomeSecurityCorp/Technician/*, Alice/*").unwrap();
    let inputs: Vec<Vec<u8>> = vec![
        p.bob_b.to_wire(),
        p.bob_b.to_file_bytes(),
        bob.to_file_bytes().to_vec(),
        p.roots.to_file_bytes(),
        p.bob_b.unverified_name().to_wire(),
        policy.to_wire(),
        b"HomeSecurityCorp/Technician/*, Alice/*".to_vec(),
    ];
    for input in inputs {
        fuzz_checks(&input);
        for i in 0..input.len() {
            let mut m = input.clone();
            m[i] ^= 0x01;
            fuzz_checks(&m);
        }
    }
}
