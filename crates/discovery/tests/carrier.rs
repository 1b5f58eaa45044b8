//! The advertisement carrier (paper §6.3): TXT split and join at the boundary sizes,
//! every malformed TXT record a deviating advertiser could broadcast, the BLE pointer,
//! the auxiliary service against deviating clients and servers over loopback TCP, and
//! publish / discover over mDNS inside a loopback-only network namespace.

use proptest::prelude::*;
use rand_chacha::rand_core::SeedableRng;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;
use tacit_discovery::carrier::{
    AUX_MAX_FRAME, Advert, AuxStore, BLE_BUDGET, BLE_POINTER_LEN, Budget, Carried, Error, FetchAdvert, MAX_ADVERT_LEN,
    MAX_INLINE_ADVERT, MDNS_TXT_BUDGET, POINTER_TXT_LEN, Plan, Pointer, TXT_STRING_MAX, UNKNOWN_POINTER,
    chunk_capacity, discover, fetch_aux, from_txt, inline_txt_len, max_inline_len, plan, publish, resolve, serve_aux,
    tags, to_txt,
};
use tacit_net::mdns::{self, DISCOVERY_SERVICE, Found, Scope};
use tacit_net::{FramedConn, FramedListener, NetConfig};
use tacit_wire::{Decode, Encode, ErrorMessage, Writer};

type Txt = Vec<(String, Vec<u8>)>;

