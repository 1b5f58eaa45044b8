//! The guarded accept loop when the process runs out of file descriptors (issue 32:
//! `drop receive` exited with "accept: Too many open files" after 244 idle
//! connections under a 256-descriptor limit).
//!
//! One test in this file: it lowers the process's descriptor limit, which the other
//! tests of a binary would share.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tacit_net::guard::{self, Guard, ServeEvent, ServeLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

fn set_soft_limit(n: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let cur = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(n),
            maximum: cur.maximum,
        },
    )
    .unwrap();
}

async fn answered(addr: SocketAddr) -> bool {
    let Ok(mut s) = guard::connect_from("127.0.0.1".parse().unwrap(), addr).await else {
        return false;
    };
    let mut b = [0u8; 1];
    s.write_all(b"x").await.is_ok()
        && matches!(
            tokio::time::timeout(Duration::from_secs(3), s.read_exact(&mut b)).await,
            Ok(Ok(_))
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_outlives_descriptor_exhaustion() {
    // Part 1: the cap is fitted below the limit, so a flood from one address gets its
    // share and a flood from many is held under the cap: accept never runs dry.
    let base = open_descriptors();
    set_soft_limit(base + 160);
    let events = Arc::new(Mutex::new(Vec::<ServeEvent>::new()));
    let ev = events.clone();
    let guard = Guard::new(ServeLimits::new(10_000, Duration::from_secs(30)).with_per_address(8))
        .on_event(Arc::new(move |e| ev.lock().unwrap().push(e)));
    assert!(guard.limits().max_connections as u64 <= base + 160 - 64);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let g = guard.clone();
    let server = tokio::spawn(async move {
        guard::serve(&listener, &g, None, |mut s, _| async move {
            let mut b = [0u8; 1];
            if s.read_exact(&mut b).await.is_ok() {
                let _ = s.write_all(&b).await;
                let _ = s.read(&mut b).await;
            }
        })
        .await
    });
    let mut idle = Vec::new();
    for i in 0..60u8 {
        let from: IpAddr = format!("127.0.1.{}", 1 + i % 6).parse().unwrap();
        idle.push(guard::connect_from(from, addr).await.unwrap());
    }
    assert!(answered(addr).await, "an honest client is served during the flood");
    assert!(!server.is_finished());
    drop(idle);

    // Part 2: the limit drops under what the process already holds plus a few, so
    // accept itself fails (EMFILE). The failures are reported, and once descriptors
    // are free again the server serves.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let now = open_descriptors();
    set_soft_limit(now + 12);
    let mut flood = Vec::new();
    for i in 0..40u8 {
        let from: IpAddr = format!("127.0.2.{}", 1 + i).parse().unwrap();
        match guard::connect_from(from, addr).await {
            Ok(s) => flood.push(s),
            Err(_) => break, // this process is out of descriptors too
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let failed = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ServeEvent::AcceptFailed { .. }))
        .count();
    assert!(failed > 0, "accept never failed: the test did not exhaust descriptors");
    assert!(!server.is_finished(), "the server ended on an accept error");
    drop(flood);
    set_soft_limit(now + 200);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(
        answered(addr).await,
        "the server serves again once descriptors are free"
    );
    server.abort();
}
