//! BB₂ IBE with the FO transform and prefix encryption: round trips, deviating
//! ciphertexts and keys, strict decoders.

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;
use proptest::prelude::*;
use tacit_crypto::rng::SecureRng;
use tacit_discovery::ibe::{
    self, CIPHERTEXT_OVERHEAD, Ciphertext, Error, IdentityKey, MAX_PLAINTEXT_LEN, MasterPublicKey, MasterSecretKey,
};
use tacit_discovery::prefix::{self, Prefix, PrefixAuthority, PrefixCiphertext, PrefixKey};
use tacit_wire::{Decode, Encode};

fn rng(seed: u8) -> SecureRng {
    SecureRng::from_seed([seed; 32])
}

fn p(s: &str) -> Prefix {
    Prefix::parse(s).unwrap()
}

/// A compressed G1 encoding of a point on the curve `y² = x³ + 4` that is not in the
/// prime-order subgroup (the cofactor is ≈ 2¹²⁶, so the first x that is on the curve
/// serves).
fn g1_off_subgroup() -> [u8; 48] {
    for x in 1u8..=255 {
        let mut b = [0u8; 48];
        b[0] = 0x80;
        b[47] = x;
        let on_curve = bool::from(G1Affine::from_compressed_unchecked(&b).is_some());
        if on_curve {
            assert!(
                bool::from(G1Affine::from_compressed(&b).is_none()),
                "x = {x} landed in G1"
            );
            return b;
        }
    }
    unreachable!("half of all x are on the curve");
}

/// The same in G2 (x = x₀ + 0·u with small x₀).
fn g2_off_subgroup() -> [u8; 96] {
    for x in 1u8..=255 {
        let mut b = [0u8; 96];
        b[0] = 0x80;
        b[95] = x;
        if bool::from(G2Affine::from_compressed_unchecked(&b).is_some()) {
            assert!(
                bool::from(G2Affine::from_compressed(&b).is_none()),
                "x = {x} landed in G2"
            );
            return b;
        }
    }
    unreachable!("half of all x are on the twist");
}

/// A G1 x-coordinate with no point on the curve.
fn g1_off_curve() -> [u8; 48] {
    for x in 1u8..=255 {
        let mut b = [0u8; 48];
        b[0] = 0x80;
        b[47] = x;
        if bool::from(G1Affine::from_compressed_unchecked(&b).is_none()) {
            return b;
        }
    }
    unreachable!();
}

/// Encodings of G1 points that every decoder must refuse, with what the error says.
fn bad_g1_points() -> Vec<([u8; 48], &'static str)> {
    let mut infinity = [0u8; 48];
    infinity[0] = 0xc0;
    let mut infinity_with_sign = infinity;
    infinity_with_sign[0] = 0xe0;
    let mut uncompressed_flag = G1Affine::generator().to_compressed();
    uncompressed_flag[0] &= 0x7f;
    let mut x_too_big = [0xffu8; 48];
    x_too_big[0] = 0x9f; // compressed, x ≥ p
    vec![
        (infinity, "identity element"),
        (infinity_with_sign, "not a canonical compressed point"),
        (uncompressed_flag, "not a canonical compressed point"),
        (x_too_big, "not a canonical compressed point"),
        (g1_off_curve(), "not a canonical compressed point"),
        (g1_off_subgroup(), "outside the prime-order subgroup"),
    ]
}

#[test]
fn round_trip_and_wrong_identity() {
    let mut rng = rng(1);
    let msk = MasterSecretKey::generate(&mut rng);
    let mpk = msk.public();
    let alice = msk.extract(b"alice", &mut rng).unwrap();
    let bob = msk.extract(b"bob", &mut rng).unwrap();
    for len in [0, 1, 100] {
        let msg = vec![len as u8; len];
        let ct = mpk.encrypt(b"alice", b"ad", &msg, &mut rng).unwrap();
        assert_eq!(ct.len(), CIPHERTEXT_OVERHEAD + len);
        assert_eq!(ct.to_bytes().len(), 144 + len);
        assert_eq!(alice.decrypt(&ct, b"ad").unwrap(), msg);
        let decoded = Ciphertext::from_bytes(&ct.to_bytes()).unwrap();
        assert_eq!(decoded, ct);
        assert_eq!(alice.decrypt(&decoded, b"ad").unwrap(), msg);
        assert_eq!(bob.decrypt(&ct, b"ad"), Err(Error::Decrypt));
        assert_eq!(alice.decrypt(&ct, b"AD"), Err(Error::Decrypt));
        assert_eq!(alice.decrypt(&ct, b""), Err(Error::Decrypt));
    }
    // Encryption is randomised.
    let a = mpk.encrypt(b"alice", b"", b"m", &mut rng).unwrap();
    let b = mpk.encrypt(b"alice", b"", b"m", &mut rng).unwrap();
    assert_ne!(a, b);
    // Another authority's key for the same identity does not decrypt.
    let other = MasterSecretKey::generate(&mut rng).extract(b"alice", &mut rng).unwrap();
    assert_eq!(other.decrypt(&a, b""), Err(Error::Decrypt));
    assert_eq!(
        Error::Decrypt.to_string(),
        "ciphertext does not decrypt under this identity key"
    );
}

