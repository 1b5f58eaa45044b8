//! Review of issue 29 (rev29c): the library builders against the protections the CLI
//! had before the move (`git show 1a8523d:crates/cli/src/mpc/...`). Each test is a
//! check the CLI made that a library user does not get by default.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_mpc::Channel;
use tacit_mpc::apps::psi::{self, MAX_SET, PreparedSet, PsiParams, footprint};
use tacit_mpc::apps::schedule::{self, Kind, ScheduleHello, ScheduleInput, Window};
use tacit_net::tls::{SelfSigned, pinned};
use tacit_net::{NetConfig, Protocol};

fn keys() -> (Channel, Channel) {
    let (a, b) = (
        SelfSigned::generate("a.invalid").unwrap(),
        SelfSigned::generate("b.invalid").unwrap(),
    );
    (
        Channel::tls(&a, pinned(b.fingerprint().unwrap())).unwrap(),
        Channel::tls(&b, pinned(a.fingerprint().unwrap())).unwrap(),
    )
}

fn mem_available() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = m
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    kib * 1024
}

/// `tacit mpc psi serve` refused to start when the circuit of the largest query it
/// admits does not fit the memory the process may use (`crate::util::memory_budget`,
/// 1a8523d crates/cli/src/mpc/psi.rs:221-235), and reserved every query's circuit
/// from that budget. The library's `apps::psi::Server` has no bound by default
/// ("default: no bound"): a querier of `max_peer` elements makes it build a circuit
/// larger than the machine, `max_sessions` of them at once.
#[tokio::test]
async fn a_default_gmw_psi_server_refuses_a_worst_case_query_larger_than_the_memory_available() {
    let sigma = 256;
    let mine: Vec<String> = (0..4096).map(|i| format!("contact-{i}")).collect();
    let set = Arc::new(PreparedSet::new(&mine, sigma).unwrap());
    let worst = footprint(&PsiParams {
        sigma,
        n_a: set.values.len(),
        n_b: MAX_SET,
    })
    .unwrap();
    let avail = mem_available();
    assert!(
        worst > avail,
        "precondition: worst case {worst} B > available {avail} B"
    );
    let (ca, _) = keys();
    let bound = psi::Server::builder(set)
        .listen("127.0.0.1:0")
        .max_peer(MAX_SET)
        .channel(ca)
        .semi_honest_peers()
        .bind()
        .await;
    match bound {
        Err(e) => assert!(e.to_string().contains("may use"), "{e}"),
        Ok(s) => panic!(
            "the default library server bound with a worst-case circuit of {} MiB per query (x4 sessions) on a machine with {} MiB available; the CLI refused this",
            s.worst_case_bytes() >> 20,
            avail >> 20
        ),
    }
}

fn window(n: usize) -> Window {
    let starts: Vec<i64> = (0..n as i64).map(|j| 1_700_000_000 + 900 * j).collect();
    Window {
        days: vec![(1_700_000_000, 1_700_000_000 + 900 * n as i64 + 3600); n],
        starts,
        duration: 1800,
    }
}

/// `tacit schedule serve --engine gmw` read the client's first message (the hello)
/// under a 64 KiB frame limit (`service_config(store, ch, 1 << 16, ..)`, 1a8523d
/// crates/cli/src/mpc/schedule.rs:331 and pros/channel.rs:163-167). The library's
/// `apps::schedule::Server` reads it under `NetConfig::default()`'s 4 MiB: every
/// admitted client (16 at once) makes the server buffer 64 times what the CLI did
/// before the hello is even parsed.
#[tokio::test]
async fn the_library_schedule_server_bounds_the_hello_frame_as_the_cli_did() {
    let (ca, cb) = keys();
    let w = window(8);
    let hello = ScheduleHello::new(Kind::Availability, &w);
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    let server = schedule::Server::builder(hello, ScheduleInput::Free(vec![true; 8]))
        .listen("127.0.0.1:0")
        .sessions(1)
        .channel(ca)
        .on_event(move |e| {
            if let schedule::ServerEvent::Session { result, .. } = e {
                r.lock().unwrap().push(result.map(|_| ()).map_err(|e| e.to_string()));
            }
        })
        .bind()
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let serving = tokio::spawn(server.serve());
    let net = NetConfig {
        max_frame: 8 << 20,
        ..NetConfig::default()
    };
    let (mut conn, _) = cb.connect(&addr, &net, Protocol::MpcSchedule).await.unwrap();
    // A 1 MiB "hello": 16 times the CLI's limit, under the library's.
    let _ = conn.send(&vec![0u8; 1 << 20]).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), conn.recv()).await;
    drop(conn);
    tokio::time::timeout(Duration::from_secs(20), serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 1, "{results:?}");
    let why = results[0].as_ref().unwrap_err();
    assert!(
        why.contains("announced a 1048576-byte message"),
        "the server read a 1 MiB hello frame before refusing it (the CLI refused frames over 64 KiB unread): {why}"
    );
}

