//! Location-aware scheduling (paper §6.2, Fig. 9). The paper defers the exact
//! function to its full version; this is the one tacit computes.
//!
//! **Inputs.** For every slot `j` each party `i ∈ {A, B}` inputs two *origins*: where
//! it comes from (the location `P_i` of its previous appointment) and where it goes
//! next (`N_i`), each with the distance it can travel from there in the time it has
//! (`p_i`, `n_i`, computed in the clear from the free time around the slot, the
//! meeting duration and a speed), and a bit saying whether the origin is usable (a
//! busy slot has none). Coordinates are integers on a local projection shared by
//! both parties, in grid units: `b` bits each (`coord_bits`); reaches have `r` bits
//! (`reach_bits`, so a reach is below `2^r` units).
//!
//! **Function.** For a slot `j` and a pair of origins `X` of A and `Y` of B, with
//! `Δx = X.x − Y.x`, `Δy = X.y − Y.y`, `d² = Δx² + Δy²` and `R = r_X + r_Y`:
//!
//! ```text
//! feasible(j, X, Y) = usable(X) ∧ usable(Y) ∧ |Δx| < 2^{r+1} ∧ |Δy| < 2^{r+1} ∧ d² ≤ R²
//! ```
//!
//! (the two discs of Fig. 9 overlap; a coordinate difference of `2^{r+1}` or more is
//! beyond any two reaches). Among all feasible `(j, X, Y)` the function picks the one
//! with the smallest `d²` — the least distance the two have to travel in all —
//! breaking ties by the earlier slot, then by the order `(P_A, P_B)`, `(P_A, N_B)`,
//! `(N_A, P_B)`, `(N_A, N_B)`. It outputs whether a slot was found, the slot, and for
//! each party whether to leave from the next appointment (else the previous one);
//! when none is feasible all outputs are zero. No square root appears: `d ≤ R` is
//! decided as `d² ≤ R²`.
//!
//! **Circuit.** Per slot and pair: two `b`-bit subtractions whose high bits are
//! checked to equal the sign (the range test) and whose low `r + 1` bits are turned
//! into magnitudes (`(Δ ⊕ s) + s`); one carry-save column sum of the partial products
//! of both squares; `R` by a ripple adder and its square; one comparator. Then one
//! tournament over the `4n` candidates with key `(¬feasible, d²)`, the slot index and
//! the two choice bits as payload (constant at the leaves, so they cost nothing
//! there), and the outputs masked with `found`.

use super::{Size, index_bits, split_words};
use crate::circuit::{Bit, Builder, Circuit, Word, const_word};
use crate::gmw::PartyInputs;
use crate::{Error, Party, bits};

/// Parameters of the location-aware scheduling circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LocationParams {
    /// Slots in the window.
    pub slots: usize,
    /// Bits of each coordinate (the grid is `2^b × 2^b` units).
    pub coord_bits: usize,
    /// Bits of each reach (a reach is below `2^r` reach units).
    pub reach_bits: usize,
    /// A reach unit is `2^k` grid units (`k` = `reach_shift`): reaches are coarser
    /// than positions, which keeps `R²` small.
    pub reach_shift: usize,
}

impl LocationParams {
    /// The default grid: 10-bit coordinates, 4-bit reaches in units of two grid
    /// units, which keeps the circuit below the paper's sizes for the day, week and
    /// month windows (with 250 m grid units: a 256 km square, positions to 250 m,
    /// reaches up to 7.5 km each in 500 m steps).
    pub fn new(slots: usize) -> Self {
        LocationParams {
            slots,
            coord_bits: 10,
            reach_bits: 4,
            reach_shift: 1,
        }
    }

    /// Bits of a coordinate difference that can still be feasible: `|Δ| < 2^c` with
    /// `c = r + k + 1` (two reaches together are below `2^{r+k+1}` grid units).
    pub fn diff_bits(&self) -> usize {
        self.reach_bits + self.reach_shift + 1
    }

    fn check(&self) -> Result<(), Error> {
        if self.slots == 0 || self.slots > 1 << 16 {
            return Err(Error::Params(format!(
                "{} slots; between 1 and 65536 are supported",
                self.slots
            )));
        }
        if !(1..=16).contains(&self.reach_bits)
            || self.reach_shift > 8
            || self.coord_bits < self.diff_bits() + 1
            || self.coord_bits > 30
        {
            return Err(Error::Params(format!(
                "coordinates of {} bits, reaches of {} bits shifted by {}: need 1 ≤ r ≤ 16, k ≤ 8 and r + k + 2 ≤ b ≤ 30",
                self.coord_bits, self.reach_bits, self.reach_shift
            )));
        }
        Ok(())
    }