/// Deterministic advertisement bytes (every byte value, `=` and NUL included).
fn advert(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// The TXT record's size on the wire: a length byte and `key=value` per entry.
fn txt_size(txt: &Txt) -> usize {
    txt.iter().map(|(k, v)| 1 + k.len() + 1 + v.len()).sum()
}

fn e(k: &str, v: &[u8]) -> (String, Vec<u8>) {
    (k.to_string(), v.to_vec())
}

fn v1() -> (String, Vec<u8>) {
    e("v", b"1")
}

fn pointer(port: u16) -> Pointer {
    Pointer { id: [0x5a; 16], port }
}

fn cfg() -> NetConfig {
    NetConfig {
        max_frame: AUX_MAX_FRAME,
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_secs(2),
        deadline: None,
    }
}

// ---------------------------------------------------------------- sizes and split

#[test]
fn budgets_and_measured_sizes() {
    assert_eq!((TXT_STRING_MAX, MDNS_TXT_BUDGET, BLE_BUDGET), (255, 1300, 31));
    assert_eq!(
        (chunk_capacity(0), chunk_capacity(9), chunk_capacity(10)),
        (252, 252, 251)
    );
    assert_eq!(MAX_INLINE_ADVERT, 1272);
    assert_eq!(max_inline_len(MDNS_TXT_BUDGET), 1272);
    assert_eq!(inline_txt_len(0), 4);
    assert_eq!(inline_txt_len(700), 716);
    assert_eq!(inline_txt_len(820), 840);
    assert_eq!(inline_txt_len(1272), 1300);
    assert!(inline_txt_len(1273) > 1300);
    assert_eq!(POINTER_TXT_LEN, 25);
    assert_eq!(Budget::Mdns.bytes(), 1300);
    assert_eq!(Budget::Ble.bytes(), 31);
    // `max_inline_len` is the largest length that fits, for every budget.
    for budget in [
        0, 3, 4, 5, 8, 9, 10, 255, 256, 257, 260, 261, 513, 1299, 1300, 1301, 2600,
    ] {
        let m = max_inline_len(budget);
        assert!(m == 0 || inline_txt_len(m) <= budget, "budget {budget}");
        assert!(inline_txt_len(m + 1) > budget, "budget {budget}");
    }
}

#[test]
fn split_and_join_at_the_boundaries() {
    let cases: &[(usize, &[usize])] = &[
        (1, &[1]),
        (251, &[251]),
        (252, &[252]),
        (253, &[252, 1]),
        (504, &[252, 252]),
        (505, &[252, 252, 1]),
        (700, &[252, 252, 196]),
        (820, &[252, 252, 252, 64]),
        (1260, &[252, 252, 252, 252, 252]),
        (1261, &[252, 252, 252, 252, 252, 1]),
        (1272, &[252, 252, 252, 252, 252, 12]),
    ];
    for &(len, chunks) in cases {
        let a = advert(len, 3);
        let txt = to_txt(&Carried::Inline(a.clone()));
        assert_eq!(txt[0], v1());
        let keys: Vec<String> = txt[1..].iter().map(|(k, _)| k.clone()).collect();
        let want: Vec<String> = (0..chunks.len()).map(|i| format!("a{i}")).collect();
        assert_eq!(keys, want, "{len}");
        let lens: Vec<usize> = txt[1..].iter().map(|(_, v)| v.len()).collect();
        assert_eq!(lens, chunks, "{len}");
        for (k, v) in &txt {
            assert!(k.len() + 1 + v.len() <= TXT_STRING_MAX);
        }
        assert_eq!(txt_size(&txt), inline_txt_len(len));
        assert_eq!(
            plan(&a, Budget::Mdns),
            Plan::Inline {
                txt_len: txt_size(&txt)
            }
        );
        assert_eq!(from_txt(&txt).unwrap(), Carried::Inline(a));
    }
    // A full chunk string is exactly 255 bytes.
    let txt = to_txt(&Carried::Inline(advert(252, 0)));
    assert_eq!(txt[1].0.len() + 1 + txt[1].1.len(), 255);
    // Exactly at the budget, and one over.
    let at = advert(1272, 9);
    assert_eq!(txt_size(&to_txt(&Carried::Inline(at.clone()))), 1300);
    assert_eq!(plan(&at, Budget::Mdns), Plan::Inline { txt_len: 1300 });
    let over = advert(1273, 9);
    assert_eq!(plan(&over, Budget::Mdns), Plan::Pointer);
    let txt = to_txt(&Carried::Inline(over));
    assert_eq!(txt_size(&txt), 1301);
    assert!(matches!(from_txt(&txt), Err(Error::TxtTooLarge { .. })));
    // BLE only ever carries pointers.
    assert_eq!(plan(&advert(10, 0), Budget::Ble), Plan::Pointer);
    assert_eq!(plan(&advert(2000, 0), Budget::Mdns), Plan::Pointer);
}

#[test]
fn many_chunks_use_longer_keys() {
    // Beyond the mDNS budget (so `from_txt` refuses it) but the split stays canonical.
    let txt = to_txt(&Carried::Inline(advert(252 * 10 + 300, 0)));
    assert_eq!(txt[11].0, "a10");
    assert_eq!(txt[11].1.len(), 251);
    assert_eq!(txt[12].1.len(), 49);
    assert!(txt.iter().all(|(k, v)| k.len() + 1 + v.len() <= 255));
}

#[test]
fn pointer_txt_and_ble_forms() {
    let p = Pointer {
        id: [7; 16],
        port: 40_001,
    };
    let txt = to_txt(&Carried::Pointer(p));
    assert_eq!(txt.len(), 2);
    assert_eq!(txt[0], v1());
    assert_eq!(txt[1].0, "p");
    assert_eq!(txt[1].1.len(), 18);
    assert_eq!(&txt[1].1[16..], &40_001u16.to_be_bytes());
    assert_eq!(txt_size(&txt), POINTER_TXT_LEN);
    assert_eq!(from_txt(&txt).unwrap(), Carried::Pointer(p));

    let ble = p.to_ble_bytes();
    assert_eq!(ble.len(), BLE_POINTER_LEN);
    assert_eq!(BLE_POINTER_LEN, 19);
    // Flags AD (3 bytes) + Service Data AD header with a 16-bit UUID (4 bytes).
    assert!(3 + 4 + ble.len() <= BLE_BUDGET);
    assert_eq!(ble[0], 1);
    assert_eq!(Pointer::from_ble_bytes(&ble).unwrap(), p);
    let mut wrong_version = ble;
    wrong_version[0] = 2;
    assert!(matches!(
        Pointer::from_ble_bytes(&wrong_version),
        Err(Error::UnsupportedVersion(v)) if v == "2"
    ));
    assert!(Pointer::from_ble_bytes(&[]).is_err());
    assert!(Pointer::from_ble_bytes(&ble[..18]).is_err());
    let mut longer = ble.to_vec();
    longer.push(0);
    assert!(Pointer::from_ble_bytes(&longer).is_err());
    let zero_port = Pointer { id: [7; 16], port: 0 }.to_ble_bytes();
    assert!(matches!(
        Pointer::from_ble_bytes(&zero_port),
        Err(Error::InvalidPointer(_))
    ));

    let mut rng = rand_chacha::ChaCha20Rng::from_seed([1; 32]);
    let (a, b) = (Pointer::random(&mut rng, 9), Pointer::random(&mut rng, 9));
    assert_ne!(a.id, b.id);
}

// ---------------------------------------------------------------- malformed TXT

fn refuse(txt: Txt) -> Error {
    match from_txt(&txt) {
        Ok(c) => panic!("accepted {txt:?} as {c:?}"),
        Err(e) => e,
    }
}

#[test]
fn malformed_txt_records_are_refused() {
    let full = advert(252, 1);
    assert!(matches!(refuse(vec![]), Error::MissingVersion));
    assert!(matches!(refuse(vec![e("a0", b"x"), v1()]), Error::MissingVersion));
    assert!(matches!(
        refuse(vec![e("V", b"1"), e("a0", b"x")]),
        Error::MissingVersion
    ));
    assert!(matches!(refuse(vec![e("v", b"2"), e("a0", b"x")]), Error::UnsupportedVersion(v) if v == "2"));
    assert!(matches!(
        refuse(vec![e("v", b""), e("a0", b"x")]),
        Error::UnsupportedVersion(_)
    ));
    assert!(matches!(
        refuse(vec![e("v", b"01"), e("a0", b"x")]),
        Error::UnsupportedVersion(_)
    ));
    assert!(matches!(refuse(vec![v1()]), Error::NoAdvert));
    // Chunks: missing, duplicate, out of order, short, empty.
    assert!(matches!(refuse(vec![v1(), e("a1", b"x")]), Error::MissingChunk(0)));
    assert!(matches!(
        refuse(vec![v1(), e("a0", &full), e("a2", b"x")]),
        Error::MissingChunk(1)
    ));
    assert!(matches!(
        refuse(vec![v1(), e("a0", b"x"), e("a0", b"x")]),
        Error::DuplicateChunk(0)
    ));
    assert!(matches!(
        refuse(vec![v1(), e("a1", b"x"), e("a0", &full)]),
        Error::ChunkOutOfOrder { position: 0, found: 1 }
    ));
    assert!(matches!(
        refuse(vec![v1(), e("a0", &full[..251]), e("a1", b"x")]),
        Error::ShortChunk {
            index: 0,
            len: 251,
            expected: 252
        }
    ));
    assert!(matches!(refuse(vec![v1(), e("a0", b"")]), Error::EmptyChunk(0)));
    assert!(matches!(
        refuse(vec![v1(), e("a0", &full), e("a1", b"")]),
        Error::EmptyChunk(1)
    ));
    // Oversize strings and records.
    assert!(matches!(
        refuse(vec![v1(), e("a0", &[0; 253])]),
        Error::TxtStringTooLong { len: 256, .. }
    ));
    assert!(matches!(
        refuse(vec![v1(), e("a0", &vec![0; 1 << 20])]),
        Error::TxtStringTooLong { .. }
    ));
    let mut six_full: Txt = vec![v1()];
    six_full.extend((0..6).map(|i| e(&format!("a{i}"), &full)));
    assert!(matches!(refuse(six_full), Error::TxtTooLarge { at_least } if at_least > 1300));
    let many_tiny: Txt = std::iter::once(v1()).chain((0..100_000).map(|_| e("x", b""))).collect();
    assert!(matches!(refuse(many_tiny), Error::TxtTooLarge { .. }));
    // Keys: unknown, identifying, non-canonical, repeated.
    for key in ["name", "a", "a00", "a01", "A0", "a-1", "a+1", "a 0", "a99999", "ä0"] {
        assert!(
            matches!(refuse(vec![v1(), e(key, b"x")]), Error::UnexpectedKey(_)),
            "{key}"
        );
    }
    assert!(matches!(refuse(vec![v1(), e("a0", b"x"), e("owner", b"bob")]), Error::UnexpectedKey(k) if k == "owner"));
    assert!(matches!(refuse(vec![v1(), v1(), e("a0", b"x")]), Error::DuplicateKey(k) if k == "v"));
    assert!(matches!(
        refuse(vec![v1(), e("a0", b"x"), v1()]),
        Error::DuplicateKey(_)
    ));
    // Pointers: mixed with chunks, repeated, malformed.
    let p = pointer(9).to_txt_value().to_vec();
    assert!(matches!(
        refuse(vec![v1(), e("p", &p), e("a0", b"x")]),
        Error::MixedPointerAndChunks
    ));
    assert!(matches!(
        refuse(vec![v1(), e("a0", b"x"), e("p", &p)]),
        Error::MixedPointerAndChunks
    ));
    assert!(matches!(refuse(vec![v1(), e("p", &p), e("p", &p)]), Error::DuplicateKey(k) if k == "p"));
    assert!(matches!(refuse(vec![v1(), e("p", &p), e("v", b"1")]), Error::DuplicateKey(k) if k == "v"));
    assert!(matches!(
        refuse(vec![v1(), e("p", &p), e("who", b"")]),
        Error::UnexpectedKey(_)
    ));
    assert!(matches!(refuse(vec![v1(), e("p", &p[..17])]), Error::InvalidPointer(_)));
    assert!(matches!(
        refuse(vec![v1(), e("p", &[p.clone(), vec![0]].concat())]),
        Error::InvalidPointer(_)
    ));
    assert!(matches!(refuse(vec![v1(), e("p", b"")]), Error::InvalidPointer(_)));
    assert!(matches!(
        refuse(vec![v1(), e("p", &pointer(0).to_txt_value())]),
        Error::InvalidPointer(_)
    ));
}

/// Issue 28: over mDNS `from_txt` never sees a repeated or non-UTF-8 key — `mdns-sd`
/// strips them first (`tacit_net::mdns::txt_as_browsed`) — so such a record is
/// read as the record without them (the module docs say so; handed to `from_txt`
/// directly, the repeats are refused).
#[test]
fn a_record_with_repeated_keys_is_read_as_mdns_sd_strips_it() {
    fn rdata(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in entries {
            out.push((k.len() + 1 + v.len()) as u8);
            out.extend_from_slice(k);
            out.push(b'=');
            out.extend_from_slice(v);
        }
        out
    }
    let (p1, p2) = (pointer(7000).to_txt_value(), pointer(7001).to_txt_value());
    // v=1, p=<first>, p=<second>: refused as given, the first pointer as browsed
    let raw = rdata(&[(b"v", b"1"), (b"p", &p1), (b"p", &p2)]);
    let given = vec![v1(), e("p", &p1), e("p", &p2)];
    assert!(matches!(refuse(given), Error::DuplicateKey(k) if k == "p"));
    assert_eq!(
        from_txt(&mdns::txt_as_browsed(&raw)).unwrap(),
        Carried::Pointer(pointer(7000))
    );
    // a repeated chunk and a non-UTF-8 key: only the first chunk is left
    let raw = rdata(&[(b"v", b"1"), (b"a0", b"xy"), (b"A0", b"zz"), (b"\xff", b"junk")]);
    assert_eq!(
        from_txt(&mdns::txt_as_browsed(&raw)).unwrap(),
        Carried::Inline(b"xy".to_vec())
    );
}

#[test]
fn errors_say_what_is_wrong() {
    let s = refuse(vec![v1(), e("a0", &[0; 253])]).to_string();
    assert!(s.contains("\"a0\"") && s.contains("256") && s.contains("255"), "{s}");
    let s = refuse(vec![e("v", b"7"), e("a0", b"x")]).to_string();
    assert!(s.contains("\"7\"") && s.contains("version 1"), "{s}");
    let s = refuse(vec![v1(), e("a0", &[1; 252]), e("a2", b"x")]).to_string();
    assert_eq!(s, "advertisement chunk a1 is missing");
    // Hostile keys are shortened in messages.
    let long_key = "k".repeat(200);
    let s = refuse(vec![v1(), e(&long_key, b"")]).to_string();
    assert!(s.len() < 80, "{s}");
}

// ---------------------------------------------------------------- wire messages

#[test]
fn aux_messages_have_strict_decoders() {
    let f = FetchAdvert { id: [3; 16] };
    let b = f.to_wire();
    assert_eq!(b.len(), 19);
    assert_eq!(&b[..3], &[1, 0x03, 0x30]);
    assert_eq!(FetchAdvert::from_wire(&b).unwrap(), f);
    assert!(FetchAdvert::from_wire(&b[..18]).is_err());
    assert!(FetchAdvert::from_wire(&[b.clone(), vec![0]].concat()).is_err());

    let a = Advert { bytes: advert(2000, 4) };
    let b = a.to_wire();
    assert_eq!(&b[..3], &[1, 0x03, 0x31]);
    assert_eq!(Advert::from_wire(&b).unwrap(), a);
    assert!(Advert::from_wire(&b[..b.len() - 1]).is_err());
    assert!(Advert::from_wire(&[b.clone(), vec![0]].concat()).is_err());
    assert!(Advert::from_wire(&Advert { bytes: vec![] }.to_wire()).is_err());
    let mut w = Writer::new();
    w.put_envelope(tags::ADVERT);
    w.put_u32(u32::MAX);
    assert!(matches!(
        Advert::from_wire(&w.into_bytes()),
        Err(tacit_wire::Error::TooLong { .. })
    ));
    assert!(matches!(
        Advert::from_wire(
            &Advert {
                bytes: vec![0; MAX_ADVERT_LEN + 1]
            }
            .to_wire()
        ),
        Err(tacit_wire::Error::TooLong { .. })
    ));
    assert!(Advert::from_wire(&f.to_wire()).is_err());
    assert!(FetchAdvert::from_wire(&a.to_wire()).is_err());
    assert_eq!(
        AUX_MAX_FRAME,
        Advert {
            bytes: vec![0; MAX_ADVERT_LEN]
        }
        .to_wire()
        .len()
    );
}

#[test]
fn aux_store_bounds_and_replaces() {
    let s = AuxStore::new();
    assert!(s.is_empty());
    assert!(matches!(s.insert([1; 16], &[]), Err(Error::AdvertSize { len: 0 })));
    assert!(matches!(
        s.insert([1; 16], &vec![0; MAX_ADVERT_LEN + 1]),
        Err(Error::AdvertSize { .. })
    ));
    assert!(!s.insert([1; 16], b"old").unwrap());
    let shared = s.clone();
    assert!(shared.insert([1; 16], b"new").unwrap());
    assert_eq!(&*s.get(&[1; 16]).unwrap(), b"new");
    assert_eq!(s.len(), 1);
    assert!(s.remove(&[1; 16]));
    assert!(!s.remove(&[1; 16]));
    assert!(shared.get(&[1; 16]).is_none());
}

// ---------------------------------------------------------------- aux service over TCP

async fn aux_service(store: &AuxStore) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    (addr, tokio::spawn(serve_aux(l, store.clone())))
}

