//! Adversarial review after issue 32: PrivateDrop's revocation lists between
//! processes, attacked as a hostile mirror (or a network attacker on an `http://`
//! URL, which `id refresh --url` accepts).

mod common;

use common::*;

fn ok(c: &mut std::process::Command) -> String {
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    out(&o)
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Enrols a device offline with the CA in `ca_dir`; returns its store.
fn device(ca_dir: &str, key: &str, id: &str) -> String {
    let store = tmp("device.sqlite3").to_str().unwrap().to_string();
    let req = tmp("req.bin");
    let issued = tmp("issued.bin");
    ok(tacit()
        .args(["--store", &store, "id", "enroll", "--offline", req.to_str().unwrap()])
        .args(["--ca-key", key, "--id", id, "--max-contacts", "100"]));
    ok(tacit()
        .args(["ca", "enroll", req.to_str().unwrap(), "--out", issued.to_str().unwrap()])
        .args(["--dir", ca_dir, "--confirm", "--max-contacts", "100"]));
    ok(tacit().args(["--store", &store, "id", "finish", issued.to_str().unwrap()]));
    store
}

/// Serves `body` to every request on a loopback port (plain HTTP).
fn http_server(body: Vec<u8>) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut c in l.incoming().map_while(Result::ok) {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(&body);
        }
    });
    addr
}

/// Kills the child when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Finding: the remembered URL is tried first and any list that verifies ends the
/// search, current or not. A mirror that keeps serving an old list (a stale web
/// cache, a thief who controls the mirror, or anyone on the path of an `http://`
/// URL replaying the list recorded before the revocation) keeps the device on it
/// although the CA's endpoint, which the device also knows, answers with a current
/// list naming the revoked account. Under `--stale-revocations warn` (the default)
/// the revoked device stays trusted; under `refuse` the device talks to no one. The
/// claim broken (docs/drop.md): "A device remembers the URL and tries it before the
/// CA's endpoint whenever its list falls due" — a stale answer must count as a
/// failure of that source, so that the CA's endpoint is tried.
#[test]
fn a_mirror_serving_a_stale_list_does_not_hide_the_cas_current_one() {
    let ca = tmp("ca");
    let ca_dir = ca.to_str().unwrap().to_string();
    ok(tacit().args(["ca", "init", "--dir", &ca_dir]));
    let key = ok(tacit().args(["ca", "show", "--dir", &ca_dir])).trim().to_string();
    let alice = device(&ca_dir, &key, "alice@example.com");
    let thief = device(&ca_dir, &key, "thief@example.com");
    // The list as it was two hours ago (one hour of life, so past its next update):
    // what the mirror keeps serving.
    let seed: [u8; 32] = unhex(std::fs::read_to_string(ca.join("ca.key")).unwrap().trim())
        .try_into()
        .unwrap();
    let root = tacit_drop::x509::TlsRoot::from_parts(
        &std::fs::read_to_string(ca.join("tls-root.key")).unwrap(),
        &std::fs::read(ca.join("tls-root.der")).unwrap(),
    )
    .unwrap();
    let authority = tacit_drop::ca::CertificateAuthority::from_parts(&seed, root);
    let (old, _) = authority.publish_revocations(None, &[], now() - 7200, 3600).unwrap();
    let mirror = format!("http://{}/revocations.bin", http_server(old.to_bytes()));
    // Alice's device took the list from the mirror back then, and remembers it.
    ok(tacit().args(["--store", &alice, "id", "refresh", "--url", &mirror]));
    // Since, the CA published again and revoked the thief: its list is number 2.
    ok(tacit().args([
        "ca",
        "publish",
        "--dir",
        &ca_dir,
        "--out",
        tmp("r.bin").to_str().unwrap(),
    ]));
    let shown: serde_json::Value =
        serde_json::from_str(&ok(tacit().args(["--store", &thief, "id", "show", "--json"]))).unwrap();
    let uuid = shown["account"].as_str().unwrap().to_string();
    ok(tacit().args(["ca", "revoke", &uuid, "--dir", &ca_dir]));
    let (child, addr) = spawn_listening(&[
        "ca",
        "serve",
        "--dir",
        &ca_dir,
        "--listen",
        "127.0.0.1:0",
        "--confirm",
        "--max-contacts",
        "100",
    ]);
    let _ca = Killed(child);
    // Alice's device knows the CA's endpoint too (as after an online enrolment).
    {
        let mut st = tacit_store::Store::open(std::path::Path::new(&alice)).unwrap();
        st.put_key("drop-ca-address", 1, addr.as_bytes(), now()).unwrap();
    }
    let note = write("note.txt", "hello");
    let o = tacit()
        .args(["--store", &alice, "drop", "send", note.to_str().unwrap()])
        .args(["--peer", "127.0.0.1:9", "--max-contacts", "100"])
        .args(["--stale-revocations", "refuse"])
        .output()
        .unwrap();
    // Secure: the stale answer of the mirror does not stop the search; the CA's
    // current list (number 2, naming the thief) is taken and the device goes on
    // (failing only on the absent receiver).
    assert!(
        !err(&o).contains("talks to no peer"),
        "the device stayed on the mirror's stale list although the CA at {addr} had a current one:\n{}",
        err(&o)
    );
    let shown: serde_json::Value =
        serde_json::from_str(&ok(tacit().args(["--store", &alice, "id", "show", "--json"]))).unwrap();
    assert_eq!(shown["revocation_list"]["sequence"], 2, "{shown}");
}