    /// Input bits per slot and party: two usable bits, four coordinates, two reaches.
    pub fn slot_bits(&self) -> usize {
        2 + 4 * self.coord_bits + 2 * self.reach_bits
    }

    /// Output widths: found, slot index, A leaves from next, B leaves from next.
    pub fn output_widths(&self) -> [usize; 4] {
        [1, index_bits(self.slots), 1, 1]
    }
}

/// Where a party can leave from for one slot, in grid units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Origin {
    /// x coordinate (`< 2^b`).
    pub x: u32,
    /// y coordinate (`< 2^b`).
    pub y: u32,
    /// How far the party can travel from here (`< 2^r`).
    pub reach: u32,
}

/// One party's input for one slot: its usable origins (`None`: not usable, for
/// example because the slot is busy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SlotInput {
    /// Leaving from the previous appointment.
    pub prev: Option<Origin>,
    /// Leaving from (going towards) the next appointment.
    pub next: Option<Origin>,
}

/// The result: the slot, and for each party whether to leave from the next
/// appointment (`false`: from the previous one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Choice {
    /// Slot index.
    pub slot: usize,
    /// A leaves from its next appointment.
    pub a_from_next: bool,
    /// B leaves from its next appointment.
    pub b_from_next: bool,
}

struct OriginBits {
    usable: Bit,
    x: Word,
    y: Word,
    reach: Word,
}

fn slot_words(p: &LocationParams, bits: &[Bit]) -> [OriginBits; 2] {
    let (b, r) = (p.coord_bits, p.reach_bits);
    let w = split_words(bits, &[1, 1, b, b, b, b, r, r]);
    [
        OriginBits {
            usable: w[0][0],
            x: w[2].clone(),
            y: w[3].clone(),
            reach: w[6].clone(),
        },
        OriginBits {
            usable: w[1][0],
            x: w[4].clone(),
            y: w[5].clone(),
            reach: w[7].clone(),
        },
    ]
}

/// `|u − v|` on its low `c` bits, and whether `|u − v| < 2^c`.
fn small_abs_diff(bld: &mut Builder, u: &[Bit], v: &[Bit], c: usize) -> (Word, Bit) {
    let (d, s) = bld.sub(u, v);
    // In range iff every bit above the low c equals the sign ...
    let high: Word = d[c..]
        .iter()
        .map(|&h| {
            let x = bld.xor(h, s);
            bld.not(x)
        })
        .collect();
    let same = bld.and_all(&high);
    // ... and the magnitude (Δ ⊕ s) + s does not carry out (|Δ| = 2^c).
    let low: Word = d[..c].iter().map(|&x| bld.xor(x, s)).collect();
    let (mag, carry) = bld.increment(&low, s);
    let nc = bld.not(carry);
    let ok = bld.and(same, nc);
    (mag, ok)
}

/// The key `(¬feasible, d²)` of one pair of origins (`2c + 1` bits, `c = r + 1`).
fn pair_key(bld: &mut Builder, p: &LocationParams, x: &OriginBits, y: &OriginBits) -> Word {
    let c = p.diff_bits();
    let (ax, okx) = small_abs_diff(bld, &x.x, &y.x, c);
    let (ay, oky) = small_abs_diff(bld, &x.y, &y.y, c);
    let mut cols = bld.square_columns(&ax);
    for (k, col) in bld.square_columns(&ay).into_iter().enumerate() {
        cols[k].extend(col);
    }
    let d2 = bld.add_columns(cols, 2 * c + 1);
    // d² ≤ R² as the top bit of G = R² + ¬d² + 1 = R² − d² + 2^{2c+1}: the comparison
    // shares the carry-save reduction of R²'s partial products.
    let r = bld.add(&x.reach, &y.reach);
    let sq = bld.square_columns(&r);
    // R² = (r_X + r_Y)² · 2^{2k}: the columns move up by 2k.
    let mut g = vec![Vec::new(); 2 * p.reach_shift];
    g.extend(sq);
    g.resize(2 * c + 2, Vec::new());
    for (k, &bit) in d2.iter().enumerate() {
        let nb = bld.not(bit);
        g[k].push(nb);
    }
    g[0].push(Bit::ONE);
    let g = bld.add_columns(g, 2 * c + 2);
    let fits = g[2 * c + 1];
    let feasible = bld.and_all(&[x.usable, y.usable, okx, oky, fits]);
    let mut key = d2[..2 * c].to_vec();
    key.push(bld.not(feasible));
    key
}

