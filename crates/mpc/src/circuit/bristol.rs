//! The Bristol Fashion circuit format (Archer, Bogdanov, Lindell et al.; the format of
//! the SCALE-MAMBA / MP-SPDZ circuit set).
//!
//! ```text
//! <gates> <wires>
//! <input values> <width>...
//! <output values> <width>...
//!
//! <in> <out> <input wires>... <output wires>... XOR|AND|INV|EQ|EQW|MAND
//! ```
//!
//! Input values occupy the first wires, in order; output values the last wires.
//! `EQ` takes a constant (`0` or `1`) instead of an input wire; `MAND` with `2k`
//! inputs and `k` outputs is `k` AND gates, output `i` = input `i` ∧ input `k + i`.
//!
//! The parser is bounded ([`ParseLimits`]) and says on which line anything is wrong.
//! Writing is the inverse: [`write()`] renumbers wires so that the outputs are last.

use super::{Circuit, Gate, Wire};
use crate::Error;
use std::fmt::Write as _;

/// Bounds checked before anything is allocated.
#[derive(Debug, Clone, Copy)]
pub struct ParseLimits {
    /// Most wires.
    pub max_wires: u32,
    /// Most gates (after MAND is split).
    pub max_gates: u32,
    /// Most input or output values.
    pub max_values: u32,
    /// The memory (bytes) the circuit may take to hold and evaluate, checked against
    /// [`memory_estimate`] of the header's counts before anything is allocated
    /// (`None`: no bound beyond the counts).
    pub max_bytes: Option<u64>,
    /// Bytes the caller already holds out of `max_bytes` (the file's text): the
    /// circuit may take `max_bytes − held_bytes`, and a refusal names both.
    pub held_bytes: u64,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_wires: 1 << 26,
            max_gates: 1 << 26,
            max_values: 1 << 16,
            max_bytes: None,
            held_bytes: 0,
        }
    }
}

/// About how many bytes a circuit of `gates` gates and `wires` wires takes to hold
/// and to run under GMW (one instance): the parsed gates (16 bytes each), their AND
/// layers (16), a copy the caller keeps (16); per wire the checks, levels and slots
/// of the layering (16). A circuit of 2^26 gates and wires takes about 4 GB.
pub fn memory_estimate(gates: u64, wires: u64) -> u64 {
    gates.saturating_mul(48).saturating_add(wires.saturating_mul(16))
}

/// One line for a circuit that does not fit in `budget` bytes, of which the caller
/// already holds `held` (the file's text).
pub fn too_big(gates: u64, wires: u64, budget: u64, held: u64) -> String {
    let mib = |b: u64| {
        let m = b as f64 / (1u64 << 20) as f64;
        if m < 100.0 {
            format!("{m:.1} MiB")
        } else {
            format!("{} MiB", b >> 20)
        }
    };
    let beside = if held > 0 {
        format!(" beside the {} of the file's text", mib(held))
    } else {
        String::new()
    };
    format!(
        "{gates} gates and {wires} wires need about {} to hold and evaluate{beside}; this process may use {}",
        mib(memory_estimate(gates, wires)),
        mib(budget)
    )
}

fn err(line: usize, why: impl Into<String>) -> Error {
    Error::Bristol { line, why: why.into() }
}

fn num(tok: Option<&str>, line: usize, what: &str) -> Result<u32, Error> {
    num_named(tok, line, || what.to_string())
}

/// [`num`] with the name built only for an error (a gate line reads up to four
/// numbers, and a circuit has up to millions of lines).
fn num_named(tok: Option<&str>, line: usize, what: impl Fn() -> String) -> Result<u32, Error> {
    let t = tok.ok_or_else(|| err(line, format!("{} is missing", what())))?;
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
        return Err(err(line, format!("{} {t:?} is not a number", what())));
    }
    t.parse::<u32>()
        .map_err(|_| err(line, format!("{} {t} does not fit 32 bits", what())))
}

/// Parses Bristol Fashion text with the default limits.
pub fn parse(text: &str) -> Result<Circuit, Error> {
    parse_with(text, &ParseLimits::default())
}

