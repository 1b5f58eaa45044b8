//! Polynomials over `Z_n` (PROS §4.3) and their oblivious evaluation (§4.5).
//!
//! FNP's chooser builds `p(x) = ∏ (x − cᵢ) = Σ αᵢ·xⁱ` (Eq. (1)). [`Poly::from_roots`]
//! multiplies the linear factors pairwise up a **product tree**, with either
//! Karatsuba's algorithm (`3·d^{log₂3}` ring operations per product) or the classical
//! schoolbook product (`d²`), the two curves of the paper's Fig. 8. Products are formed
//! over the integers and reduced mod `n` once per coefficient at the end of each tree
//! level (lazy reduction), so the inner loops are plain multiplications.
//!
//! [`horner_encrypted`] evaluates a **monic** polynomial given by the encryptions of its
//! lower coefficients at a point `y` without decrypting (§4.5):
//! `E(p(y)) = (…((g^y · E(α_{d−1}))^y · E(α_{d−2}))^y … )^y · E(α₀)`,
//! one short exponentiation per coefficient (the exponent is `y`, a set element).

use crate::bn::{self, Nat};
use crate::paillier::{Ciphertext, PublicKey};
use crate::{Error, Result};
use openssl::bn::{BigNum, BigNumRef};
use rayon::prelude::*;

/// How two polynomials are multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Multiplier {
    /// The classical `O(d²)` product.
    Schoolbook,
    /// Karatsuba's `O(d^{1.585})` product (schoolbook below 24 coefficients).
    Karatsuba,
}

/// Below this many coefficients Karatsuba falls back to schoolbook.
const KARATSUBA_CUTOFF: usize = 24;

/// A polynomial over `Z_n`: `coeffs[i]` is the coefficient of `xⁱ`, each in `[0, n)`.
#[derive(Debug, PartialEq, Eq)]
pub struct Poly {
    coeffs: Vec<Nat>,
}

impl Poly {
    /// The coefficients, lowest degree first.
    pub fn coeffs(&self) -> &[Nat] {
        &self.coeffs
    }

    /// The degree (0 for a constant).
    pub fn degree(&self) -> usize {
        self.coeffs.len().saturating_sub(1)
    }

    /// `∏ (x − rᵢ) mod n` by a product tree (the constant 1 for no roots).
    pub fn from_roots(roots: &[Nat], n: &BigNumRef, how: Multiplier) -> Result<Poly> {
        if roots.is_empty() {
            return Ok(Poly {
                coeffs: vec![bn::from_u64(1)?],
            });
        }
        let mut level: Vec<Vec<Nat>> = roots
            .iter()
            .map(|r| {
                Ok(vec![
                    bn::sub_mod(&*BigNum::new()?, &*bn::reduce(r, n)?, n)?,
                    bn::from_u64(1)?,
                ])
            })
            .collect::<Result<_>>()?;
        while level.len() > 1 {
            level = level
                .par_chunks(2)
                .map(|pair| match pair {
                    [a, b] => {
                        let prod = match how {
                            Multiplier::Schoolbook => schoolbook(a, b)?,
                            Multiplier::Karatsuba => karatsuba(a, b)?,
                        };
                        prod.iter().map(|c| bn::reduce(c, n)).collect()
                    }
                    [a] => a.iter().map(|x| bn::dup(x)).collect(),
                    _ => Err(Error::Backend("empty chunk".into())),
                })
                .collect::<Result<_>>()?;
        }
        Ok(Poly {
            coeffs: level.pop().unwrap_or_default(),
        })
    }

    /// `∏ (x − rᵢ) mod n` by inserting one root after the other, `p ← p·(x − r)`: the
    /// textbook construction (`O(d)` per root).
    pub fn from_roots_incremental(roots: &[Nat], n: &BigNumRef) -> Result<Poly> {
        let mut c = vec![bn::from_u64(1)?];
        for r in roots {
            let r = bn::reduce(r, n)?;
            let mut next = Vec::with_capacity(c.len() + 1);
            // new[i] = c[i−1] − r·c[i]
            next.push(bn::sub_mod(&*BigNum::new()?, &*bn::mul_mod(&r, &c[0], n)?, n)?);
            for i in 1..c.len() {
                next.push(bn::sub_mod(&c[i - 1], &*bn::mul_mod(&r, &c[i], n)?, n)?);
            }
            next.push(bn::from_u64(1)?);
            c = next;
        }
        Ok(Poly { coeffs: c })
    }

