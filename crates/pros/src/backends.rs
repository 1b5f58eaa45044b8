//! The big-integer backends measured side by side for the choice of the default
//! (`tacit bench pros`, key `modexp_vs_best`): one modular exponentiation
//! `b^e mod m` with a secret exponent, in each.
//!
//! * `openssl` — OpenSSL `BIGNUM`, `BN_mod_exp_mont_consttime` (the default backend);
//! * `crypto-bigint` — RustCrypto's `BoxedMontyForm::pow` (pure Rust, constant-time);
//! * `gmp` — GMP's `mpz_powm_sec` through rug, only with the non-default `gmp` feature
//!   (rug is LGPL; it is a measured baseline, never a dependency of the default build).

use crate::Result;
use crate::bn::{self, Nat};
use openssl::bn::BigNumRef;

/// A backend that can run one modular exponentiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// OpenSSL BIGNUM (default).
    OpenSsl,
    /// crypto-bigint, boxed Montgomery form.
    CryptoBigint,
    /// GMP through rug (`gmp` feature).
    Gmp,
}

impl Backend {
    /// Name for tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Backend::OpenSsl => "openssl",
            Backend::CryptoBigint => "crypto-bigint",
            Backend::Gmp => "gmp",
        }
    }

    /// The backends compiled into this build.
    pub fn available() -> Vec<Backend> {
        let mut v = vec![Backend::OpenSsl, Backend::CryptoBigint];
        if cfg!(feature = "gmp") {
            v.push(Backend::Gmp);
        }
        v
    }
}

/// Operands prepared for one backend, so that a benchmark times only the
/// exponentiation.
pub enum Prepared {
    /// OpenSSL operands.
    OpenSsl(Nat, Nat, Nat),
    /// crypto-bigint operands.
    CryptoBigint(crypto_bigint::modular::BoxedMontyForm, crypto_bigint::BoxedUint),
    /// GMP operands.
    #[cfg(feature = "gmp")]
    Gmp(rug::Integer, rug::Integer, rug::Integer),
}

impl core::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Prepared(..)")
    }
}

/// Prepares `b^e mod m` (`m` odd) for `backend`; `None` if it is not compiled in.
pub fn prepare(backend: Backend, b: &BigNumRef, e: &BigNumRef, m: &BigNumRef) -> Result<Option<Prepared>> {
    Ok(match backend {
        Backend::OpenSsl => Some(Prepared::OpenSsl(bn::dup(b)?, bn::dup(e)?, bn::dup(m)?)),
        Backend::CryptoBigint => {
            use crypto_bigint::modular::{BoxedMontyForm, BoxedMontyParams};
            use crypto_bigint::{BoxedUint, Odd};
            let bits = (m.num_bits() as u32).div_ceil(64) * 64;
            let conv = |x: &BigNumRef| -> Result<BoxedUint> {
                let bytes = bn::to_fixed(x, bits as usize / 8)?;
                BoxedUint::from_be_slice(&bytes, bits)
                    .map_err(|e| crate::Error::Backend(format!("crypto-bigint: {e:?}")))
            };
            let modulus = Odd::new(conv(m)?)
                .into_option()
                .ok_or_else(|| crate::Error::Backend("even modulus".into()))?;
            let params = BoxedMontyParams::new(modulus);
            Some(Prepared::CryptoBigint(BoxedMontyForm::new(conv(b)?, params), conv(e)?))
        }
        #[cfg(feature = "gmp")]
        Backend::Gmp => {
            let conv = |x: &BigNumRef| rug::Integer::from_digits(&x.to_vec(), rug::integer::Order::Msf);
            Some(Prepared::Gmp(conv(b), conv(e), conv(m)))
        }
        #[cfg(not(feature = "gmp"))]
        Backend::Gmp => None,
    })
}

/// Runs the prepared exponentiation once; returns the result as big-endian bytes.
pub fn run(p: &Prepared) -> Result<Vec<u8>> {
    Ok(match p {
        Prepared::OpenSsl(b, e, m) => bn::pow_secret(b, e, m)?.to_vec(),
        Prepared::CryptoBigint(b, e) => {
            let r = b.pow(e).retrieve().to_be_bytes();
            let skip = r.iter().take_while(|x| **x == 0).count();
            r[skip..].to_vec()
        }
        #[cfg(feature = "gmp")]
        Prepared::Gmp(b, e, m) => b.clone().secure_pow_mod(e, m).to_digits::<u8>(rug::integer::Order::Msf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn all_backends_agree() {
        let mut rng = ChaCha20Rng::from_seed([5; 32]);
        let mut m = bn::from_u64(0).unwrap();
        m.set_bit(511).unwrap();
        m.set_bit(0).unwrap();
        m.set_bit(77).unwrap();
        let b = bn::random_below(&mut rng, &m).unwrap();
        let e = bn::random_below(&mut rng, &m).unwrap();
        let want = bn::pow_public(&b, &e, &m).unwrap().to_vec();
        for be in Backend::available() {
            let p = prepare(be, &b, &e, &m).unwrap().unwrap();
            assert_eq!(run(&p).unwrap(), want, "{}", be.name());
        }
    }
}