#[tokio::test]
async fn aux_service_round_trip_over_loopback() {
    let store = AuxStore::new();
    let (addr, server) = aux_service(&store).await;
    let id = [9; 16];
    let first = advert(2000, 1);
    store.insert(id, &first).unwrap();
    assert_eq!(fetch_aux(addr, &id, &cfg()).await.unwrap(), first);
    // Refreshed in place.
    let second = advert(3000, 2);
    store.insert(id, &second).unwrap();
    assert_eq!(fetch_aux(addr, &id, &cfg()).await.unwrap(), second);
    // Unknown and withdrawn pointers.
    assert!(matches!(fetch_aux(addr, &[8; 16], &cfg()).await, Err(Error::Refused(r)) if r == UNKNOWN_POINTER));
    store.remove(&id);
    let err = fetch_aux(addr, &id, &cfg()).await.unwrap_err();
    assert_eq!(err.to_string(), "the auxiliary service refused: unknown pointer");
    // Concurrent clients.
    store.insert(id, &first).unwrap();
    let fetches: Vec<_> = (0..16)
        .map(|_| tokio::spawn(async move { fetch_aux(addr, &[9; 16], &cfg()).await }))
        .collect();
    for f in fetches {
        assert_eq!(f.await.unwrap().unwrap(), first);
    }
    server.abort();
}