/// `tacit schedule serve --engine gmw` admitted at most 4 sessions at once
/// (`--max-clients` default 4, 1a8523d crates/cli/src/pros/channel.rs:69-71); the
/// library's `apps::schedule::Server` admits 16 by default (a GMW session is CPU
/// work: 4x the load the CLI let in). Five admitted clients that stay silent: the
/// fifth must be refused, as the CLI did.
#[tokio::test]
async fn the_library_schedule_server_admits_no_more_sessions_than_the_cli_did() {
    let (ca, cb) = keys();
    let w = window(8);
    let hello = ScheduleHello::new(Kind::Availability, &w);
    let admissions = Arc::new(Mutex::new(Vec::new()));
    let a = admissions.clone();
    let server = schedule::Server::builder(hello, ScheduleInput::Free(vec![true; 8]))
        .listen("127.0.0.1:0")
        .channel(ca)
        .on_event(move |e| {
            if let schedule::ServerEvent::Admission(line) = e {
                a.lock().unwrap().push(line);
            }
        })
        .bind()
        .await
        .unwrap();
    let addr = server.local_addr().to_string();
    let serving = tokio::spawn(server.serve());
    let mut held = Vec::new();
    for _ in 0..5 {
        if let Ok((c, _)) = cb.connect(&addr, &NetConfig::default(), Protocol::MpcSchedule).await {
            held.push(c);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    serving.abort();
    let admissions = admissions.lock().unwrap();
    assert!(
        admissions.iter().any(|l| l.contains("refused")),
        "5 sessions held at once by silent clients, none refused (the CLI's cap was 4): {admissions:?}"
    );
}

/// `tacit mpc run` refused to start when `instances` copies of the circuit's triples
/// and slots do not fit the memory the process may use (1a8523d
/// crates/cli/src/mpc/cmd.rs:521-531; the CLI still checks before it calls the
/// library). `Session::builder` does not: a library session of 2^31 AES instances
/// is not refused before it connects, and would allocate on the peer's hello.
#[tokio::test]
async fn a_session_too_large_for_memory_is_refused_before_it_connects() {
    let lc = Arc::new(tacit_mpc::circuit::LayeredCircuit::new(
        tacit_mpc::circuit::bristol::parse(tacit_mpc::shipped::AES_128).unwrap(),
    ));
    let (_, cb) = keys();
    // Nothing listens on port 1: a session that checked its size first says so.
    let e = tacit_mpc::Session::builder(lc)
        .instances(1 << 31)
        .inputs(vec![vec![false; 128]])
        .channel(cb)
        .connect("127.0.0.1:1")
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("may use") || e.to_string().contains("memory"),
        "2^31 instances of AES-128 were not refused for their size: {e}"
    );
}

/// docs/mpc.md:114-119 "A listening session is not held up by strangers": the
/// handshakes run side by side, at most `HANDSHAKES_AT_ONCE` (16), each within
/// `HANDSHAKE_TIMEOUT` (5 s) — and a connection beyond the 16 is *closed*
/// (`accept_one`: "16 handshakes in progress"). A stranger who opens 16 silent TCP
/// connections (and renews them every 5 s) keeps every later connection out,
/// the pinned peer's included: the peer is refused, not served.
#[tokio::test]
async fn sixteen_silent_strangers_do_not_keep_the_pinned_peer_out() {
    use tacit_mpc::bits::{bits_from_u64, u64_from_bits};
    use tacit_mpc::service::HANDSHAKES_AT_ONCE;
    let lc = Arc::new(tacit_mpc::circuit::LayeredCircuit::new(
        tacit_mpc::circuit::bristol::parse(tacit_mpc::shipped::ADDER64).unwrap(),
    ));
    let (ca, cb) = keys();
    let a = tacit_mpc::Session::builder(lc.clone())
        .inputs(vec![bits_from_u64(40, 64)])
        .channel(ca)
        .bind("127.0.0.1:0")
        .await
        .unwrap();
    let addr = a.local_addr().to_string();
    let session = tokio::spawn(a.run());
    let mut silent = Vec::new();
    for _ in 0..HANDSHAKES_AT_ONCE {
        silent.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let b = tacit_mpc::Session::builder(lc)
        .inputs(vec![bits_from_u64(2, 64)])
        .channel(cb)
        .connect(&addr);
    let ob = tokio::time::timeout(Duration::from_secs(20), b).await.expect("b hung");
    session.abort();
    let ob =
        ob.unwrap_or_else(|e| panic!("the pinned peer was kept out by {HANDSHAKES_AT_ONCE} silent strangers: {e}"));
    assert_eq!(u64_from_bits(&ob.outputs()[0]), 42);
    drop(silent);
}
