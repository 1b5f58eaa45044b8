//! Published vectors: RFC 9380 expand_message_xmd and P-256 hash_to_curve, RFC 9497
//! OPRF (mode 0) and VOPRF (mode 1) for ristretto255-SHA512 and P256-SHA256.
//! The data files are in `tests/data/` (origin in its README).

use serde_json::Value;
use sha2::{Sha256, Sha512};
use tacit_crypto::oprf::{Mode, Oprf, Proof};
use tacit_crypto::xmd::expand_message_xmd;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};

fn data(name: &str) -> Value {
    // The manifest folder as cargo gives it at run time: a test binary reused from
    // another checkout sharing the target folder must still read this one's files.
    let path = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into())
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    hex::decode(s.trim_start_matches("0x")).unwrap()
}

fn xmd_file<H: sha2::Digest + sha2::digest::core_api::BlockSizeUser>(name: &str) -> usize {
    let v = data(name);
    let dst = v["DST"].as_str().unwrap().as_bytes();
    let mut n = 0;
    for t in v["tests"].as_array().unwrap() {
        let msg = t["msg"].as_str().unwrap().as_bytes();
        let len = usize::from_str_radix(t["len_in_bytes"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let mut out = vec![0u8; len];
        expand_message_xmd::<H>(&[msg], &[dst], &mut out).unwrap();
        assert_eq!(
            hex::encode(&out),
            t["uniform_bytes"].as_str().unwrap(),
            "{name}: msg {:?}",
            t["msg"]
        );
        // the message split in parts gives the same bytes
        let (a, b) = msg.split_at(msg.len() / 2);
        let mut out2 = vec![0u8; len];
        expand_message_xmd::<H>(&[a, b], &[&dst[..3], &dst[3..]], &mut out2).unwrap();
        assert_eq!(out, out2);
        n += 1;
    }
    n
}

#[test]
fn rfc9380_expand_message_xmd_sha256() {
    assert_eq!(xmd_file::<Sha256>("rfc9380_expand_message_xmd_SHA256_38.json"), 10);
}

#[test]
fn rfc9380_expand_message_xmd_sha512() {
    assert_eq!(xmd_file::<Sha512>("rfc9380_expand_message_xmd_SHA512_38.json"), 10);
}

#[test]
fn rfc9380_expand_message_xmd_rejects_bad_lengths() {
    let mut big = vec![0u8; 255 * 32 + 1];
    assert!(expand_message_xmd::<Sha256>(&[b"x"], &[b"DST"], &mut big).is_err());
    let mut out = [0u8; 32];
    assert!(expand_message_xmd::<Sha256>(&[b"x"], &[b""], &mut out).is_err());
    // an oversize DST is hashed first and still works
    let long_dst = vec![b'a'; 300];
    expand_message_xmd::<Sha256>(&[b"x"], &[&long_dst], &mut out).unwrap();
}

#[test]
fn rfc9380_p256_xmd_sha256_sswu_ro() {
    let v = data("rfc9380_P256_XMD_SHA-256_SSWU_RO_.json");
    let dst = v["dst"].as_str().unwrap().as_bytes();
    let vectors = v["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 5);
    for t in vectors {
        let msg = t["msg"].as_str().unwrap().as_bytes();
        let p = P256::hash_to_group(&[msg], &[dst]).unwrap();
        let enc = P256::element_bytes(&p);
        let x = unhex(t["P"]["x"].as_str().unwrap());
        let y = unhex(t["P"]["y"].as_str().unwrap());
        assert_eq!(&enc[1..], &x[..], "x for msg {:?}", t["msg"]);
        let y_odd = y[31] & 1 == 1;
        assert_eq!(enc[0], if y_odd { 3 } else { 2 }, "y parity for msg {:?}", t["msg"]);
    }
}

fn split(v: &Value, key: &str) -> Vec<Vec<u8>> {
    v[key].as_str().unwrap().split(',').map(unhex).collect()
}

fn oprf_suite<G: PrimeGroup>(mode: Mode) -> usize {
    let all = data("rfc9497_allVectors.json");
    let suite = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["identifier"] == G::SUITE_ID && s["mode"] == mode as u8)
        .expect("suite present");
    let oprf = Oprf::<G>::new(mode);
    let mut group_dst = b"HashToGroup-".to_vec();
    group_dst.extend_from_slice(oprf.context_string());
    assert_eq!(hex::encode(group_dst), suite["groupDST"].as_str().unwrap());

    let key = oprf
        .derive_key_pair(
            &unhex(suite["seed"].as_str().unwrap()),
            &unhex(suite["keyInfo"].as_str().unwrap()),
        )
        .unwrap();
    assert_eq!(
        hex::encode(key.secret().to_bytes().as_slice()),
        suite["skSm"].as_str().unwrap()
    );
    if mode == Mode::Voprf {
        assert_eq!(
            hex::encode(G::element_bytes(key.public())),
            suite["pkSm"].as_str().unwrap()
        );
    }
    let mut checked = 0;
    for v in suite["vectors"].as_array().unwrap() {
        let inputs = split(v, "Input");
        let blinds = split(v, "Blind");
        let blinded_exp = split(v, "BlindedElement");
        let evaluated_exp = split(v, "EvaluationElement");
        let outputs = split(v, "Output");
        assert_eq!(inputs.len() as u64, v["Batch"].as_u64().unwrap());
        let mut blinded = Vec::new();
        let mut evaluated = Vec::new();
        for i in 0..inputs.len() {
            let blind = G::decode_scalar(&blinds[i]).unwrap();
            let b = oprf.blind(&inputs[i], &blind).unwrap();
            assert_eq!(G::element_bytes(&b).as_ref(), &blinded_exp[i][..]);
            // the decoder accepts what the RFC serialises
            assert!(G::decode_element(&blinded_exp[i]).unwrap() == b);
            let e = oprf.blind_evaluate(&key, &b);
            assert_eq!(G::element_bytes(&e).as_ref(), &evaluated_exp[i][..]);
            let out = oprf.finalize(&inputs[i], &blind, &e);
            assert_eq!(out.as_slice(), &outputs[i][..]);
            assert_eq!(oprf.evaluate(&key, &inputs[i]).unwrap().as_slice(), &outputs[i][..]);
            blinded.push(b);
            evaluated.push(e);
        }
        if mode == Mode::Voprf {
            let r = G::decode_scalar(&unhex(v["Proof"]["r"].as_str().unwrap())).unwrap();
            let proof = oprf.generate_proof_with_nonce(&key, &blinded, &evaluated, &r).unwrap();
            assert_eq!(hex::encode(proof.to_bytes()), v["Proof"]["proof"].as_str().unwrap());
            let decoded = Proof::<G>::from_bytes(&unhex(v["Proof"]["proof"].as_str().unwrap())).unwrap();
            oprf.verify_proof(key.public(), &blinded, &evaluated, &decoded).unwrap();
            // a proof for other values does not verify
            let mut swapped = evaluated.clone();
            swapped[0] = G::add(&swapped[0], &G::generator());
            assert!(oprf.verify_proof(key.public(), &blinded, &swapped, &decoded).is_err());
        }
        checked += 1;
    }
    checked
}

#[test]
fn rfc9497_ristretto255_sha512_oprf() {
    assert_eq!(oprf_suite::<Ristretto255>(Mode::Oprf), 2);
}

#[test]
fn rfc9497_ristretto255_sha512_voprf() {
    assert_eq!(oprf_suite::<Ristretto255>(Mode::Voprf), 3);
}

#[test]
fn rfc9497_p256_sha256_oprf() {
    assert_eq!(oprf_suite::<P256>(Mode::Oprf), 2);
}

#[test]
fn rfc9497_p256_sha256_voprf() {
    assert_eq!(oprf_suite::<P256>(Mode::Voprf), 3);
}