#[tokio::test]
async fn aux_service_refuses_deviating_clients_and_keeps_serving() {
    let store = AuxStore::new();
    store.insert([1; 16], b"advert").unwrap();
    let (addr, server) = aux_service(&store).await;
    for garbage in [
        b"hello".to_vec(),
        vec![],
        Advert { bytes: b"x".to_vec() }.to_wire(),
        [FetchAdvert { id: [1; 16] }.to_wire(), vec![0]].concat(),
        FetchAdvert { id: [1; 16] }.to_wire()[..10].to_vec(),
    ] {
        let mut c = FramedConn::connect(addr, &cfg()).await.unwrap();
        c.send(&garbage).await.unwrap();
        let reply = ErrorMessage::from_wire(&c.recv().await.unwrap()).unwrap();
        assert!(
            reply.reason.starts_with("not an advertisement fetch"),
            "{}",
            reply.reason
        );
        assert!(matches!(c.recv().await, Err(tacit_net::Error::Closed)));
    }
    // An oversize frame is refused by its header: no answer, the connection closes.
    let big = NetConfig {
        max_frame: 1 << 20,
        ..cfg()
    };
    let mut c = FramedConn::connect(addr, &big).await.unwrap();
    let _ = c.send(&vec![0; AUX_MAX_FRAME + 1]).await;
    assert!(c.recv().await.is_err());
    // A client that connects and says nothing does not stop the others.
    let _silent = FramedConn::connect(addr, &cfg()).await.unwrap();
    assert_eq!(fetch_aux(addr, &[1; 16], &cfg()).await.unwrap(), b"advert");
    server.abort();
}

