//! The circuit sizes the paper reports (Tables 2 and 3), for comparison: every tacit
//! circuit must be no larger at any point.

use super::Size;

/// The three windows of paper §6.1: a day 8:00–22:00 in 15-minute slots, a week in
/// 15-minute slots, a month in 10-minute slots.
pub const WINDOWS: [(&str, usize); 3] = [("day", 56), ("week", 392), ("month", 2604)];

/// Availability scheduling (Table 2): `n` AND gates at depth 1.
pub fn availability(slots: usize) -> Option<Size> {
    WINDOWS.iter().find(|w| w.1 == slots).map(|_| Size {
        and_gates: slots,
        depth: 1,
    })
}

/// Location-aware scheduling (Table 2).
pub fn location(slots: usize) -> Option<Size> {
    match slots {
        56 => Some(Size {
            and_gates: 39_864,
            depth: 69,
        }),
        392 => Some(Size {
            and_gates: 280_605,
            depth: 87,
        }),
        2604 => Some(Size {
            and_gates: 1_872_206,
            depth: 106,
        }),
        _ => None,
    }
}

/// The set sizes of Table 3.
pub const PSI_SIZES: [usize; 6] = [32, 64, 128, 256, 512, 1024];
/// The element lengths of Table 3.
pub const PSI_BITS: [usize; 3] = [24, 32, 160];

/// SCS-WN set intersection (Table 3): AND gates for `n` elements per party of `σ` bits
/// (the paper gives no depth).
pub fn psi(sigma: usize, n: usize) -> Option<usize> {
    let row: [usize; 6] = match sigma {
        24 => [22_432, 52_096, 118_656, 266_240, 590_336, 1_296_384],
        32 => [30_368, 70_528, 160_640, 360_448, 799_232, 1_755_136],
        160 => [156_768, 364_096, 829_312, 1_860_864, 4_126_208, 9_061_376],
        _ => return None,
    };
    PSI_SIZES.iter().position(|&m| m == n).map(|i| row[i])
}

/// Ad-hoc times the paper measured on phones, in seconds (Table 3, "Ours"), for
/// context in the benchmark.
pub fn psi_adhoc_s(sigma: usize, n: usize) -> Option<f64> {
    let row: [f64; 6] = match sigma {
        24 => [1.7, 1.9, 2.1, 2.5, 3.6, 7.4],
        32 => [1.7, 1.9, 2.3, 3.0, 4.4, 8.5],
        160 => [2.2, 2.7, 4.0, 7.0, 14.3, 28.7],
        _ => return None,
    };
    PSI_SIZES.iter().position(|&m| m == n).map(|i| row[i])
}

/// The paper's Table 2 timings in seconds for a window: (init, setup, online, ad-hoc).
pub fn scheduling_times_s(location: bool, slots: usize) -> Option<(f64, f64, f64, f64)> {
    let i = WINDOWS.iter().position(|w| w.1 == slots)?;
    Some(if location {
        [(6.9, 1.4, 0.16, 1.5), (48.5, 1.8, 0.82, 2.6), (319.6, 4.8, 5.9, 10.7)][i]
    } else {
        [
            (0.37, 1.3, 0.002, 1.3),
            (0.37, 1.3, 0.003, 1.3),
            (0.73, 1.3, 0.007, 1.3),
        ][i]
    })
}
