//! Availability scheduling (paper §6.1): each party turns its calendar into `n`
//! free/busy bits over a window (`1` = free) and the circuit is their bitwise AND,
//! `t_Avail = t_A ∧ t_B`: `n` AND gates at depth 1. Both parties learn the common free
//! slots; the earliest (or the best-ranked by the caller) is proposed.

use crate::circuit::{Builder, Circuit};
use crate::gmw::PartyInputs;
use crate::{Error, Party};

/// The circuit for `n` slots: input 0 = A's free bits, input 1 = B's; one output of
/// `n` bits.
pub fn circuit(n: usize) -> Result<Circuit, Error> {
    if n == 0 {
        return Err(Error::Params("the window has no slots".into()));
    }
    let mut b = Builder::new();
    let x = b.input(n);
    let y = b.input(n);
    let out: Vec<_> = x.iter().zip(&y).map(|(&p, &q)| b.and(p, q)).collect();
    b.finish(&[out])
}

/// One party's inputs (its free bits) for [`crate::driver::run`] with the default
/// owners (A: input 0, B: input 1).
pub fn inputs(party: Party, free: &[bool]) -> PartyInputs {
    let mine = Some(vec![free.to_vec()]);
    PartyInputs {
        values: match party {
            Party::A => vec![mine, None],
            Party::B => vec![None, mine],
        },
    }
}

/// The plaintext function: common free slots.
pub fn reference(a: &[bool], b: &[bool]) -> Vec<bool> {
    a.iter().zip(b).map(|(&x, &y)| x && y).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn circuit_is_the_and(a in proptest::collection::vec(any::<bool>(), 56), b in proptest::collection::vec(any::<bool>(), 56)) {
            let c = circuit(56).unwrap();
            prop_assert_eq!(&c.eval(&[a.clone(), b.clone()]).unwrap()[0], &reference(&a, &b));
        }
    }

    #[test]
    fn sizes_match_the_paper() {
        for (_, n) in super::super::paper::WINDOWS {
            let s = circuit(n).unwrap().stats();
            let p = super::super::paper::availability(n).unwrap();
            assert_eq!((s.and_gates, s.and_depth), (p.and_gates, p.depth));
        }
    }
}
