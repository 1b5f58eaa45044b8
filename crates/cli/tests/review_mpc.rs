//! Adversarial review of issue 27 against the built binary: each test plays one
//! attack on the GMW commands and asserts what their docs and `--help` claim.

mod common;
use common::*;

const WINDOW: [&str; 14] = [
    "--from",
    "2025-03-10",
    "--to",
    "2025-03-12",
    "--duration",
    "30m",
    "--step",
    "15m",
    "--hours",
    "08:00-22:00",
    "--tz",
    "Europe/Berlin",
    "--engine",
    "gmw",
];

/// Break (issue 27 item 7, "single-connection servers"; `schedule serve --help`:
/// "--max-clients: most sessions in progress at once; further clients are refused at
/// once"): `tacit schedule serve --engine gmw` serves one connection at a time and
/// ignores --max-clients. Anyone who reaches the port — any client key is admitted
/// without --allow — completes the TLS handshake and says nothing; every other client
/// then waits in the backlog until its own handshake times out (10 s), for as long as
/// the silent one is allowed (--timeout per message, --deadline per session: 60 s and
/// 600 s by default), and again with the next silent connection.
#[test]
fn schedule_serve_gmw_serves_a_client_beside_a_silent_one() {
    let (alice, bob) = (examples().join("alice.ics"), examples().join("bob.ics"));
    let (mut server, addr) = spawn(
        &[
            &[
                "--store",
                tmp("a.sqlite3").to_str().unwrap(),
                "schedule",
                "serve",
                "--calendar",
                bob.to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "--max-clients",
                "4",
                "--timeout",
                "40",
            ][..],
            &WINDOW[..],
        ]
        .concat(),
    );
    // The silent client: a TLS handshake with a key of its own, then nothing.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let silent = rt.block_on(async {
        let me = tacit_net::tls::SelfSigned::generate("silent.invalid").unwrap();
        let client = me.client_config_checking_server(tacit_net::tls::any_key()).unwrap();
        tacit_net::FramedConn::connect_tls(
            addr.as_str(),
            &tacit_net::NetConfig::default(),
            client,
            "tacit-pros.invalid",
        )
        .await
        .unwrap()
    });
    let o = tacit()
        .args(
            [
                &[
                    "--store",
                    tmp("b.sqlite3").to_str().unwrap(),
                    "schedule",
                    "connect",
                    "--calendar",
                    alice.to_str().unwrap(),
                    "--connect",
                    &addr,
                ][..],
                &WINDOW[..],
                &["--json"][..],
            ]
            .concat(),
        )
        .output()
        .unwrap();
    drop(silent);
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        o.status.success(),
        "an honest client was not served while a silent one held the connection: {}",
        err(&o)
    );
}
