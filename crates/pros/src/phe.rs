//! python-paillier (`phe`) interoperability: its JSON keys (JWK-like, `kty: "DAJ"`)
//! and encrypted numbers, with its base-16 fixed-point encoding of integers,
//! negatives and floats.
//!
//! * Public key: `{"kty":"DAJ","alg":"PAI-GN1","key_ops":["encrypt"],"n":B64,"kid":…}`
//!   where `B64` is the unpadded base64url big-endian encoding of the integer.
//! * Private key (pheutil's form): `{"kty":"DAJ","key_ops":["decrypt"],"p":B64,
//!   "q":B64,"pub":{…},"kid":…}`; also accepted: `"lambda"` (and `"mu"`) instead of
//!   `p`/`q` — the primes are then recovered from `λ`. Both base64 alphabets, padded or
//!   not, are read.
//! * Encrypted number: `{"v":"<decimal ciphertext>","e":<exponent>}`, standing for
//!   `m·16^e` with `m` the signed plaintext (`EncodedNumber` of phe).

use crate::bn::{self, Nat};
use crate::paillier::{Ciphertext, PrivateKey, PublicKey};
use crate::{Error, Result};
use base64::Engine;
use openssl::bn::{BigNum, BigNumRef};
use rand_core::CryptoRngCore;
use serde_json::{Value, json};

/// phe's `EncodedNumber.BASE`.
pub const BASE: u64 = 16;

fn err(s: impl Into<String>) -> Error {
    Error::Json(s.into())
}

/// `int_to_base64`: unpadded base64url of the big-endian bytes.
pub fn int_to_b64(x: &BigNumRef) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(x.to_vec())
}

/// Reads an integer in either base64 alphabet, padded or not.
pub fn b64_to_int(s: &str) -> Result<Nat> {
    let t: String = s
        .trim()
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    if t.len() > 2048 {
        return Err(err("integer too long"));
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t.as_bytes())
        .map_err(|e| err(format!("bad base64: {e}")))?;
    Ok(BigNum::from_slice(&bytes)?)
}

/// The public key as phe's JSON.
pub fn public_key_json(pk: &PublicKey, kid: &str) -> Value {
    json!({
        "kty": "DAJ",
        "alg": "PAI-GN1",
        "key_ops": ["encrypt"],
        "n": int_to_b64(pk.n()),
        "kid": kid,
    })
}

/// The private key as pheutil's JSON (primes `p`, `q` and the public key).
pub fn private_key_json(sk: &PrivateKey, kid: &str, pub_kid: &str) -> Value {
    let (p, q) = sk.primes();
    json!({
        "kty": "DAJ",
        "key_ops": ["decrypt"],
        "p": int_to_b64(p),
        "q": int_to_b64(q),
        "pub": public_key_json(sk.public(), pub_kid),
        "kid": kid,
    })
}

fn field<'a>(v: &'a Value, k: &str) -> Result<&'a Value> {
    v.get(k).ok_or_else(|| err(format!("missing \"{k}\"")))
}

fn check_kty(v: &Value) -> Result<()> {
    match v.get("kty").and_then(Value::as_str) {
        Some("DAJ") => Ok(()),
        Some(other) => Err(err(format!("kty is {other:?}, not \"DAJ\""))),
        None => Err(err("missing \"kty\"")),
    }
}

/// Reads a public key (checks `kty`, and `alg` if present).
pub fn read_public_key(v: &Value) -> Result<PublicKey> {
    check_kty(v)?;
    if let Some(alg) = v.get("alg").and_then(Value::as_str)
        && alg != "PAI-GN1"
    {
        return Err(err(format!("alg is {alg:?}; only PAI-GN1 (g = n + 1) is supported")));
    }
    let n = b64_to_int(field(v, "n")?.as_str().ok_or_else(|| err("\"n\" is not a string"))?)?;
    PublicKey::from_modulus(n)
}