/// A deviating auxiliary service that answers every request with `reply`.
async fn hostile_aux(reply: Vec<u8>) -> SocketAddr {
    let big = NetConfig {
        max_frame: 1 << 20,
        ..cfg()
    };
    let l = FramedListener::bind("127.0.0.1:0", &big).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok(mut c) = l.accept().await {
            let _ = c.recv().await;
            let _ = c.send(&reply).await;
        }
    });
    addr
}

#[tokio::test]
async fn fetch_refuses_deviating_services() {
    let id = [1; 16];
    let mut wrong_tag = Advert { bytes: b"x".to_vec() }.to_wire();
    wrong_tag[2] = 0x32;
    let cases = [
        wrong_tag,
        Advert { bytes: vec![] }.to_wire(),
        [Advert { bytes: b"x".to_vec() }.to_wire(), vec![0]].concat(),
        FetchAdvert { id }.to_wire(),
        vec![],
        vec![2, 0x03, 0x31, 0, 0, 0, 1, 0],
        Advert {
            bytes: vec![0; MAX_ADVERT_LEN + 1],
        }
        .to_wire(),
    ];
    for reply in cases {
        let addr = hostile_aux(reply.clone()).await;
        let got = fetch_aux(addr, &id, &cfg()).await;
        assert!(got.is_err(), "accepted {:?}", &reply[..reply.len().min(8)]);
    }
    // An oversize frame is refused by its header, whatever the caller's max_frame.
    let addr = hostile_aux(vec![0; AUX_MAX_FRAME + 1]).await;
    let generous = NetConfig {
        max_frame: 1 << 20,
        ..cfg()
    };
    assert!(matches!(
        fetch_aux(addr, &id, &generous).await,
        Err(Error::Net(tacit_net::Error::FrameTooLarge { .. }))
    ));
    // A service that never answers times out.
    let l = FramedListener::bind("127.0.0.1:0", &cfg()).await.unwrap();
    let addr = l.local_addr().unwrap();
    let quick = NetConfig {
        read_timeout: Duration::from_millis(200),
        ..cfg()
    };
    let hold = tokio::spawn(async move {
        let c = l.accept().await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        drop(c);
    });
    assert!(matches!(
        fetch_aux(addr, &id, &quick).await,
        Err(Error::Net(tacit_net::Error::ReadTimeout(_)))
    ));
    hold.abort();
}

