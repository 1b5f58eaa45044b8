#![no_main]
//! The connection greeting (`tacit_net::greeting`, docs/wire.md "The greeting"): any
//! first bytes from a peer are classified without panicking, judged on at most twelve
//! bytes; a greeting that classifies re-encodes to the same bytes, and negotiating
//! against it never panics and never picks a version outside both ranges.
use libfuzzer_sys::fuzz_target;
use tacit_net::greeting::{self, Greeting, Protocol, Seen};

fuzz_target!(|data: &[u8]| {
    let first = &data[..data.len().min(greeting::LEN)];
    if first.is_empty() {
        return;
    }
    match greeting::classify(first) {
        Seen::Greeting(r) => {
            assert_eq!(first.len(), greeting::LEN);
            if let Some(p) = Protocol::from_id(r.protocol) {
                let g = Greeting {
                    protocol: p,
                    min: r.min,
                    max: r.max,
                };
                assert_eq!(&g.encode(r.flags)[..], first);
            }
            for &p in Protocol::ALL {
                let ours = Greeting { protocol: p, min: 1, max: 3 };
                if let Ok(v) = ours.negotiate(&r) {
                    assert!((1..=3).contains(&v) && (r.min..=r.max).contains(&v));
                }
            }
            let _ = greeting::show(first);
        }
        Seen::Partial => assert!(first.len() < greeting::LEN),
        _ => {
            let _ = greeting::show(first);
        }
    }
});
