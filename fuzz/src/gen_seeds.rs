//! Writes valid messages as seed corpora for the fuzz targets:
//! `cargo +nightly run --manifest-path fuzz/Cargo.toml --bin gen_seeds`.
use std::path::Path;
use tacit_crypto::rng::SecureRng;
use tacit_crypto::{P256, PrimeGroup, Ristretto255};
use tacit_psi::two_way::{Initiator, Responder};
use tacit_psi::{Receiver, ReceiverPrecomputation, Reuse, Sender, SenderKey, SenderPrecomputation};
use tacit_wire::{Encode, ErrorMessage};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn with_sel(sel: u8, b: &[u8]) -> Vec<u8> {
    let mut v = vec![sel];
    v.extend_from_slice(b);
    v
}

fn psi<G: PrimeGroup>(sel: u8, rng: &mut SecureRng) {
    let p = tacit_fuzz::params(sel);
    let mk = |rng: &mut SecureRng, set: &[&str]| {
        let key = SenderKey::<G>::generate(rng, 1);
        let pre = SenderPrecomputation::compute(&p, &key, set, Reuse::WithinEpoch, rng).unwrap();
        let (key_bytes, pre_bytes) = (key.to_bytes(), pre.to_bytes());
        (key_bytes, pre_bytes, Sender::new(&p, key, pre).unwrap())
    };
    let (key, pre, s) = mk(rng, &["a", "b"]);
    let rp = ReceiverPrecomputation::<G>::compute(&p, &["a"], rng).unwrap();
    let (_, req) = Receiver::start(&rp);
    let resp = s.respond(&req, rng).unwrap();
    write("psi_request", &format!("req{sel}"), &with_sel(sel, &req));
    write("psi_response", &format!("resp{sel}"), &with_sel(sel, &resp));
    write("psi_stored", &format!("key{sel}"), &key);
    write("psi_stored", &format!("spre{sel}"), &pre);
    write("psi_stored", &format!("rpre{sel}"), &rp.to_bytes());
    let (_, _, s2) = mk(rng, &["c"]);
    let rp2 = ReceiverPrecomputation::<G>::compute(&p, &["b"], rng).unwrap();
    let (_, m1) = Responder::start(s2, &rp2).unwrap();
    let (_, m2) = Initiator::new(s, rp).unwrap().on_m1(&m1, rng).unwrap();
    write("psi_bundle", &format!("m2_{sel}"), &with_sel(sel, &m2));
    let e = G::element_bytes(&G::mul_base(&G::random_scalar(rng)));
    write("crypto_decode", &format!("elem{sel}"), e.as_ref());
}

