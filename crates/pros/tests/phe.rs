//! python-paillier interoperability against a fixture produced by phe itself
//! (tests/data/phe_fixture.json, see tests/data/README.md).

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde_json::Value;
use tacit_pros::phe;

fn fixture() -> Value {
    serde_json::from_str(include_str!("data/phe_fixture.json")).unwrap()
}

fn as_f64(s: &str) -> f64 {
    s.parse().unwrap()
}

#[test]
fn phe_ciphertexts_decrypt_in_tacit_with_both_key_forms() {
    let f = fixture();
    let mut rng = ChaCha20Rng::from_seed([1; 32]);
    let pk = phe::read_public_key(&f["public"]).unwrap();
    for form in ["private", "private_lambda"] {
        let sk = phe::read_private_key(&f[form], &mut rng).unwrap();
        assert_eq!(sk.public(), &pk);
        for n in f["numbers"].as_array().unwrap() {
            let c = phe::read_encrypted(&pk, &n["enc"]).unwrap();
            let d = phe::decrypt_number(&sk, &c).unwrap();
            let got = phe::decimal(&d.mantissa, d.exponent).unwrap();
            let want = n["plaintext"].as_str().unwrap();
            if c.exponent == 0 {
                assert_eq!(got, want);
            } else {
                // phe encoded the float; its exact value is the double closest to the text
                assert_eq!(as_f64(&got), as_f64(n["python"].as_str().unwrap()), "{want}");
            }
        }
    }
}

#[test]
fn phe_sums_and_tacit_sums_agree() {
    let f = fixture();
    let mut rng = ChaCha20Rng::from_seed([2; 32]);
    let pk = phe::read_public_key(&f["public"]).unwrap();
    let sk = phe::read_private_key(&f["private"], &mut rng).unwrap();
    let s = &f["sum"];
    let a = phe::read_encrypted(&pk, &s["a"]).unwrap();
    let b = phe::read_encrypted(&pk, &s["b"]).unwrap();
    let ours = phe::add(&pk, &a, &b).unwrap();
    let theirs = phe::read_encrypted(&pk, &s["a_plus_b"]).unwrap();
    assert_eq!(ours.exponent, theirs.exponent);
    for c in [ours, theirs] {
        let d = phe::decrypt_number(&sk, &c).unwrap();
        assert_eq!(
            as_f64(&phe::decimal(&d.mantissa, d.exponent).unwrap()),
            as_f64(s["value"].as_str().unwrap())
        );
    }
}

#[test]
fn tacit_encodes_numbers_as_phe_does() {
    let f = fixture();
    let pk = phe::read_public_key(&f["public"]).unwrap();
    let mut rng = ChaCha20Rng::from_seed([3; 32]);
    for n in f["numbers"].as_array().unwrap() {
        let ours = phe::encrypt_number(&pk, n["plaintext"].as_str().unwrap(), &mut rng).unwrap();
        assert_eq!(
            ours.exponent as i64,
            n["enc"]["e"].as_i64().unwrap(),
            "{}",
            n["plaintext"]
        );
        let j = phe::encrypted_json(&ours).unwrap();
        assert!(j["v"].is_string() && j["e"].is_i64());
    }
}

#[test]
fn tampered_fixture_keys_are_refused() {
    let f = fixture();
    let mut rng = ChaCha20Rng::from_seed([4; 32]);
    let mut k = f["private"].clone();
    k["p"] = f["private"]["q"].clone();
    assert!(phe::read_private_key(&k, &mut rng).is_err());
    let mut l = f["private_lambda"].clone();
    l["mu"] = l["lambda"].clone();
    assert!(phe::read_private_key(&l, &mut rng).is_err());
    let pk = phe::read_public_key(&f["public"]).unwrap();
    let mut big = f["numbers"][1]["enc"].clone();
    big["v"] = Value::String(format!("{}0", big["v"].as_str().unwrap()));
    assert!(phe::read_encrypted(&pk, &big).is_err());
}