#[test]
fn bounds_on_identities_and_plaintexts() {
    let mut rng = rng(2);
    let msk = MasterSecretKey::generate(&mut rng);
    let mpk = msk.public();
    assert_eq!(mpk.encrypt(b"", b"", b"m", &mut rng), Err(Error::IdentityLength(0)));
    let long = vec![b'a'; ibe::MAX_IDENTITY_LEN + 1];
    assert_eq!(mpk.encrypt(&long, b"", b"m", &mut rng), Err(Error::IdentityLength(513)));
    assert!(msk.extract(&long, &mut rng).is_err());
    assert!(msk.extract(b"", &mut rng).is_err());
    let big = vec![0; MAX_PLAINTEXT_LEN + 1];
    assert!(matches!(
        mpk.encrypt(b"a", b"", &big, &mut rng),
        Err(Error::PlaintextTooLong { .. })
    ));
}

#[test]
fn every_bit_flip_of_a_ciphertext_or_aad_fails() {
    let mut rng = rng(3);
    let msk = MasterSecretKey::generate(&mut rng);
    let key = msk.extract(b"dave", &mut rng).unwrap();
    let aad = b"bid1";
    let ct = msk.public().encrypt(b"dave", aad, b"tv!!", &mut rng).unwrap();
    let bytes = ct.to_bytes();
    let mut refused_on_decode = 0;
    for bit in 0..bytes.len() * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        match Ciphertext::from_bytes(&b) {
            Err(_) => refused_on_decode += 1,
            Ok(c) => assert_eq!(key.decrypt(&c, aad), Err(Error::Decrypt), "bit {bit}"),
        }
    }
    // Most flips of C₁ and C₂ leave the curve or the subgroup; none of c₃ and c₄ do.
    assert!(refused_on_decode > 0 && refused_on_decode <= 2 * 48 * 8);
    for bit in 0..aad.len() * 8 {
        let mut a = aad.to_vec();
        a[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(key.decrypt(&ct, &a), Err(Error::Decrypt));
    }
    // Truncating or extending c₄ changes the ciphertext.
    assert_eq!(
        key.decrypt(&Ciphertext::from_bytes(&bytes[..bytes.len() - 1]).unwrap(), aad),
        Err(Error::Decrypt)
    );
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        key.decrypt(&Ciphertext::from_bytes(&longer).unwrap(), aad),
        Err(Error::Decrypt)
    );
}

#[test]
fn ciphertext_decoder_is_strict() {
    let mut rng = rng(4);
    let msk = MasterSecretKey::generate(&mut rng);
    let bytes = msk.public().encrypt(b"x", b"", b"", &mut rng).unwrap().to_bytes();
    assert_eq!(bytes.len(), CIPHERTEXT_OVERHEAD);
    for n in 0..CIPHERTEXT_OVERHEAD {
        assert!(Ciphertext::from_bytes(&bytes[..n]).is_err(), "{n} bytes");
    }
    let mut huge = bytes.clone();
    huge.resize(CIPHERTEXT_OVERHEAD + MAX_PLAINTEXT_LEN + 1, 0);
    assert!(matches!(
        Ciphertext::from_bytes(&huge),
        Err(Error::Wire(tacit_wire::Error::TooLong { .. }))
    ));
    for (point, why) in bad_g1_points() {
        for offset in [0, 48] {
            let mut b = bytes.clone();
            b[offset..offset + 48].copy_from_slice(&point);
            let e = Ciphertext::from_bytes(&b).unwrap_err().to_string();
            assert!(e.contains(why), "C{}: {e}", offset / 48 + 1);
        }
    }
}