fn drop_seeds<G: PrimeGroup>(sel: u8, rng: &mut SecureRng) {
    use std::sync::Arc;
    use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment};
    use tacit_drop::protocol::{AddressBook, Ask, Context, Discoverability, DropReceiver, DropSender};
    let params = tacit_drop::DropParams {
        psi: tacit_fuzz::params(sel),
    };
    let ca = CertificateAuthority::generate(rng).unwrap();
    let now = 1_800_000_000;
    let mut device = |ids: &[&str], book: &[&str]| {
        let e = DeviceEnrollment::<G>::new(&params, ids, rng).unwrap();
        let req = e.request().to_bytes();
        let pending = e.to_bytes();
        let issued = ca
            .enroll(
                e.request(),
                &|_| true,
                &mut tacit_drop::ca::MemoryRegistry::new(),
                now,
                rng,
            )
            .unwrap();
        let issued_bytes = issued.to_bytes();
        let id = e.finish(issued, &ca.public_key(), now).unwrap();
        write(
            "drop_enrollment",
            &format!("req{sel}{}", ids[0].len()),
            &with_sel(sel, &req),
        );
        write(
            "drop_enrollment",
            &format!("pending{sel}{}", ids[0].len()),
            &with_sel(sel, &pending),
        );
        write(
            "drop_enrollment",
            &format!("issued{sel}{}", ids[0].len()),
            &with_sel(sel, &issued_bytes),
        );
        write(
            "drop_enrollment",
            &format!("identity{sel}{}", ids[0].len()),
            &with_sel(sel, &id.to_bytes()),
        );
        (Arc::new(id), Arc::new(AddressBook::new(book)))
    };
    let (a_id, a_book) = device(&["alice@example.com"], &["bob@example.com"]);
    let (b_id, b_book) = device(&["bob@example.com", "14155550100"], &["alice@example.com"]);
    let book_sender = |book: &AddressBook, rng: &mut SecureRng| {
        let key = SenderKey::<G>::generate(rng, 1);
        let pre =
            SenderPrecomputation::compute(&params.psi, &key, book.entries(), Reuse::FreshPerSession, rng).unwrap();
        Sender::new(&params.psi, key, pre).unwrap()
    };
    let ctx = |id: &Arc<tacit_drop::ca::DropIdentity<G>>, book: &Arc<AddressBook>, peer| Context {
        identity: id.clone(),
        book: book.clone(),
        ca: ca.public_key(),
        peer,
        now,
        device_name: "seed".into(),
    };
    let (sw, start) = DropSender::start(ctx(&a_id, &a_book, b_id.account), book_sender(&a_book, rng)).unwrap();
    let (rw, m1) = DropReceiver::on_start(
        ctx(&b_id, &b_book, a_id.account),
        Discoverability::Everyone,
        book_sender(&b_book, rng),
        &start,
    )
    .unwrap();
    let (sw, m2) = sw.on_m1(&m1, rng).unwrap();
    let (_, m3) = rw.on_m2(&m2, rng).unwrap();
    let out = sw.on_m3(&m3, rng).unwrap();
    let ask = Ask {
        record: out.ask_record,
        sender_name: "a".into(),
        files: vec![],
    }
    .to_bytes();
    let legacy = tacit_drop::legacy::DiscoverRequest {
        record: a_id.legacy.clone(),
        sender_name: "a".into(),
    }
    .to_bytes();
    for (name, m) in [
        ("start", &start),
        ("m1", &m1),
        ("m2", &m2),
        ("m3", &m3),
        ("ask", &ask),
        ("discover", &legacy),
    ] {
        write("drop_messages", &format!("{name}{sel}"), &with_sel(sel, m));
    }
    if sel == 0 {
        let cap = tacit_drop::attack::write_capture(&[start, m2, ask, legacy]);
        write("drop_capture", "capture", &cap);
        write("drop_capture", "range", b"+1415555XXXX");
    }
}

