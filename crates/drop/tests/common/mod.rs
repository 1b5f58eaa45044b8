//! Helpers the PrivateDrop transport and service tests share: enrolled devices and
//! the deviating peers (a raw HTTPS client with a device's certificate, a valid
//! `StartPSI` body to replay).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use tacit_crypto::Ristretto255;
use tacit_crypto::rng::SecureRng;
use tacit_drop::DropParams;
use tacit_drop::ca::{CertificateAuthority, DeviceEnrollment, DropIdentity, MemoryRegistry};
use tacit_drop::protocol::AddressBook;
use tacit_psi::{Reuse, Sender, SenderKey, SenderPrecomputation};

pub type G = Ristretto255;

pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

pub fn params() -> DropParams {
    DropParams::default().with_bounds(3, 20)
}

pub struct Device {
    pub identity: Arc<DropIdentity<G>>,
    pub book: Arc<AddressBook>,
}

pub fn device(ca: &CertificateAuthority, ids: &[&str], book: &[&str]) -> Device {
    let mut rng = SecureRng::from_os();
    let e = DeviceEnrollment::<G>::new(&params(), ids, &mut rng).unwrap();
    let issued = ca
        .enroll(e.request(), &|_| true, &mut MemoryRegistry::new(), now() - 5, &mut rng)
        .unwrap();
    Device {
        identity: Arc::new(e.finish(issued, &ca.public_key(), now()).unwrap()),
        book: Arc::new(AddressBook::new(book)),
    }
}

pub fn book_sender(book: &AddressBook) -> tacit_drop::Result<Sender<G>> {
    let mut rng = SecureRng::from_os();
    let p = params().psi;
    let key = SenderKey::<G>::generate(&mut rng, 1);
    let pre = SenderPrecomputation::compute(&p, &key, book.entries(), Reuse::FreshPerSession, &mut rng)?;
    Ok(Sender::new(&p, key, pre)?)
}

pub fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tacit-drop-{tag}-{}-{}", std::process::id(), now()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A raw HTTPS client with the device's certificate: sends `head` and `body`, returns
/// the status line and body text (or an error if the server closed the connection).
pub async fn raw(addr: &str, d: &Device, head: &str, body: &[u8], stall: bool) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tls = tacit_net::tls::MutualTls::new(
        &d.identity.account_cert,
        d.identity.tls_key.pkcs8_der(),
        &d.identity.root_cert,
    )
    .unwrap();
    let connector = tacit_net::tls::TlsConnector::from(tls.client_config().unwrap());
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let mut s = connector
        .connect(
            tacit_net::tls::server_name(tacit_drop::x509::TLS_SERVER_NAME).unwrap(),
            tcp,
        )
        .await?;
    s.write_all(head.as_bytes()).await?;
    if stall {
        // a slow client: headers never finish
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    }
    s.write_all(body).await?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf)).await {
            Ok(Ok(0)) | Err(_) => break,
            Ok(Ok(n)) => {
                out.extend_from_slice(&buf[..n]);
                if out.windows(4).any(|w| w == b"\r\n\r\n") && String::from_utf8_lossy(&out).contains("\n\n") {
                    break;
                }
            }
            Ok(Err(e)) => {
                return if out.is_empty() {
                    Err(e)
                } else {
                    Ok(String::from_utf8_lossy(&out).into_owned())
                };
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// A valid `StartPSI` body from `sender` to `receiver` (its certified inputs).
pub fn start_body(ca: &CertificateAuthority, sender: &Device, receiver: &Device) -> Vec<u8> {
    let ctx = tacit_drop::protocol::Context {
        identity: sender.identity.clone(),
        book: sender.book.clone(),
        ca: ca.public_key(),
        peer: receiver.identity.account,
        now: now(),
        device_name: "sender".into(),
    };
    tacit_drop::protocol::DropSender::start(ctx, book_sender(&sender.book).unwrap())
        .unwrap()
        .1
}