#[tokio::test]
async fn resolve_reads_inline_and_pointed_adverts() {
    let store = AuxStore::new();
    let (addr, server) = aux_service(&store).await;
    let local = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
    let inline = advert(700, 5);
    let found = Found {
        instance: "0011223344556677._tacit-disc._tcp.local.".into(),
        addrs: local.clone(),
        port: 4242,
        txt: to_txt(&Carried::Inline(inline.clone())),
    };
    let d = resolve(&found, &cfg()).await.unwrap();
    assert_eq!(
        (d.advert, d.handshake_port, d.pointer, d.addrs),
        (inline, 4242, None, local.clone())
    );

    let big = advert(2000, 6);
    let p = Pointer {
        id: [4; 16],
        port: addr.port(),
    };
    store.insert(p.id, &big).unwrap();
    let found = Found {
        txt: to_txt(&Carried::Pointer(p)),
        ..found
    };
    let d = resolve(&found, &cfg()).await.unwrap();
    assert_eq!((d.advert, d.pointer), (big, Some(p)));

    // No address, malformed record, unknown pointer.
    let no_addr = Found {
        addrs: vec![],
        ..found.clone()
    };
    assert!(matches!(resolve(&no_addr, &cfg()).await, Err(Error::NoAddress)));
    let bad = Found {
        txt: vec![v1(), e("name", b"bob")],
        ..found.clone()
    };
    assert!(matches!(resolve(&bad, &cfg()).await, Err(Error::UnexpectedKey(_))));
    store.remove(&p.id);
    assert!(matches!(resolve(&found, &cfg()).await, Err(Error::Refused(_))));
    server.abort();
}