/// Valid PROS messages under the fixed key of `tacit_fuzz::pros`.
fn pros_seeds(rng: &mut SecureRng) {
    use std::sync::Arc;
    use tacit_pros::fnp::{Chooser, Sender as FnpSender};
    use tacit_pros::paillier::RnPool;
    use tacit_pros::threepr::{Initiator as A, InitiatorStep, ReconcileParams, Responder as B, ResponderStep};
    let key = tacit_fuzz::pros::key();
    let pk = key.public();
    let mut w = tacit_wire::Writer::new();
    pk.encode(&mut w);
    write("pros_paillier", "pub", &with_sel(0, &w.into_bytes()));
    let mut w = tacit_wire::Writer::new();
    key.encode(&mut w).unwrap();
    write("pros_paillier", "priv", &with_sel(1, &w.into_bytes()));
    let mut w = tacit_wire::Writer::new();
    pk.encode_ciphertext(&pk.encrypt_i64(7, rng).unwrap(), &mut w);
    write("pros_paillier", "ct", &with_sel(2, &w.into_bytes()));
    for sel in 0u8..4 {
        let p = tacit_fuzz::pros::fnp_params(sel);
        let pool = RnPool::new(pk).unwrap();
        // the fuzz key has 256 bits (fast): below the floor of Π^fac, so named as such
        let s = FnpSender::new(&p, &["a", "b"], 0, 4096, tacit_pros::testing::ring_pedersen())
            .unwrap()
            .accept_insecure_small_keys();
        let (opening, setup) = s.open(rng);
        let nb = tacit_pros::NO_CHANNEL_BINDING;
        let (_, q) = Chooser::start(&p, key.clone(), &["a"], &setup, &nb, &pool, rng).unwrap();
        let (a, _) = s.respond(&opening, &q.to_bytes(), &nb, rng).unwrap();
        write("pros_fnp", &format!("q{sel}"), &with_sel(sel, &q.to_bytes()));
        write("pros_fnp", &format!("a{sel}"), &with_sel(sel | 4, &a.to_bytes(pk)));
    }
    let params = ReconcileParams::default();
    let pool = Arc::new(RnPool::new(pk).unwrap());
    let (ia, hello) = A::start(params, key.clone(), &["a", "b"], pool).unwrap();
    let (rb, acc) = B::new(params, &["b", "c"], 0, 4096, tacit_pros::testing::ring_pedersen())
        .unwrap()
        .accept_insecure_small_keys()
        .on_hello(&hello, &tacit_pros::NO_CHANNEL_BINDING, rng)
        .unwrap();
    let (ia, fac, q) = ia.on_accept(&acc, &tacit_pros::NO_CHANNEL_BINDING, rng).unwrap();
    write("pros_threepr", "factor_proof", &with_sel(5, &fac));
    let rb = rb.on_factor_proof(&fac).unwrap();
    write("pros_threepr", "hello", &with_sel(0, &hello));
    write("pros_threepr", "query", &with_sel(1, &q));
    write("pros_threepr", "accept", &with_sel(4, &acc));
    let ResponderStep::Answer(rb, ans) = rb.on_message(&q, rng).unwrap() else {
        panic!()
    };
    write("pros_threepr", "answer", &with_sel(2, &ans));
    let mut ia = ia;
    let mut ans = ans;
    let mut rb = rb;
    loop {
        match ia.on_answer(&ans, rng).unwrap() {
            InitiatorStep::Continue(a, q) => {
                let ResponderStep::Answer(b, next) = rb.on_message(&q, rng).unwrap() else {
                    panic!()
                };
                ia = a;
                rb = b;
                ans = next;
            }
            InitiatorStep::Done(_, out) => {
                write("pros_threepr", "outcome", &with_sel(3, &out));
                break;
            }
        }
    }
    let win = tacit_pros::schedule::Window {
        from: chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2025, 1, 6, 8, 0, 0).unwrap(),
        to: chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2025, 1, 10, 18, 0, 0).unwrap(),
        duration: chrono::Duration::minutes(30),
        step: chrono::Duration::minutes(15),
        encoding: tacit_pros::schedule::SlotEncoding::Default,
    };
    write("pros_schedule", "window", &win.to_bytes());
    let fixture = include_str!("../../crates/pros/tests/data/phe_fixture.json");
    let v: serde_json::Value = serde_json::from_str(fixture).unwrap();
    for k in ["public", "private", "private_lambda"] {
        write("pros_phe_json", k, v[k].to_string().as_bytes());
    }
    let c = tacit_pros::phe::encrypt_number(pk, "-2.5", rng).unwrap();
    write(
        "pros_phe_json",
        "number",
        tacit_pros::phe::encrypted_json(&c).unwrap().to_string().as_bytes(),
    );
    write("calendar_ics", "alice", include_bytes!("../../examples/alice.ics"));
    write("calendar_ics", "bob", include_bytes!("../../examples/bob.ics"));
}

