//! TracEdge as a service: the TLS server (sessions batched into one PIR pass, table
//! management in the store, the table log) and the client (enrolment, the copy of the
//! log, the hint cache, authentication), async on tokio, driving the sans-I/O
//! [`TracEdgeServer`](super::TracEdgeServer) and [`TracEdgeClient`](super::TracEdgeClient).
//! A product — or a RADIUS/EAP front end — embeds these without the `tacit` command:
//!
//! ```no_run
//! # async fn demo() -> Result<(), tacit_pir::tracedge::service::ServiceError> {
//! use tacit_pir::tracedge::service::{client, operator, server};
//! let store = std::path::Path::new("operator.sqlite3");
//! let keys = operator::init(store, 1000, tacit_pir::tracedge::CommitScheme::Binding, 3600)?;
//! let running = server::Server::builder(store).listen("127.0.0.1:0").open_enrollment(true).bind().await?;
//! let addr = running.local_addr().to_string();
//! tokio::spawn(running.serve());
//! let id = std::path::Path::new("alice.json");
//! client::enroll(&addr, keys.pin, keys.server_key, "alice", id).await?;
//! let report = client::authenticate(id, &client::AuthOptions::default()).await?;
//! println!("{:?}", report.outcome);
//! # Ok(()) }
//! ```
//!
//! [`operator`] holds what the operator does to the store (init, register, remove,
//! rekey, status, receipts), [`server`] the serving process, [`client`] the
//! subscriber's side.

pub mod client;
pub mod operator;
pub mod server;

use super::messages::RefusalCode;

/// The TLS server name of a TracEdge server (certificates are pinned, not named).
pub const TLS_NAME: &str = "tracedge.tacit.invalid";

/// What can go wrong in the service, in words a user understands.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A protocol or PIR error.
    #[error(transparent)]
    Pir(#[from] crate::Error),
    /// A network error (connection, TLS, framing, timeouts).
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// The store.
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// A malformed message.
    #[error(transparent)]
    Wire(#[from] tacit_wire::Error),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The server refused, with a code the client may act on.
    #[error("the server refused: {reason}")]
    Refused {
        /// What the client may do about it.
        code: RefusalCode,
        /// The server's words (sanitised before display by the caller).
        reason: String,
    },
    /// The server was caught misbehaving (at enrolment, say): the proof.
    #[error("the server was caught misbehaving: {}", .0.verify().map(|f| f.what).unwrap_or_default())]
    Caught(Box<crate::tracedge::MisbehaviourProof>),
    /// Another process serves this store.
    #[error("the store {store} is already served by process {pid}; stop it first (one serving process per store)")]
    InUse {
        /// The store.
        store: String,
        /// The process holding it (as it wrote in the lock file).
        pid: String,
    },
    /// A setting or a file the user gave is not usable.
    #[error("{0}")]
    Config(String),
    /// The peer sent a message that does not fit the protocol here.
    #[error("{0}")]
    Protocol(String),
    /// TLS configuration.
    #[error(transparent)]
    Tls(#[from] tacit_net::tls::TlsConfigError),
}

/// Result alias of the service.
pub type Result<T> = core::result::Result<T, ServiceError>;

pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub(crate) fn hex32(s: &str, what: &str) -> Result<[u8; 32]> {
    let v = hex::decode(s.trim()).map_err(|_| ServiceError::Config(format!("{what} is not hex")))?;
    v.try_into()
        .map_err(|_| ServiceError::Config(format!("{what} must be 32 bytes (64 hex digits)")))
}

pub(crate) fn file_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ServiceError + '_ {
    move |source| ServiceError::File {
        path: path.to_owned(),
        source,
    }
}