#[tokio::test]
async fn publish_refuses_before_advertising() {
    // None of these reaches mDNS: they fail before a daemon is started.
    let r = publish(&[], Budget::Mdns, Scope::Loopback, DISCOVERY_SERVICE, 1, None).await;
    assert!(matches!(r, Err(Error::AdvertSize { len: 0 })));
    let huge = vec![0; MAX_ADVERT_LEN + 1];
    let r = publish(&huge, Budget::Mdns, Scope::Loopback, DISCOVERY_SERVICE, 1, None).await;
    assert!(matches!(r, Err(Error::AdvertSize { .. })));
    let r = publish(
        &advert(2000, 0),
        Budget::Mdns,
        Scope::Loopback,
        DISCOVERY_SERVICE,
        1,
        None,
    )
    .await;
    assert!(matches!(
        r,
        Err(Error::NeedsAux {
            len: 2000,
            budget: 1300
        })
    ));
    let r = publish(
        &advert(700, 0),
        Budget::Ble,
        Scope::Loopback,
        DISCOVERY_SERVICE,
        1,
        None,
    )
    .await;
    assert!(matches!(r, Err(Error::NeedsAux { len: 700, budget: 31 })));
    let store = AuxStore::new();
    let r = publish(
        &advert(2000, 0),
        Budget::Mdns,
        Scope::Loopback,
        DISCOVERY_SERVICE,
        1,
        Some((&store, 0)),
    )
    .await;
    assert!(matches!(r, Err(Error::InvalidPointer(_))));
    assert!(store.is_empty());
}

// ---------------------------------------------------------------- properties