fn main() {
    let mut rng = SecureRng::from_seed([42; 32]);
    pros_seeds(&mut rng);
    for sel in 0u8..4 {
        if sel & 1 == 0 {
            psi::<Ristretto255>(sel, &mut rng);
        } else {
            psi::<P256>(sel, &mut rng);
        }
    }
    drop_seeds::<Ristretto255>(0, &mut rng);
    drop_seeds::<P256>(1, &mut rng);
    write(
        "wire_error_message",
        "err",
        &ErrorMessage::new("refused: too many").to_wire(),
    );
    write(
        "wire_error_message",
        "mismatch",
        &tacit_wire::Mismatch::new("parameter", "m = 10", "m = 20").to_wire(),
    );
    let mut frames = vec![3u8];
    frames.extend_from_slice(&tacit_wire::encode_frame(b"hello", 64).unwrap());
    frames.extend_from_slice(&tacit_wire::encode_frame(b"", 64).unwrap());
    write("wire_frame", "two", &frames);
    let vcf = include_str!("../../examples/contacts.vcf");
    write("vcard", "contacts", vcf.as_bytes());
    for f in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/store/tests/data")).unwrap() {
        let f = f.unwrap().path();
        write(
            "vcard",
            f.file_name().unwrap().to_str().unwrap(),
            &std::fs::read(&f).unwrap(),
        );
    }
    discovery_seeds();
    pir_seeds(&mut rng);
    tracedge_seeds();
    key_request_seeds();
    mpc_seeds();
    println!("seed corpora written under fuzz/corpus/");
}

/// TXT RDATA as the carrier target reads it: length-prefixed `key=value` strings.
fn rdata(txt: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in txt {
        out.push((k.len() + 1 + v.len()) as u8);
        out.extend_from_slice(k.as_bytes());
        out.push(b'=');
        out.extend_from_slice(v);
    }
    out
}

/// Valid handshake messages, advertisements, blessings, IBE values and TXT records
/// from the world the handshake target runs in.
fn discovery_seeds() {
    use tacit_discovery::carrier::{Advert, Carried, FetchAdvert, Pointer, to_txt};
    use tacit_discovery::handshake::Mode;
    use tacit_discovery::handshake::client::Client;
    use tacit_discovery::handshake::server::on_client_hello;
    use tacit_discovery::handshake::zero_rtt::{connect, open_advert};
    use tacit_fuzz::discovery::{NOW, world};
    let w = world();
    let mut rng = SecureRng::from_seed([3; 32]);
    let t = "discovery_handshake";
    for (i, mode) in [Mode::Sigma, Mode::Private].into_iter().enumerate() {
        let (c, hello) = Client::start(mode, w.client.clone(), Some(w.client_prefix.clone()), None, &mut rng).unwrap();
        let (_, sh) = on_client_hello(&w.server, &hello, &mut rng).unwrap();
        let (_, fin) = c.on_server_hello(&sh, NOW).unwrap();
        write(t, &format!("hello{i}"), &hello);
        write(t, &format!("server_hello{i}"), &sh);
        write(t, &format!("finish{i}"), &fin);
    }
    write(t, "advert", &w.advert);
    let found = open_advert(&w.advert, &w.client, &w.client_prefix, NOW).unwrap();
    let (_, zh) = connect(found, &w.client, b"early", &mut rng).unwrap();
    write(t, "zero_rtt_hello", &zh);
    let acc = w.service.on_hello(&zh, NOW).unwrap();
    let (_, reply) = acc.reply(b"reply", &mut rng).unwrap();
    write(t, "zero_rtt_reply", &reply);

    let b = "discovery_blessing";
    write(b, "blessing", &w.client.blessing.to_wire());
    write(b, "blessing_file", &w.client.blessing.to_file_bytes());
    write(b, "roots", &w.client.roots.to_file_bytes());
    write(b, "policy", b"Home/*,Street/Visitor/*");
    write(b, "name", b"HomeSecurityCorp/Technician/Bob");

    let i = "discovery_ibe";
    let mpk = &w.client_prefix.mpk;
    write(i, "mpk", &mpk.to_wire());
    let ct = tacit_discovery::prefix::encrypt(
        mpk,
        &tacit_discovery::prefix::Prefix::parse("Home").unwrap(),
        b"aad",
        b"message",
        &mut rng,
    )
    .unwrap();
    write(i, "prefix_ct", &ct.to_wire());
    write(i, "ct", &ct.ibe_ciphertext().to_bytes());

    let c = "discovery_carrier";
    write(c, "inline", &rdata(&to_txt(&Carried::Inline(w.advert.clone()))));
    let p = Pointer {
        id: [7; 16],
        port: 7001,
    };
    write(c, "pointer", &rdata(&to_txt(&Carried::Pointer(p))));
    write(c, "ble", &p.to_ble_bytes());
    write(c, "fetch", &FetchAdvert { id: [7; 16] }.to_wire());
    write(
        c,
        "advert",
        &Advert {
            bytes: w.advert.clone(),
        }
        .to_wire(),
    );
}