/// Builds the circuit into `bld`: input 0 = A's slots, input 1 = B's; returns the
/// output words (found, slot, A from next, B from next).
pub fn build(bld: &mut Builder, p: &LocationParams) -> Result<Vec<Word>, Error> {
    p.check()?;
    let sb = p.slot_bits();
    let ia = bld.input(p.slots * sb);
    let ib = bld.input(p.slots * sb);
    let ib_ = index_bits(p.slots);
    let mut cands: Vec<(Word, Word)> = Vec::with_capacity(4 * p.slots);
    for j in 0..p.slots {
        let a = slot_words(p, &ia[j * sb..(j + 1) * sb]);
        let b = slot_words(p, &ib[j * sb..(j + 1) * sb]);
        for (ka, oa) in a.iter().enumerate() {
            for (kb, ob) in b.iter().enumerate() {
                let key = pair_key(bld, p, oa, ob);
                let mut payload = const_word(j as u64, ib_);
                payload.push(Bit::Const(ka == 1));
                payload.push(Bit::Const(kb == 1));
                cands.push((key, payload));
            }
        }
    }
    let (top, payload) = bld
        .argmin_keep(&cands, 1)
        .ok_or_else(|| Error::Params("no candidates".into()))?;
    let found = bld.not(top[0]);
    let masked = bld.and_word(found, &payload);
    Ok(vec![
        vec![found],
        masked[..ib_].to_vec(),
        vec![masked[ib_]],
        vec![masked[ib_ + 1]],
    ])
}

/// The circuit.
pub fn circuit(p: &LocationParams) -> Result<Circuit, Error> {
    let mut b = Builder::new();
    let outs = build(&mut b, p)?;
    b.finish(&outs)
}

/// AND gates and depth without holding the circuit.
pub fn size(p: &LocationParams) -> Result<Size, Error> {
    super::count(|b| build(b, p).map(|_| ()))
}

/// One party's input bits in the circuit's order.
pub fn encode(p: &LocationParams, slots: &[SlotInput]) -> Result<Vec<bool>, Error> {
    p.check()?;
    if slots.len() != p.slots {
        return Err(Error::Input(format!(
            "{} slots given; the window has {}",
            slots.len(),
            p.slots
        )));
    }
    let (b, r) = (p.coord_bits, p.reach_bits);
    let mut out = Vec::with_capacity(p.slots * p.slot_bits());
    for s in slots {
        for o in [&s.prev, &s.next] {
            if let Some(o) = o
                && (o.x as u64 >= 1 << b || o.y as u64 >= 1 << b || o.reach as u64 >= 1 << r)
            {
                return Err(Error::Input(format!(
                    "origin ({}, {}) with reach {} does not fit {b}-bit coordinates and {r}-bit reaches",
                    o.x, o.y, o.reach
                )));
            }
        }
        out.push(s.prev.is_some());
        out.push(s.next.is_some());
        let z = Origin { x: 0, y: 0, reach: 0 };
        let (pv, nx) = (s.prev.unwrap_or(z), s.next.unwrap_or(z));
        out.extend(bits::bits_from_u64(pv.x as u64, b));
        out.extend(bits::bits_from_u64(pv.y as u64, b));
        out.extend(bits::bits_from_u64(nx.x as u64, b));
        out.extend(bits::bits_from_u64(nx.y as u64, b));
        out.extend(bits::bits_from_u64(pv.reach as u64, r));
        out.extend(bits::bits_from_u64(nx.reach as u64, r));
    }
    Ok(out)
}

/// The party's [`PartyInputs`] (A owns input 0, B input 1).
pub fn inputs(p: &LocationParams, party: Party, slots: &[SlotInput]) -> Result<PartyInputs, Error> {
    let mine = Some(vec![encode(p, slots)?]);
    Ok(PartyInputs {
        values: match party {
            Party::A => vec![mine, None],
            Party::B => vec![None, mine],
        },
    })
}

/// Reads the outputs of one instance.
pub fn decode(p: &LocationParams, out: &[Vec<bool>]) -> Result<Option<Choice>, Error> {
    let w = p.output_widths();
    if out.len() != 4 || out.iter().zip(w).any(|(o, w)| o.len() != w) {
        return Err(Error::Params(
            "the outputs do not have the location circuit's widths".into(),
        ));
    }
    if !out[0][0] {
        return Ok(None);
    }
    let slot = bits::u64_from_bits(&out[1]) as usize;
    if slot >= p.slots {
        return Err(Error::Params(format!("the circuit chose slot {slot} of {}", p.slots)));
    }
    Ok(Some(Choice {
        slot,
        a_from_next: out[2][0],
        b_from_next: out[3][0],
    }))
}

