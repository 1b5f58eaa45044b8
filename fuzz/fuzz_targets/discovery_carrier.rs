#![no_main]
//! The advertisement carrier's decoders: TXT records that anyone on the link can
//! broadcast, the BLE pointer, and the auxiliary service's messages. Whatever is
//! accepted re-encodes to the same bytes (one record per advertisement, one encoding
//! per message); nothing panics.
use libfuzzer_sys::fuzz_target;
use tacit_discovery::carrier::{Advert, FetchAdvert, Pointer, from_txt, to_txt};
use tacit_wire::{Decode, Encode};

/// Reads `data` as TXT RDATA the way mdns-sd does: length-prefixed strings, each
/// split at its first `=`; a key without `=` gets an empty value.
fn txt_entries(data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let len = len as usize;
        if len == 0 || len > tail.len() {
            break;
        }
        let (s, tail) = tail.split_at(len);
        rest = tail;
        let (k, v) = match s.iter().position(|&b| b == b'=') {
            Some(i) => (&s[..i], &s[i + 1..]),
            None => (s, &[][..]),
        };
        if let Ok(k) = core::str::from_utf8(k) {
            out.push((k.to_string(), v.to_vec()));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let txt = txt_entries(data);
    if let Ok(c) = from_txt(&txt) {
        assert_eq!(to_txt(&c), txt);
    }
    if let Ok(p) = Pointer::from_ble_bytes(data) {
        assert_eq!(p.to_ble_bytes().as_slice(), data);
    }
    if let Ok(f) = FetchAdvert::from_wire(data) {
        assert_eq!(f.to_wire(), data);
    }
    if let Ok(a) = Advert::from_wire(data) {
        assert_eq!(a.to_wire(), data);
    }
});