fn pir_seeds(rng: &mut SecureRng) {
    use tacit_pir::{PirClient, PirServer, Selection};
    let (server, client) = tacit_fuzz::pir::lwe();
    write("pir_lwe_hint", "hint", &server.hint().to_wire());
    let (_, q) = client.query(&Selection::row(7), rng).unwrap();
    write("pir_lwe_query", "query", &q.to_wire());
    write("pir_lwe_answer", "answer", &server.answer(&q).unwrap().to_wire());
    let mut s2 = tacit_pir::lwe::LweServer::setup(
        &tacit_pir::Table::from_bytes(vec![1u8; 60 * 5], 5).unwrap(),
        *server.params(),
    )
    .unwrap();
    write(
        "pir_lwe_hint_update",
        "update",
        &s2.update_row(4, &[9; 5]).unwrap().to_wire(),
    );
    let (server, client) = tacit_fuzz::pir::ntru();
    let (_, q) = client.query(&Selection::row(450), rng).unwrap();
    write("pir_ntru_query", "query", &q.to_wire());
    write("pir_ntru_answer", "answer", &server.answer(&q).unwrap().to_wire());
}

/// One honest TracEdge authentication and one caught server (every row but the
/// client's flagged), over a 300-row table: every message (the log segment and the
/// receipt among them), and a proof.
fn tracedge_seeds() {
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;
    use tacit_crypto::sign::SigningKey;
    use tacit_pir::lwe::LweServer;
    use tacit_pir::tracedge::*;
    const NOW: u64 = 1_700_000_000_000;
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    for (k, flagged) in [(0u8, false), (1, true)] {
        let mut server: TracEdgeServer<LweServer> = TracEdgeServer::new(
            SigningKey::generate(&mut rng),
            curve25519_dalek::Scalar::random(&mut rng),
            ServerConfig::default(),
            300,
            NOW,
        )
        .unwrap();
        let subs: Vec<SubscriberSecret> = (0..4).map(|_| SubscriberSecret::random(&mut rng)).collect();
        let changes: Vec<Change> = subs
            .iter()
            .enumerate()
            .map(|(i, s)| (i as u64, s.public_bytes()))
            .collect();
        let receipts = server.apply_changes(&changes, NOW).unwrap().receipts;
        let key = TableKey::random(&mut rng);
        let second = TableKey::random(&mut rng);
        let rows: Vec<u64> = (1..300).collect();
        let flag = flagged.then_some(keytable::Flagged {
            key: &second,
            rows: &rows,
        });
        let mut table = build_lwe_table(
            1,
            key,
            CommitScheme::Binding,
            &server.dh_public(),
            server.directory().keys().to_vec(),
            flag,
            &|_| {},
            &mut rng,
        )
        .unwrap();
        if flagged {
            table.add_second_key(second.clone());
        }
        let hint = table.hint().clone();
        server.install(table, NOW).unwrap();
        let c = TracEdgeClient::new(
            server.verifying_key(),
            0,
            subs[0].clone(),
            ClientConfig {
                audits: 3,
                ..Default::default()
            },
        );
        let mut view = ClientView::for_receipt(receipts[0].clone(), u64::MAX / 2).unwrap();
        let (mut cs, hello) = c.start(NOW, &mut rng);
        let (mut ss, commit) = server.hello(&hello, NOW, &mut rng).unwrap();
        let t = "pir_tracedge_messages";
        let mut n = 0;
        while let CommitNeeds::Log(req) = c.commit_needs(&cs, &commit, &view).unwrap() {
            let seg = server.log_segment(&req);
            write(t, &format!("log_request{k}_{n}"), &req.to_wire());
            write(t, &format!("log_segment{k}_{n}"), &seg.to_wire());
            view.apply(&seg, u64::MAX / 2).unwrap();
            n += 1;
        }
        write(t, &format!("view{k}"), &view.to_bytes());
        write(t, &format!("receipt{k}"), &receipts[0].to_wire());
        let q = c.on_commit(&mut cs, commit.clone(), hint, &view, &mut rng).unwrap();
        let resp = server.respond(&mut ss, &q).unwrap();
        let auth = c.on_response(&mut cs, resp.clone(), &mut rng).unwrap();
        write(t, &format!("hello{k}"), &hello.to_wire());
        write(t, &format!("commit{k}"), &commit.to_wire());
        write(t, &format!("queries{k}"), &q.to_wire());
        write(t, &format!("response{k}"), &resp.to_wire());
        write(t, &format!("client_auth{k}"), &auth.to_wire());
        write(t, &format!("hint_request{k}"), &HintRequest { epoch: 1 }.to_wire());
        let refusal = Refusal {
            code: RefusalCode::TableChanged,
            reason: "the table changed".into(),
        };
        write(t, &format!("refusal{k}"), &refusal.to_wire());
        match server.finish(&mut ss, &auth) {
            Ok((reply, _)) => {
                write(t, &format!("server_auth{k}"), &reply.to_wire());
                let _ = c.on_server_auth(&mut cs, Ok(reply));
            }
            Err(e) => {
                if let ClientOutcome::Caught(p) = c.on_server_auth(&mut cs, Err(e.to_string())) {
                    write("pir_tracedge_proof", &format!("proof{k}"), &p.to_wire());
                }
            }
        }
    }
}