#[test]
fn master_key_encodings_are_strict() {
    let mut rng = rng(5);
    let msk = MasterSecretKey::generate(&mut rng);
    let mpk = msk.public();
    let wire = mpk.to_wire();
    assert_eq!(wire.len(), 99);
    assert_eq!(&wire[..3], &[1, 0x03, 0x01]);
    assert_eq!(&MasterPublicKey::from_wire(&wire).unwrap(), mpk);
    for n in 0..wire.len() {
        assert!(MasterPublicKey::from_wire(&wire[..n]).is_err());
    }
    let mut longer = wire.clone();
    longer.push(0);
    assert_eq!(
        MasterPublicKey::from_wire(&longer),
        Err(tacit_wire::Error::TrailingBytes(1))
    );
    for (point, why) in bad_g1_points() {
        for offset in [3, 51] {
            let mut b = wire.clone();
            b[offset..offset + 48].copy_from_slice(&point);
            let e = MasterPublicKey::from_wire(&b).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
    }

    let secret = msk.to_bytes();
    assert_eq!(secret.len(), 67);
    let again = MasterSecretKey::from_bytes(&secret).unwrap();
    assert_eq!(again.public(), mpk);
    for n in 0..secret.len() {
        assert!(MasterSecretKey::from_bytes(&secret[..n]).is_err());
    }
    let mut longer = secret.to_vec();
    longer.push(0);
    assert!(MasterSecretKey::from_bytes(&longer).is_err());
    let mut zero = secret.to_vec();
    zero[3..35].fill(0);
    assert!(
        MasterSecretKey::from_bytes(&zero)
            .unwrap_err()
            .to_string()
            .contains("zero")
    );
    let mut unreduced = secret.to_vec();
    unreduced[35..67].fill(0xff);
    assert!(
        MasterSecretKey::from_bytes(&unreduced)
            .unwrap_err()
            .to_string()
            .contains("not reduced")
    );
    // Keys extracted by the reloaded authority work with ciphertexts for the original.
    let ct = mpk.encrypt(b"erin", b"", b"hi", &mut rng).unwrap();
    assert_eq!(
        again.extract(b"erin", &mut rng).unwrap().decrypt(&ct, b"").unwrap(),
        b"hi"
    );
}

#[test]
fn identity_key_encoding_is_strict_and_checked_against_the_master_key() {
    let mut rng = rng(6);
    let msk = MasterSecretKey::generate(&mut rng);
    let mpk = msk.public();
    let key = msk.extract(b"frank", &mut rng).unwrap();
    let bytes = key.to_bytes();
    assert_eq!(bytes.len(), 135 + 5);
    let loaded = IdentityKey::from_bytes(mpk, &bytes).unwrap();
    assert_eq!(loaded.identity(), b"frank");
    assert_eq!(loaded.to_bytes(), bytes);
    let ct = mpk.encrypt(b"frank", b"", b"ok", &mut rng).unwrap();
    assert_eq!(loaded.decrypt(&ct, b"").unwrap(), b"ok");

    for n in 0..bytes.len() {
        assert!(IdentityKey::from_bytes(mpk, &bytes[..n]).is_err(), "{n}");
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(IdentityKey::from_bytes(mpk, &longer).is_err());

    // Another authority's public key: refused on load.
    let other = MasterSecretKey::generate(&mut rng);
    assert!(matches!(
        IdentityKey::from_bytes(other.public(), &bytes),
        Err(Error::KeyMismatch { .. })
    ));
    // Another identity with the same (r, K): refused.
    let mut renamed = bytes.to_vec();
    renamed[7] = b'g';
    assert!(matches!(
        IdentityKey::from_bytes(mpk, &renamed),
        Err(Error::KeyMismatch { .. })
    ));
    // A modified r: refused.
    let mut r_flip = bytes.to_vec();
    r_flip[12 + 31] ^= 1;
    assert!(matches!(
        IdentityKey::from_bytes(mpk, &r_flip),
        Err(Error::KeyMismatch { .. })
    ));

    // Invalid K.
    let k_at = bytes.len() - 96;
    let mut infinity = [0u8; 96];
    infinity[0] = 0xc0;
    for (point, why) in [
        (infinity, "identity element"),
        (g2_off_subgroup(), "outside the prime-order subgroup"),
    ] {
        let mut b = bytes.to_vec();
        b[k_at..].copy_from_slice(&point);
        let e = IdentityKey::from_bytes(mpk, &b).unwrap_err().to_string();
        assert!(e.contains(why), "{e}");
    }
    // Empty identity.
    let mut empty = vec![1, 0x03, 0x03, 0, 0, 0, 0];
    empty.extend_from_slice(&bytes[12..]);
    assert_eq!(
        IdentityKey::from_bytes(mpk, &empty).unwrap_err(),
        Error::IdentityLength(0)
    );
}

#[test]
fn prefix_key_decrypts_exactly_its_prefixes() {
    let mut rng = rng(7);
    let root = PrefixAuthority::generate(&mut rng);
    let key = root.extract(&p("a/b/c"), &mut rng).unwrap();
    for policy in ["a", "a/b", "a/b/c"] {
        let ct = prefix::encrypt(root.public(), &p(policy), b"ad", policy.as_bytes(), &mut rng).unwrap();
        assert!(key.satisfies(&p(policy)));
        assert_eq!(key.decrypt(&ct, b"ad").unwrap(), policy.as_bytes());
        assert_eq!(key.decrypt(&ct, b"da"), Err(Error::Decrypt));
    }
    for policy in ["a/x", "a/b/c/d", "b", "a/bc", "x/b/c"] {
        let ct = prefix::encrypt(root.public(), &p(policy), b"ad", b"secret", &mut rng).unwrap();
        assert!(!key.satisfies(&p(policy)));
        let e = key.decrypt(&ct, b"ad").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("this identity does not satisfy the policy {policy}/*")
        );
    }
    // A key of another authority for the same name satisfies the policy but cannot
    // decrypt.
    let other = PrefixAuthority::generate(&mut rng)
        .extract(&p("a/b/c"), &mut rng)
        .unwrap();
    let ct = prefix::encrypt(root.public(), &p("a/b"), b"", b"m", &mut rng).unwrap();
    assert_eq!(other.decrypt(&ct, b""), Err(Error::Decrypt));
    // A ciphertext relabelled with another policy the key satisfies does not decrypt.
    let ct_a = prefix::encrypt(root.public(), &p("a"), b"", b"m", &mut rng).unwrap();
    let mut w = tacit_wire::Writer::new();
    w.put_envelope(prefix::TAG_PREFIX_CIPHERTEXT);
    w.put_str("a/b");
    w.put_var_bytes(&ct_a.ibe_ciphertext().to_bytes());
    let relabelled = PrefixCiphertext::from_wire(&w.into_bytes()).unwrap();
    assert_eq!(key.decrypt(&relabelled, b""), Err(Error::Decrypt));
}

#[test]
fn every_bit_flip_of_a_prefix_ciphertext_fails() {
    let mut rng = rng(8);
    let root = PrefixAuthority::generate(&mut rng);
    let key = root.extract(&p("ab/cd/ef"), &mut rng).unwrap();
    let ct = prefix::encrypt(root.public(), &p("ab/cd"), b"", b"hi", &mut rng).unwrap();
    let bytes = ct.to_wire();
    assert_eq!(bytes.len(), 3 + 4 + 5 + 4 + CIPHERTEXT_OVERHEAD + 2);
    assert_eq!(PrefixCiphertext::from_wire(&bytes).unwrap(), ct);
    for bit in 0..bytes.len() * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        if let Ok(c) = PrefixCiphertext::from_wire(&b) {
            assert!(key.decrypt(&c, b"").is_err(), "bit {bit}");
        }
    }
    for n in 0..bytes.len() {
        assert!(PrefixCiphertext::from_wire(&bytes[..n]).is_err(), "{n}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        PrefixCiphertext::from_wire(&longer),
        Err(tacit_wire::Error::TrailingBytes(1))
    );
    // A policy that is not a valid name is refused on decode.
    let mut w = tacit_wire::Writer::new();
    w.put_envelope(prefix::TAG_PREFIX_CIPHERTEXT);
    w.put_str("ab/*");
    w.put_var_bytes(&ct.ibe_ciphertext().to_bytes());
    assert!(
        PrefixCiphertext::from_wire(&w.into_bytes())
            .unwrap_err()
            .to_string()
            .contains("'*'")
    );
}

#[test]
fn prefix_key_encoding_round_trips_and_is_strict() {
    let mut rng = rng(9);
    let root = PrefixAuthority::generate(&mut rng);
    let mpk = root.public();
    let key = root.extract(&p("home/tv"), &mut rng).unwrap();
    let bytes = key.to_bytes();
    assert_eq!(bytes.len(), 3 + 4 + 7 + 2 * 128);
    let loaded = PrefixKey::from_bytes(mpk, &bytes).unwrap();
    assert_eq!(loaded.name(), &p("home/tv"));
    assert_eq!(loaded.to_bytes(), bytes);
    let ct = prefix::encrypt(mpk, &p("home"), b"", b"x", &mut rng).unwrap();
    assert_eq!(loaded.decrypt(&ct, b"").unwrap(), b"x");
    assert_eq!(format!("{loaded:?}"), "PrefixKey(home/tv, <redacted>)");

    for n in 0..bytes.len() {
        assert!(PrefixKey::from_bytes(mpk, &bytes[..n]).is_err(), "{n}");
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(PrefixKey::from_bytes(mpk, &longer).is_err());
    // Keys swapped between the two levels, or another authority: refused.
    let mut swapped = bytes.to_vec();
    let (a, b) = (14..14 + 128, 14 + 128..14 + 256);
    let first: Vec<u8> = swapped[a.clone()].to_vec();
    let second: Vec<u8> = swapped[b.clone()].to_vec();
    swapped[a].copy_from_slice(&second);
    swapped[b].copy_from_slice(&first);
    assert!(matches!(
        PrefixKey::from_bytes(mpk, &swapped),
        Err(Error::KeyMismatch { .. })
    ));
    let other = PrefixAuthority::generate(&mut rng);
    assert!(matches!(
        PrefixKey::from_bytes(other.public(), &bytes),
        Err(Error::KeyMismatch { .. })
    ));
    // Renamed to a name of the same shape: refused.
    let mut renamed = bytes.to_vec();
    renamed[7] = b'H';
    assert!(matches!(
        PrefixKey::from_bytes(mpk, &renamed),
        Err(Error::KeyMismatch { .. })
    ));
}

#[test]
fn authority_round_trips_through_its_master_secret_key() {
    let mut rng = rng(10);
    let root = PrefixAuthority::generate(&mut rng);
    let stored = root.master_secret_key().to_bytes();
    let again = PrefixAuthority::from_master_secret_key(MasterSecretKey::from_bytes(&stored).unwrap());
    assert_eq!(again.public(), root.public());
    let ct = prefix::encrypt(root.public(), &p("q"), b"", b"z", &mut rng).unwrap();
    assert_eq!(
        again.extract(&p("q/r"), &mut rng).unwrap().decrypt(&ct, b"").unwrap(),
        b"z"
    );
    assert!(format!("{again:?}").ends_with("<redacted>)"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// PE.Dec(PE.Enc(π, m)) = m for every key whose name starts with π, and ⊥ with
    /// the policy error for every other one: the plain computation is "is π a prefix
    /// of ID".
    #[test]
    fn prefix_encryption_matches_the_prefix_relation(
        msg in proptest::collection::vec(any::<u8>(), 0..300),
        aad in proptest::collection::vec(any::<u8>(), 0..40),
        policy_len in 1usize..=3,
        seed in any::<u8>(),
    ) {
        let mut rng = rng(seed);
        let root = PrefixAuthority::generate(&mut rng);
        let names = ["a/b/c", "a/b", "a/x/c", "b"];
        let policy = p("a/b/c").truncated(policy_len).unwrap();
        let ct = prefix::encrypt(root.public(), &policy, &aad, &msg, &mut rng).unwrap();
        let ct = PrefixCiphertext::from_wire(&ct.to_wire()).unwrap();
        prop_assert_eq!(ct.ibe_ciphertext().plaintext_len(), msg.len());
        for name in names {
            let key = root.extract(&p(name), &mut rng).unwrap();
            let got = key.decrypt(&ct, &aad);
            if policy.is_prefix_of(&p(name)) {
                prop_assert_eq!(got.unwrap(), msg.clone());
            } else {
                let is_policy_error = matches!(got, Err(Error::PolicyNotSatisfied { .. }));
                prop_assert!(is_policy_error);
            }
        }
    }

    /// Random bytes never make a decoder panic.
    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut rng = rng(11);
        let msk = MasterSecretKey::generate(&mut rng);
        let _ = MasterPublicKey::from_wire(&bytes);
        let _ = MasterSecretKey::from_bytes(&bytes);
        let _ = IdentityKey::from_bytes(msk.public(), &bytes);
        let _ = Ciphertext::from_bytes(&bytes);
        let _ = PrefixCiphertext::from_wire(&bytes);
        let _ = PrefixKey::from_bytes(msk.public(), &bytes);
    }
}

/// `cargo test --release -p tacit-discovery --test ibe -- --ignored --nocapture`
#[test]
#[ignore = "measurement, not a test: run with --release --ignored --nocapture"]
fn microbench_report() {
    for len in [32, 1024] {
        for t in ibe::microbench(101, len) {
            println!(
                "{len:5}-byte message  {:24} {:>9.1} µs",
                t.operation,
                t.median.as_secs_f64() * 1e6
            );
        }
    }
}

#[test]
fn generators_sanity() {
    // The tests above rely on these encodings of the generators.
    assert!(bool::from(
        G1Affine::from_compressed(&G1Affine::generator().to_compressed()).is_some()
    ));
    assert!(bool::from(
        G2Affine::from_compressed(&G2Affine::generator().to_compressed()).is_some()
    ));
}