/// The plaintext function the circuit computes (see the module documentation).
pub fn reference(p: &LocationParams, a: &[SlotInput], b: &[SlotInput]) -> Option<Choice> {
    let lim = 1i64 << p.diff_bits();
    let mut best: Option<(i64, Choice)> = None;
    for j in 0..p.slots.min(a.len()).min(b.len()) {
        for (ka, oa) in [a[j].prev, a[j].next].iter().enumerate() {
            for (kb, ob) in [b[j].prev, b[j].next].iter().enumerate() {
                let (Some(x), Some(y)) = (oa, ob) else { continue };
                let dx = x.x as i64 - y.x as i64;
                let dy = x.y as i64 - y.y as i64;
                if dx.abs() >= lim || dy.abs() >= lim {
                    continue;
                }
                let d2 = dx * dx + dy * dy;
                let r = ((x.reach + y.reach) as i64) << p.reach_shift;
                if d2 > r * r {
                    continue;
                }
                if best.is_none_or(|(b, _)| d2 < b) {
                    best = Some((
                        d2,
                        Choice {
                            slot: j,
                            a_from_next: ka == 1,
                            b_from_next: kb == 1,
                        },
                    ));
                }
            }
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn origin(b: usize, r: usize) -> impl Strategy<Value = Option<Origin>> {
        // Clustered coordinates so that feasible pairs are common.
        let base = 1u32 << (b - 1);
        let spread = 1u32 << (r + 3);
        proptest::option::weighted(
            0.8,
            (0..spread, 0..spread, 0..(1u32 << r)).prop_map(move |(x, y, reach)| Origin {
                x: base - spread / 2 + x,
                y: base - spread / 2 + y,
                reach,
            }),
        )
    }

    fn slots(n: usize) -> impl Strategy<Value = Vec<SlotInput>> {
        proptest::collection::vec(
            (origin(10, 4), origin(10, 4)).prop_map(|(prev, next)| SlotInput { prev, next }),
            n,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn circuit_matches_the_reference(a in slots(5), b in slots(5)) {
            let p = LocationParams { slots: 5, coord_bits: 10, reach_bits: 4, reach_shift: 1 };
            let c = circuit(&p).unwrap();
            let out = c.eval(&[encode(&p, &a).unwrap(), encode(&p, &b).unwrap()]).unwrap();
            prop_assert_eq!(decode(&p, &out).unwrap(), reference(&p, &a, &b));
        }
    }

    #[test]
    fn edge_cases_of_the_range_test() {
        let p = LocationParams {
            slots: 1,
            coord_bits: 8,
            reach_bits: 3,
            reach_shift: 0,
        };
        let c = circuit(&p).unwrap();
        // c = 4: differences of 15 are in range, 16 are not; reaches up to 7 each.
        for (ax, bx, ra, rb) in [
            (100u32, 85u32, 7u32, 7u32),
            (100, 84, 7, 7),
            (84, 100, 7, 7),
            (85, 100, 7, 7),
            (0, 255, 7, 7),
            (255, 0, 7, 7),
            (10, 10, 0, 0),
            (10, 11, 0, 1),
            (10, 12, 0, 1),
        ] {
            let a = [SlotInput {
                prev: Some(Origin {
                    x: ax,
                    y: 50,
                    reach: ra,
                }),
                next: None,
            }];
            let b = [SlotInput {
                prev: None,
                next: Some(Origin {
                    x: bx,
                    y: 50,
                    reach: rb,
                }),
            }];
            let out = c.eval(&[encode(&p, &a).unwrap(), encode(&p, &b).unwrap()]).unwrap();
            assert_eq!(decode(&p, &out).unwrap(), reference(&p, &a, &b), "{ax} {bx} {ra} {rb}");
        }
        assert!(
            encode(
                &p,
                &[SlotInput {
                    prev: Some(Origin { x: 256, y: 0, reach: 0 }),
                    next: None
                }]
            )
            .is_err()
        );
    }

    #[test]
    fn counting_and_building_agree() {
        let p = LocationParams::new(7);
        let s = circuit(&p).unwrap().stats();
        let n = size(&p).unwrap();
        assert_eq!((s.and_gates, s.and_depth), (n.and_gates, n.depth));
    }

    #[test]
    fn no_larger_than_the_paper() {
        for (_, n) in super::super::paper::WINDOWS {
            let ours = size(&LocationParams::new(n)).unwrap();
            let paper = super::super::paper::location(n).unwrap();
            assert!(ours.and_gates <= paper.and_gates, "{n} slots: {ours:?} vs {paper:?}");
        }
    }
}