/// Reads a private key in pheutil's `p`/`q` form or phe's `lambda`/`mu` form.
pub fn read_private_key(v: &Value, rng: &mut impl CryptoRngCore) -> Result<PrivateKey> {
    check_kty(v)?;
    let ops = v.get("key_ops").and_then(Value::as_array);
    if let Some(ops) = ops
        && !ops.iter().any(|o| o.as_str() == Some("decrypt"))
    {
        return Err(err("key_ops does not include \"decrypt\": this is not a private key"));
    }
    let pk = read_public_key(field(v, "pub")?)?;
    let s = |k: &str| -> Result<Nat> {
        b64_to_int(
            field(v, k)?
                .as_str()
                .ok_or_else(|| err(format!("\"{k}\" is not a string")))?,
        )
    };
    let sk = if v.get("p").is_some() && v.get("q").is_some() {
        let (p, q) = (s("p")?, s("q")?);
        let (p, q) = if p.ucmp(&q).is_lt() { (q, p) } else { (p, q) };
        PrivateKey::from_primes(p, q)?
    } else if v.get("lambda").is_some() {
        let k = PrivateKey::from_lambda(pk.n(), &*s("lambda")?, rng)?;
        if let Some(mu) = v.get("mu").and_then(Value::as_str) {
            let mu = b64_to_int(mu)?;
            let want = bn::inv_mod(&*k.lambda()?, pk.n())?;
            if mu != want {
                return Err(err("mu is not λ⁻¹ mod n"));
            }
        }
        k
    } else {
        return Err(err("a private key needs \"p\" and \"q\", or \"lambda\""));
    };
    if sk.public() != &pk {
        return Err(Error::KeyMismatch(
            "the private key does not belong to its \"pub\"".into(),
        ));
    }
    Ok(sk)
}

/// An encrypted number: a ciphertext of the mantissa and a base-16 exponent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncryptedNumber {
    /// `E(mantissa)`.
    pub ciphertext: Ciphertext,
    /// The value is `mantissa · 16^exponent`.
    pub exponent: i32,
}

/// A plaintext number in phe's encoding: `mantissa · 16^exponent`.
#[derive(Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The signed mantissa.
    pub mantissa: Nat,
    /// The base-16 exponent.
    pub exponent: i32,
}

/// Encodes a decimal string: an integer exactly (exponent 0), otherwise as phe encodes
/// the float (`exponent = ⌊(e₂ − 53)/4⌋` for the float's binary exponent `e₂`,
/// mantissa rounded).
pub fn encode_number(s: &str) -> Result<Encoded> {
    let s = s.trim();
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !digits.is_empty() && digits.len() <= 1300 && digits.bytes().all(|b| b.is_ascii_digit()) {
        // OpenSSL's BN_dec2bn stops at the first non-digit, so only all-digit strings get here
        return Ok(Encoded {
            mantissa: BigNum::from_dec_str(s)?,
            exponent: 0,
        });
    }
    let f: f64 = s.parse().map_err(|_| err(format!("{s:?} is not a number")))?;
    if !f.is_finite() {
        return Err(err("infinite or NaN values cannot be encrypted"));
    }
    if f == 0.0 {
        return Ok(Encoded {
            mantissa: BigNum::new()?,
            exponent: 0,
        });
    }
    // f = frac · 2^e2 with 0.5 ≤ |frac| < 1 (math.frexp)
    let bits = f.abs().to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    let (mant53, e2) = if raw_exp == 0 {
        (bits & ((1 << 52) - 1), -1022 - 52 + 53)
    } else {
        ((bits & ((1 << 52) - 1)) | (1 << 52), raw_exp - 1023 + 1)
    };
    let exponent = (((e2 - 53) as f64) / 4.0).floor() as i32;
    // |f| = mant53 · 2^(e2 − 53); mantissa = round(|f| · 16^(−exponent)) = round(mant53 · 2^(e2 − 53 − 4·exponent))
    let shift = e2 - 53 - 4 * exponent; // in 0..4
    let mut m = bn::from_u64(mant53)?;
    if shift >= 0 {
        let t = bn::dup(&m)?;
        m.lshift(&t, shift)?;
    } else {
        return Err(err("internal: negative shift"));
    }
    m.set_negative(f < 0.0);
    Ok(Encoded { mantissa: m, exponent })
}