fn arb_entry() -> impl Strategy<Value = (String, Vec<u8>)> {
    (
        prop_oneof![
            Just("v".to_string()),
            Just("p".to_string()),
            (0usize..8).prop_map(|i| format!("a{i}")),
            "[a-z0-9]{1,4}",
        ],
        prop_oneof![
            Just(b"1".to_vec()),
            proptest::collection::vec(any::<u8>(), 0..20),
            proptest::collection::vec(any::<u8>(), 250..254),
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn inline_round_trips_within_budget(a in proptest::collection::vec(any::<u8>(), 1..=MAX_INLINE_ADVERT)) {
        let txt = to_txt(&Carried::Inline(a.clone()));
        prop_assert!(txt_size(&txt) <= MDNS_TXT_BUDGET);
        prop_assert_eq!(plan(&a, Budget::Mdns), Plan::Inline { txt_len: txt_size(&txt) });
        prop_assert_eq!(from_txt(&txt).unwrap(), Carried::Inline(a));
    }

    #[test]
    fn accepted_records_are_canonical(txt in proptest::collection::vec(arb_entry(), 0..8)) {
        // Whatever `from_txt` accepts, `to_txt` writes back identically: one record
        // per advertisement.
        if let Ok(c) = from_txt(&txt) {
            prop_assert_eq!(to_txt(&c), txt);
        }
    }

    #[test]
    fn ble_pointer_round_trips(id in any::<[u8; 16]>(), port in 1u16..) {
        let p = Pointer { id, port };
        prop_assert_eq!(Pointer::from_ble_bytes(&p.to_ble_bytes()).unwrap(), p);
        prop_assert_eq!(from_txt(&to_txt(&Carried::Pointer(p))).unwrap(), Carried::Pointer(p));
    }
}

// ---------------------------------------------------------------- mDNS, in a namespace

/// Set in the copy of this test binary that runs inside the namespace.
const IN_NETNS: &str = "TACIT_CARRIER_IN_NETNS";
const E2E: &str = "publish_and_discover_over_mdns_in_a_loopback_namespace";

/// A loopback-only network namespace (deleted on drop), so mDNS multicast never
/// leaves the machine. `None` when this user may not create namespaces.
struct Netns(String);

impl Netns {
    fn new() -> Option<Netns> {
        let name = format!("tacit-carrier-{}", std::process::id());
        let ok = |args: &[&str]| Command::new("ip").args(args).output().is_ok_and(|o| o.status.success());
        if !ok(&["netns", "add", &name]) {
            return None;
        }
        let ns = Netns(name);
        for args in [
            vec!["netns", "exec", &ns.0, "ip", "link", "set", "lo", "up"],
            vec!["netns", "exec", &ns.0, "ip", "link", "set", "lo", "multicast", "on"],
            vec!["netns", "exec", &ns.0, "ip", "route", "add", "224.0.0.0/4", "dev", "lo"],
        ] {
            assert!(ok(&args), "setting up the namespace: ip {args:?}");
        }
        Some(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

/// Threads of this process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|dir| dir.count()).unwrap_or(0)
}

#[test]
fn publish_and_discover_over_mdns_in_a_loopback_namespace() {
    if std::env::var_os(IN_NETNS).is_some() {
        return in_namespace();
    }
    let Some(ns) = Netns::new() else {
        eprintln!("SKIPPED: cannot create a network namespace here (needs root and iproute2)");
        return;
    };
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", E2E, "--nocapture", "--test-threads=1"])
        .env(IN_NETNS, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "in the namespace:\n{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "the test did not run:\n{stdout}\n{stderr}");
}

/// Runs inside the loopback-only namespace: only `lo` exists, so `Scope::Loopback`
/// multicast cannot reach a real network.
fn in_namespace() {
    let before = threads();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = AuxStore::new();
        let (aux_addr, server) = aux_service(&store).await;
        let small = advert(700, 11);
        let large = advert(2000, 12);
        let a = publish(
            &small,
            Budget::Mdns,
            Scope::Loopback,
            DISCOVERY_SERVICE,
            4701,
            Some((&store, aux_addr.port())),
        )
        .await
        .unwrap();
        let b = publish(
            &large,
            Budget::Mdns,
            Scope::Loopback,
            DISCOVERY_SERVICE,
            4702,
            Some((&store, aux_addr.port())),
        )
        .await
        .unwrap();
        // Two runtime workers and one daemon thread per publication.
        assert!(threads() >= before + 4, "{} threads, {before} before", threads());
        assert_eq!(a.carried(), &Carried::Inline(small.clone()));
        let p = *b.pointer().unwrap();
        assert_eq!(p.port, aux_addr.port());
        assert_eq!(&*store.get(&p.id).unwrap(), large.as_slice());

        // What a passive listener sees: random names, nothing but the carrier entries.
        let seen = tokio::task::spawn_blocking(|| {
            mdns::browse_txt(DISCOVERY_SERVICE, Scope::Loopback, Duration::from_secs(3))
        })
        .await
        .unwrap()
        .unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        for f in &seen {
            let label = f.instance.strip_suffix("._tacit-disc._tcp.local.").unwrap();
            assert!(
                label.len() == 16 && label.bytes().all(|c| c.is_ascii_hexdigit()),
                "{label}"
            );
            assert_eq!(f.addrs, vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
            let keys: Vec<&str> = f.txt.iter().map(|(k, _)| k.as_str()).collect();
            if f.port == 4701 {
                assert_eq!(keys, ["v", "a0", "a1", "a2"]);
                assert_eq!(txt_size(&f.txt), 716);
            } else {
                assert_eq!(keys, ["v", "p"]);
                assert_eq!(txt_size(&f.txt), POINTER_TXT_LEN);
            }
        }

        let mut found = discover(DISCOVERY_SERVICE, Scope::Loopback, Duration::from_secs(3), &cfg())
            .await
            .unwrap();
        found.sort_by_key(|d| d.handshake_port);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            (found[0].handshake_port, &found[0].advert, found[0].pointer),
            (4701, &small, None)
        );
        assert_eq!(
            (found[1].handshake_port, &found[1].advert, found[1].pointer),
            (4702, &large, Some(p))
        );
        assert_eq!(found[0].instance, a.fullname());
        assert_eq!(found[1].instance, b.fullname());

        // Withdrawing the pointed-to advertisement removes it from the auxiliary store.
        drop(b);
        assert!(store.is_empty());
        assert!(matches!(
            fetch_aux(aux_addr, &p.id, &cfg()).await,
            Err(Error::Refused(r)) if r == UNKNOWN_POINTER
        ));
        drop(a);
        server.abort();
    });
    drop(rt);
    // Every mDNS daemon (two publications, two browses) has shut down, and so has
    // the runtime: the process is back to the threads it had.
    let mut now = threads();
    for _ in 0..40 {
        if now == before {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        now = threads();
    }
    assert_eq!(now, before, "threads left running");
}