/// The key-request exchange of the target's world.
fn key_request_seeds() {
    use tacit_discovery::key_request::Requester;
    use tacit_fuzz::key_request::{NOW, world};
    let w = world();
    let mut rng = SecureRng::from_seed([43; 32]);
    let (req, hello) = Requester::start(w.principal.clone(), w.blessing.clone(), w.mpk.clone()).unwrap();
    let (root, challenge) = w.authority.on_hello(&hello, &mut rng).unwrap();
    let (waiting, request) = req.on_challenge(&challenge, &mut rng).unwrap();
    let t = "discovery_key_request";
    write(t, "hello", &hello);
    write(t, "challenge", &challenge);
    write(t, "request", &request);
    if let Ok((_, grant)) = root.on_request(&request, NOW, &mut rng) {
        write(t, "grant", &grant);
        let _ = waiting.on_grant(&grant);
    }
    write(t, "lists", &tacit_discovery::root_service::encode_lists(&[]));
}

/// Small Bristol circuits from the repository's test data.
fn mpc_seeds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/mpc/testdata/circuits");
    for f in std::fs::read_dir(dir).unwrap() {
        let f = f.unwrap().path();
        let bytes = std::fs::read(&f).unwrap();
        if f.extension().is_some_and(|e| e == "txt") && !f.ends_with("License.txt") && bytes.len() <= 16 << 10 {
            write("mpc_bristol", f.file_name().unwrap().to_str().unwrap(), &bytes);
        }
    }
}