/// The exact decimal form of `mantissa · 16^exponent`.
pub fn decimal(mantissa: &BigNumRef, exponent: i32) -> Result<String> {
    if exponent >= 0 {
        let mut f = bn::from_u64(1)?;
        for _ in 0..exponent {
            f.mul_word(16)?;
        }
        return Ok(bn::mul(mantissa, &f)?.to_dec_str()?.to_string());
    }
    // 16^-k = 625^k / 10^(4k)
    let k = (-exponent) as usize;
    let mut f = bn::from_u64(1)?;
    for _ in 0..k {
        f.mul_word(625)?;
    }
    let neg = mantissa.is_negative();
    let mut v = bn::mul(mantissa, &f)?;
    v.set_negative(false);
    let digits = v.to_dec_str()?.to_string();
    let point = 4 * k;
    let (int_part, frac) = if digits.len() > point {
        (
            digits[..digits.len() - point].to_string(),
            digits[digits.len() - point..].to_string(),
        )
    } else {
        (
            "0".to_string(),
            format!("{}{}", "0".repeat(point - digits.len()), digits),
        )
    };
    let frac = frac.trim_end_matches('0');
    let sign = if neg && (int_part != "0" || !frac.is_empty()) {
        "-"
    } else {
        ""
    };
    Ok(if frac.is_empty() {
        format!("{sign}{int_part}")
    } else {
        format!("{sign}{int_part}.{frac}")
    })
}

/// Encrypts a decimal number.
pub fn encrypt_number(pk: &PublicKey, s: &str, rng: &mut impl CryptoRngCore) -> Result<EncryptedNumber> {
    let e = encode_number(s)?;
    Ok(EncryptedNumber {
        ciphertext: pk.encrypt(&e.mantissa, rng)?,
        exponent: e.exponent,
    })
}

/// Decrypts to `(mantissa, exponent)`.
pub fn decrypt_number(sk: &PrivateKey, c: &EncryptedNumber) -> Result<Encoded> {
    Ok(Encoded {
        mantissa: sk.decrypt(&c.ciphertext)?,
        exponent: c.exponent,
    })
}

/// `c` with its exponent lowered to `e` (the mantissa times `16^(c.exponent − e)`).
pub fn decrease_exponent(pk: &PublicKey, c: &EncryptedNumber, e: i32) -> Result<EncryptedNumber> {
    if e > c.exponent {
        return Err(err("cannot raise an exponent"));
    }
    let diff = (c.exponent - e) as u32;
    if diff > 4096 {
        return Err(err("exponents too far apart"));
    }
    let mut f = bn::from_u64(1)?;
    for _ in 0..diff {
        f.mul_word(16)?;
    }
    let f = bn::reduce(&f, pk.n())?;
    Ok(EncryptedNumber {
        ciphertext: if diff == 0 {
            c.ciphertext.clone()
        } else {
            pk.mul_const(&c.ciphertext, &f)?
        },
        exponent: e,
    })
}

/// `a + b` (phe's `__add__`: the larger exponent is lowered first).
pub fn add(pk: &PublicKey, a: &EncryptedNumber, b: &EncryptedNumber) -> Result<EncryptedNumber> {
    let e = a.exponent.min(b.exponent);
    let a = decrease_exponent(pk, a, e)?;
    let b = decrease_exponent(pk, b, e)?;
    Ok(EncryptedNumber {
        ciphertext: pk.add(&a.ciphertext, &b.ciphertext)?,
        exponent: e,
    })
}

/// `{"v": "<decimal>", "e": exponent}`.
pub fn encrypted_json(c: &EncryptedNumber) -> Result<Value> {
    Ok(json!({ "v": c.ciphertext.value().to_dec_str()?.to_string(), "e": c.exponent }))
}

/// A public key's fingerprint as tacit writes it beside ciphertexts: the first 16 hex
/// digits of SHA-256 of the modulus (big-endian bytes).
pub fn key_fingerprint(pk: &PublicKey) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(pk.n().to_vec());
    d.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// `{"v": "<decimal>", "e": exponent, "key_fp": "<16 hex digits>"}`: phe's form with
/// the key's fingerprint beside it (phe ignores the extra field; tacit refuses a
/// ciphertext whose fingerprint is not the key's).
pub fn encrypted_json_for(pk: &PublicKey, c: &EncryptedNumber) -> Result<Value> {
    let mut v = encrypted_json(c)?;
    v["key_fp"] = json!(key_fingerprint(pk));
    Ok(v)
}