    /// `p(x) mod n` by Horner's rule.
    pub fn eval(&self, x: &BigNumRef, n: &BigNumRef) -> Result<Nat> {
        let mut acc = BigNum::new()?;
        for c in self.coeffs.iter().rev() {
            acc = bn::add_mod(&*bn::mul_mod(&acc, x, n)?, c, n)?;
        }
        Ok(acc)
    }
}

/// The integer product of two coefficient vectors, classical.
pub fn schoolbook(a: &[Nat], b: &[Nat]) -> Result<Vec<Nat>> {
    if a.is_empty() || b.is_empty() {
        return Ok(Vec::new());
    }
    let mut out: Vec<Nat> = (0..a.len() + b.len() - 1)
        .map(|_| BigNum::new())
        .collect::<core::result::Result<_, _>>()?;
    bn::with_ctx(|ctx| {
        let mut t = BigNum::new()?;
        for (i, x) in a.iter().enumerate() {
            for (j, y) in b.iter().enumerate() {
                t.checked_mul(x, y, ctx)?;
                let s = bn::add(&out[i + j], &t)?;
                out[i + j] = s;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

fn add_into(dst: &mut [Nat], src: &[Nat]) -> Result<()> {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = bn::add(d, s)?;
    }
    Ok(())
}

/// The integer product of two coefficient vectors, Karatsuba (signed intermediate
/// values; the caller reduces).
pub fn karatsuba(a: &[Nat], b: &[Nat]) -> Result<Vec<Nat>> {
    if a.is_empty() || b.is_empty() {
        return Ok(Vec::new());
    }
    if a.len() < KARATSUBA_CUTOFF || b.len() < KARATSUBA_CUTOFF {
        return schoolbook(a, b);
    }
    let m = a.len().max(b.len()).div_ceil(2);
    let split = |v: &[Nat]| -> Result<(Vec<Nat>, Vec<Nat>)> {
        let lo = v[..m.min(v.len())].iter().map(|x| bn::dup(x)).collect::<Result<_>>()?;
        let hi = if v.len() > m {
            v[m..].iter().map(|x| bn::dup(x)).collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        Ok((lo, hi))
    };
    let (a0, a1) = split(a)?;
    let (b0, b1) = split(b)?;
    let sum = |lo: &[Nat], hi: &[Nat]| -> Result<Vec<Nat>> {
        let len = lo.len().max(hi.len());
        (0..len)
            .map(|i| match (lo.get(i), hi.get(i)) {
                (Some(x), Some(y)) => bn::add(x, y),
                (Some(x), None) | (None, Some(x)) => bn::dup(x),
                (None, None) => Ok(BigNum::new()?),
            })
            .collect()
    };
    let z0 = karatsuba(&a0, &b0)?;
    let z2 = karatsuba(&a1, &b1)?;
    let mut z1 = karatsuba(&sum(&a0, &a1)?, &sum(&b0, &b1)?)?;
    for (i, x) in z0.iter().enumerate() {
        z1[i] = bn::sub(&z1[i], x)?;
    }
    for (i, x) in z2.iter().enumerate() {
        z1[i] = bn::sub(&z1[i], x)?;
    }
    let len = a.len() + b.len() - 1;
    let mut out: Vec<Nat> = (0..len)
        .map(|_| BigNum::new())
        .collect::<core::result::Result<_, _>>()?;
    add_into(&mut out, &z0)?;
    let z1_len = z1.len().min(len - m);
    add_into(&mut out[m..], &z1[..z1_len])?;
    if !z2.is_empty() {
        let z2_len = z2.len().min(len - 2 * m);
        add_into(&mut out[2 * m..], &z2[..z2_len])?;
    }
    Ok(out)
}

/// `E(p(y))` for the monic polynomial `p(x) = x^d + Σ_{i<d} αᵢ·xⁱ`, given
/// `enc[i] = E(αᵢ)` (`d = enc.len()`), by Horner's rule on ciphertexts. `y` is a
/// secret of the evaluating party, so every exponentiation is constant-time.
pub fn horner_encrypted(pk: &PublicKey, enc: &[Ciphertext], y: &BigNumRef) -> Result<Ciphertext> {
    let n2 = pk.n_squared();
    let Some((top, rest)) = enc.split_last() else {
        // p(x) = 1
        return Ok(Ciphertext(pk.g_pow(&*bn::from_u64(1)?)?));
    };
    // leading term: 1·y, i.e. g^y, then + α_{d−1}
    let mut acc = bn::mul_mod(&*pk.g_pow(&*bn::reduce(y, pk.n())?)?, &top.0, n2)?;
    for c in rest.iter().rev() {
        acc = bn::mul_mod(&*bn::pow_secret(&acc, y, n2)?, &c.0, n2)?;
    }
    Ok(Ciphertext(acc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paillier::PrivateKey;
    use proptest::prelude::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn n() -> Nat {
        // a 127-bit prime, enough for ring arithmetic tests
        BigNum::from_dec_str("170141183460469231731687303715884105727").unwrap()
    }

    fn nat(v: u64) -> Nat {
        bn::from_u64(v).unwrap()
    }

    #[test]
    fn all_constructions_agree_and_vanish_on_roots() {
        let n = n();
        let mut rng = ChaCha20Rng::from_seed([3; 32]);
        for len in [0usize, 1, 2, 3, 7, 24, 25, 50, 77] {
            let roots: Vec<Nat> = (0..len).map(|_| bn::random_below(&mut rng, &n).unwrap()).collect();
            let a = Poly::from_roots(&roots, &n, Multiplier::Schoolbook).unwrap();
            let b = Poly::from_roots(&roots, &n, Multiplier::Karatsuba).unwrap();
            let c = Poly::from_roots_incremental(&roots, &n).unwrap();
            assert_eq!(a, b, "len {len}");
            assert_eq!(a, c, "len {len}");
            assert_eq!(a.degree(), len);
            for r in &roots {
                assert_eq!(a.eval(r, &n).unwrap(), nat(0));
            }
            assert_eq!(a.coeffs().last().unwrap(), &nat(1));
        }
    }

    #[test]
    fn karatsuba_unbalanced_operands() {
        let a: Vec<Nat> = (1..=40).map(nat).collect();
        let b: Vec<Nat> = (1..=27).map(nat).collect();
        assert_eq!(karatsuba(&a, &b).unwrap(), schoolbook(&a, &b).unwrap());
        assert_eq!(karatsuba(&b, &a).unwrap(), schoolbook(&a, &b).unwrap());
    }

    #[test]
    fn horner_on_ciphertexts_matches_plain_evaluation() {
        let sk = PrivateKey::generate(256).unwrap();
        let pk = sk.public();
        let mut rng = ChaCha20Rng::from_seed([4; 32]);
        let roots: Vec<Nat> = [5u64, 9, 1234, 77].iter().map(|&v| nat(v)).collect();
        let p = Poly::from_roots(&roots, pk.n(), Multiplier::Karatsuba).unwrap();
        let enc: Vec<Ciphertext> = p.coeffs()[..p.degree()]
            .iter()
            .map(|c| pk.encrypt_raw(c, &mut rng).unwrap())
            .collect();
        for y in [5u64, 6, 1234, 99999] {
            let got = sk.decrypt_raw(&horner_encrypted(pk, &enc, &nat(y)).unwrap()).unwrap();
            assert_eq!(got, p.eval(&nat(y), pk.n()).unwrap());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn product_tree_equals_plain_expansion(roots in proptest::collection::vec(0u64..1_000_000, 0..60)) {
            let n = n();
            let r: Vec<Nat> = roots.iter().map(|&v| nat(v)).collect();
            let p = Poly::from_roots(&r, &n, Multiplier::Karatsuba).unwrap();
            for x in [0u64, 1, 17, 999_999] {
                let mut want = nat(1);
                for &v in &roots {
                    let d = bn::sub_mod(&nat(x), &nat(v), &n).unwrap();
                    want = bn::mul_mod(&want, &d, &n).unwrap();
                }
                prop_assert_eq!(p.eval(&nat(x), &n).unwrap(), want);
            }
        }
    }
}