/// Parses Bristol Fashion text.
pub fn parse_with(text: &str, limits: &ParseLimits) -> Result<Circuit, Error> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty());
    let (ln, header) = lines.next().ok_or_else(|| err(1, "the file is empty"))?;
    let mut t = header.split_ascii_whitespace();
    let ngates = num(t.next(), ln, "the gate count")?;
    let nwires = num(t.next(), ln, "the wire count")?;
    if t.next().is_some() {
        return Err(err(ln, "the header has more than two numbers"));
    }
    if nwires > limits.max_wires {
        return Err(err(ln, format!("{nwires} wires; the limit is {}", limits.max_wires)));
    }
    if ngates > limits.max_gates {
        return Err(err(ln, format!("{ngates} gates; the limit is {}", limits.max_gates)));
    }
    if let Some(budget) = limits.max_bytes
        && memory_estimate(ngates as u64, nwires as u64).saturating_add(limits.held_bytes) > budget
    {
        return Err(err(
            ln,
            too_big(ngates as u64, nwires as u64, budget, limits.held_bytes),
        ));
    }
    let mut values = |what: &str| -> Result<Vec<u32>, Error> {
        let (ln, l) = lines
            .next()
            .ok_or_else(|| err(0, format!("the {what} line is missing")))?;
        let mut t = l.split_ascii_whitespace();
        let n = num(t.next(), ln, &format!("the number of {what} values"))?;
        if n > limits.max_values {
            return Err(err(
                ln,
                format!("{n} {what} values; the limit is {}", limits.max_values),
            ));
        }
        let mut v = Vec::with_capacity(n as usize);
        let mut total = 0u64;
        for i in 0..n {
            let w = num(t.next(), ln, &format!("the width of {what} {i}"))?;
            total += w as u64;
            if total > nwires as u64 {
                return Err(err(ln, format!("the {what} values need more than the {nwires} wires")));
            }
            v.push(w);
        }
        if t.next().is_some() {
            return Err(err(ln, format!("more {what} widths than the {n} announced")));
        }
        Ok(v)
    };
    let inputs = values("input")?;
    let outputs = values("output")?;
    let total_in: u64 = inputs.iter().map(|&w| w as u64).sum();
    let total_out: u64 = outputs.iter().map(|&w| w as u64).sum();
    if total_in + total_out > nwires as u64 {
        return Err(err(
            3,
            "inputs and outputs together need more wires than the header declares",
        ));
    }
    // Every gate line takes at least 9 bytes ("1 1 0 1 EQ"), so the text bounds the
    // gates we may have to hold.
    let cap = (ngates as usize).min(text.len() / 9 + 1);
    let mut gates = Vec::with_capacity(cap);
    let mut written = vec![false; nwires as usize];
    for w in written.iter_mut().take(total_in as usize) {
        *w = true;
    }
    let mut lines_read = 0u32;
    let mut ins: Vec<Wire> = Vec::new();
    let mut outs: Vec<Wire> = Vec::new();
    for (ln, l) in lines {
        lines_read += 1;
        if lines_read > ngates {
            return Err(err(
                ln,
                format!("more gate lines than the {ngates} the header announces"),
            ));
        }
        let mut t = l.split_ascii_whitespace();
        let nin = num(t.next(), ln, "the input count")?;
        let nout = num(t.next(), ln, "the output count")?;
        if nin > 2 * 1024 || nout > 1024 {
            return Err(err(
                ln,
                format!("a gate with {nin} inputs and {nout} outputs is not allowed"),
            ));
        }
        ins.clear();
        outs.clear();
        for i in 0..nin {
            ins.push(num_named(t.next(), ln, || format!("input wire {i}"))?);
        }
        for i in 0..nout {
            outs.push(num_named(t.next(), ln, || format!("output wire {i}"))?);
        }
        let op = t.next().ok_or_else(|| err(ln, "the gate type is missing"))?;
        if t.next().is_some() {
            return Err(err(ln, "extra fields after the gate type"));
        }
        let arity = |a: u32, o: u32| -> Result<(), Error> {
            if nin != a || nout != o {
                return Err(err(
                    ln,
                    format!("{op} takes {a} inputs and {o} outputs, not {nin} and {nout}"),
                ));
            }
            Ok(())
        };
        let check_in = |w: Wire, written: &[bool]| -> Result<(), Error> {
            if w >= nwires {
                return Err(err(
                    ln,
                    format!("wire {w} does not exist (the circuit has {nwires} wires)"),
                ));
            }
            if !written[w as usize] {
                return Err(err(
                    ln,
                    format!("wire {w} is read before it is written (gates must be in topological order)"),
                ));
            }
            Ok(())
        };
        let mut new_gates: [Option<Gate>; 1] = [None];
        let mut mand: Vec<Gate> = Vec::new();
        match op {
            "XOR" | "AND" => {
                arity(2, 1)?;
                check_in(ins[0], &written)?;
                check_in(ins[1], &written)?;
                let (a, b, out) = (ins[0], ins[1], outs[0]);
                new_gates[0] = Some(if op == "XOR" {
                    Gate::Xor { a, b, out }
                } else {
                    Gate::And { a, b, out }
                });
            }
            "INV" | "NOT" => {
                arity(1, 1)?;
                check_in(ins[0], &written)?;
                new_gates[0] = Some(Gate::Inv {
                    a: ins[0],
                    out: outs[0],
                });
            }
            "EQW" => {
                arity(1, 1)?;
                check_in(ins[0], &written)?;
                new_gates[0] = Some(Gate::Copy {
                    a: ins[0],
                    out: outs[0],
                });
            }
            "EQ" => {
                arity(1, 1)?;
                if ins[0] > 1 {
                    return Err(err(ln, format!("EQ assigns a constant 0 or 1, not {}", ins[0])));
                }
                new_gates[0] = Some(Gate::Const {
                    value: ins[0] == 1,
                    out: outs[0],
                });
            }
            "MAND" => {
                if nin == 0 || nin != 2 * nout {
                    return Err(err(
                        ln,
                        format!("MAND takes 2k inputs and k outputs, not {nin} and {nout}"),
                    ));
                }
                for &w in &ins {
                    check_in(w, &written)?;
                }
                let k = nout as usize;
                for i in 0..k {
                    mand.push(Gate::And {
                        a: ins[i],
                        b: ins[k + i],
                        out: outs[i],
                    });
                }
            }
            other => return Err(err(ln, format!("unknown gate type {other:?}"))),
        }
        for g in new_gates.into_iter().flatten().chain(mand) {
            let o = g.output();
            if o >= nwires {
                return Err(err(
                    ln,
                    format!("wire {o} does not exist (the circuit has {nwires} wires)"),
                ));
            }
            if written[o as usize] {
                return Err(err(ln, format!("wire {o} is written a second time")));
            }
            written[o as usize] = true;
            if gates.len() as u64 >= limits.max_gates as u64 {
                return Err(err(ln, format!("more than {} gates", limits.max_gates)));
            }
            gates.push(g);
        }
    }
    if lines_read != ngates {
        return Err(err(
            text.lines().count(),
            format!("the header announces {ngates} gates but the file has {lines_read}"),
        ));
    }
    let first_out = nwires - total_out as u32;
    let output_wires: Vec<Wire> = (first_out..nwires).collect();
    for &w in &output_wires {
        if !written[w as usize] {
            return Err(err(text.lines().count(), format!("output wire {w} is never written")));
        }
    }
    Circuit::new(nwires, inputs, outputs, gates, output_wires)
}