/// Reads `{"v": …, "e": …}` under `pk` (the ciphertext must be in `Z*_{n²}`). A
/// `"key_fp"` that is not `pk`'s fingerprint is refused: the ciphertext was made under
/// another key.
pub fn read_encrypted(pk: &PublicKey, v: &Value) -> Result<EncryptedNumber> {
    if let Some(fp) = v.get("key_fp") {
        let fp = fp.as_str().ok_or_else(|| err("\"key_fp\" is not a string"))?;
        let ours = key_fingerprint(pk);
        if !fp.eq_ignore_ascii_case(&ours) {
            return Err(Error::KeyMismatch(format!(
                "the ciphertext was made under the key with fingerprint {}, not this key ({ours})",
                fp.chars().take(16).collect::<String>()
            )));
        }
    }
    let raw = field(v, "v")?;
    let s = match raw {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return Err(err("\"v\" is not a decimal string")),
    };
    if s.len() > 2 * 1300 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err("\"v\" is not a decimal ciphertext"));
    }
    let c = pk.ciphertext(BigNum::from_dec_str(&s)?)?;
    let e = match v.get("e") {
        None => 0,
        Some(e) => e
            .as_i64()
            .and_then(|x| i32::try_from(x).ok())
            .filter(|x| x.abs() <= 4096)
            .ok_or_else(|| err("\"e\" is not a small integer"))?,
    };
    Ok(EncryptedNumber {
        ciphertext: c,
        exponent: e,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn numbers_roundtrip_through_json() {
        let sk = PrivateKey::generate(256).unwrap();
        let pk = sk.public();
        let mut rng = ChaCha20Rng::from_seed([1; 32]);
        for (s, want) in [
            ("42", "42"),
            ("-7", "-7"),
            ("0", "0"),
            ("2.5", "2.5"),
            ("-0.1", "-0.1000000000000000055511151231257827021181583404541015625"),
            ("1e3", "1000"),
        ] {
            let c = encrypt_number(pk, s, &mut rng).unwrap();
            let j = encrypted_json(&c).unwrap();
            let back = read_encrypted(pk, &j).unwrap();
            let d = decrypt_number(&sk, &back).unwrap();
            assert_eq!(decimal(&d.mantissa, d.exponent).unwrap(), want, "{s}");
        }
        let a = encrypt_number(pk, "1.5", &mut rng).unwrap();
        let b = encrypt_number(pk, "-4", &mut rng).unwrap();
        let s = add(pk, &a, &b).unwrap();
        let d = decrypt_number(&sk, &s).unwrap();
        assert_eq!(decimal(&d.mantissa, d.exponent).unwrap(), "-2.5");
    }

    #[test]
    fn keys_roundtrip_and_lambda_form() {
        let sk = PrivateKey::generate(256).unwrap();
        let j = private_key_json(&sk, "k", "p");
        let mut rng = ChaCha20Rng::from_seed([2; 32]);
        let back = read_private_key(&j, &mut rng).unwrap();
        assert_eq!(back.public(), sk.public());
        let lam = json!({
            "kty": "DAJ", "key_ops": ["decrypt"], "pub": public_key_json(sk.public(), "p"),
            "lambda": base64::engine::general_purpose::STANDARD.encode(sk.lambda().unwrap().to_vec()),
            "mu": int_to_b64(&bn::inv_mod(&sk.lambda().unwrap(), sk.public().n()).unwrap()),
        });
        assert_eq!(read_private_key(&lam, &mut rng).unwrap().public(), sk.public());
        let mut bad = j.clone();
        bad["kty"] = json!("RSA");
        assert!(read_private_key(&bad, &mut rng).is_err());
        let other = PrivateKey::generate(256).unwrap();
        let mut mixed = j.clone();
        mixed["pub"] = public_key_json(other.public(), "x");
        assert!(read_private_key(&mixed, &mut rng).is_err());
        assert!(read_encrypted(sk.public(), &json!({"v": "0", "e": 0})).is_err());
        assert!(read_encrypted(sk.public(), &json!({"v": "12a", "e": 0})).is_err());
    }
}
