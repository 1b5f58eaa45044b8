#![no_main]
//! The Bristol Fashion parser (circuits are files a user may get from anyone): within
//! small limits, and a parsed circuit survives write → parse with the same gate counts
//! and the same outputs on an all-zero input.
use libfuzzer_sys::fuzz_target;
use tacit_mpc::circuit::bristol::{ParseLimits, parse_with, write};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = ParseLimits {
        max_wires: 1 << 12,
        max_gates: 1 << 12,
        max_values: 16,
        max_bytes: Some(64 << 20),
    };
    if let Ok(c) = parse_with(text, &limits) {
        let again = parse_with(&write(&c), &ParseLimits::default()).expect("written circuits parse");
        let (s, t) = (c.stats(), again.stats());
        assert_eq!(
            (s.and_gates, s.xor_gates, s.inv_gates, s.and_depth),
            (t.and_gates, t.xor_gates, t.inv_gates, t.and_depth)
        );
        let zeros: Vec<Vec<bool>> = c.input_widths().iter().map(|&w| vec![false; w as usize]).collect();
        assert_eq!(c.eval(&zeros).unwrap(), again.eval(&zeros).unwrap());
    }
});