/// Writes a circuit in Bristol Fashion. Wires are renumbered so that the inputs come
/// first and the outputs last; an output that is an input, a repeated output or a
/// wire that is also read by a later gate gets an `EQW` copy.
pub fn write(c: &Circuit) -> String {
    let ni = c.total_input_bits();
    let no = c.output_wires().len();
    // Which gate outputs can be renamed to their output position directly.
    let mut out_pos: Vec<Option<usize>> = vec![None; c.num_wires()];
    let mut copies: Vec<(Wire, usize)> = Vec::new();
    let mut read_after: Vec<bool> = vec![false; c.num_wires()];
    for g in c.gates() {
        let (ins, n) = g.inputs();
        for &w in &ins[..n] {
            read_after[w as usize] = true;
        }
    }
    for (k, &w) in c.output_wires().iter().enumerate() {
        if (w as usize) < ni || out_pos[w as usize].is_some() || read_after[w as usize] {
            copies.push((w, k));
        } else {
            out_pos[w as usize] = Some(k);
        }
    }
    let internal = c.gates().len() - (no - copies.len());
    let total_wires = ni + internal + no;
    let first_out = ni + internal;
    let mut map: Vec<u32> = vec![u32::MAX; c.num_wires()];
    for (i, m) in map.iter_mut().enumerate().take(ni) {
        *m = i as u32;
    }
    let mut next = ni as u32;
    for g in c.gates() {
        let o = g.output() as usize;
        map[o] = match out_pos[o] {
            Some(k) => (first_out + k) as u32,
            None => {
                next += 1;
                next - 1
            }
        };
    }
    let mut s = String::with_capacity(c.gates().len() * 16 + 64);
    let _ = writeln!(s, "{} {}", c.gates().len() + copies.len(), total_wires);
    let _ = write!(s, "{}", c.input_widths().len());
    for w in c.input_widths() {
        let _ = write!(s, " {w}");
    }
    let _ = write!(s, "\n{}", c.output_widths().len());
    for w in c.output_widths() {
        let _ = write!(s, " {w}");
    }
    s.push_str("\n\n");
    for g in c.gates() {
        let m = |w: Wire| map[w as usize];
        let _ = match *g {
            Gate::Xor { a, b, out } => writeln!(s, "2 1 {} {} {} XOR", m(a), m(b), m(out)),
            Gate::And { a, b, out } => writeln!(s, "2 1 {} {} {} AND", m(a), m(b), m(out)),
            Gate::Inv { a, out } => writeln!(s, "1 1 {} {} INV", m(a), m(out)),
            Gate::Copy { a, out } => writeln!(s, "1 1 {} {} EQW", m(a), m(out)),
            Gate::Const { value, out } => writeln!(s, "1 1 {} {} EQ", value as u8, m(out)),
        };
    }
    for (w, k) in copies {
        let _ = writeln!(s, "1 1 {} {} EQW", map[w as usize], first_out + k);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Item 8 of issue 27: a header that announces more than the memory the process
    /// may use is refused on line 1, before the gates are read or anything is sized
    /// by the counts.
    #[test]
    fn a_circuit_larger_than_the_memory_budget_is_refused_at_its_header() {
        let text = "67108864 67108864\n1 64\n1 64\n\n2 1 0 1 128 XOR\n";
        let limits = ParseLimits {
            max_bytes: Some(1 << 30),
            ..ParseLimits::default()
        };
        let e = parse_with(text, &limits).unwrap_err().to_string();
        assert!(e.starts_with("circuit line 1:") && e.contains("MiB"), "{e}");
        assert_eq!(e.lines().count(), 1);
        // The same circuit within the budget gets as far as its gates.
        let e = parse_with(text, &ParseLimits::default()).unwrap_err().to_string();
        assert!(!e.contains("MiB"), "{e}");
        assert_eq!(memory_estimate(1 << 26, 1 << 26), 4 << 30);
    }

    const TINY: &str = "3 6\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n1 1 2 3 INV\n2 1 3 0 5 XOR\n";

    #[test]
    fn parses_and_writes() {
        let c = parse(TINY).unwrap();
        assert_eq!(c.stats().and_gates, 1);
        let again = parse(&write(&c)).unwrap();
        for x in 0..4u8 {
            let i = [vec![x & 1 == 1], vec![x & 2 == 2]];
            assert_eq!(c.eval(&i).unwrap(), again.eval(&i).unwrap());
        }
    }

    #[test]
    fn mand_splits() {
        let t = "1 8\n2 2 2\n1 2\n\n4 2 0 1 2 3 6 7 MAND\n";
        let c = parse(t).unwrap();
        assert_eq!(c.stats().and_gates, 2);
        let out = c.eval(&[vec![true, true], vec![true, false]]).unwrap();
        // out0 = w0 & w2 = 1 & 1; out1 = w1 & w3 = 1 & 0
        assert_eq!(out, vec![vec![true, false]]);
    }

    #[test]
    fn errors_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "empty"),
            ("3 x\n", 1, "not a number"),
            ("1 4\n2 1 1\n1 1\n\n2 1 0 3 3 AND\n", 5, "before it is written"),
            ("1 4\n2 1 1\n1 1\n\n2 1 0 1 9 AND\n", 5, "does not exist"),
            ("1 4\n2 1 1\n1 1\n\n2 1 0 1 3 NAND\n", 5, "unknown gate"),
            ("1 4\n2 1 1\n1 1\n\n1 1 0 3 AND\n", 5, "takes 2 inputs"),
            ("2 4\n2 1 1\n1 1\n\n2 1 0 1 3 AND\n", 5, "announces 2 gates"),
            ("1 4\n2 1 1\n1 1\n\n2 1 0 1 2 AND\n", 5, "never written"),
            ("1 4\n2 1 1\n1 1\n\n1 1 2 3 EQ\n", 5, "constant"),
            ("1 3\n2 1 1\n1 1\n\n2 1 0 1 1 XOR\n", 5, "second time"),
            ("1 99999999999\n", 1, "32 bits"),
            ("1 4\n2 1 1 1\n1 1\n", 2, "more input widths"),
        ];
        for (text, line, what) in cases {
            match parse(text) {
                Err(Error::Bristol { line: l, why }) => {
                    assert!(why.contains(what), "{text:?}: {why}");
                    if *line != 0 {
                        assert_eq!(l, *line, "{text:?}: {why}");
                    }
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn limits_hold_before_allocation() {
        let limits = ParseLimits {
            max_wires: 10,
            max_gates: 10,
            max_values: 2,
            max_bytes: None,
            held_bytes: 0,
        };
        assert!(parse_with("1 11\n", &limits).is_err());
        assert!(parse_with("11 5\n", &limits).is_err());
        assert!(parse_with("1 5\n3 1 1 1\n", &limits).is_err());
        // a header announcing 2^32-1 gates on a short text does not allocate them
        assert!(parse("4294967295 4\n2 1 1\n1 1\n\n2 1 0 1 3 AND\n").is_err());
    }
}
