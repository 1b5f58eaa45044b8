//! PrivateDrop's servers and clients as an async library (tokio): what `tacit ca`,
//! `tacit id` and `tacit drop` run, for a product that embeds PrivateDrop without the
//! `tacit` binary.
//!
//! - [`ca`]: the certification authority kept in a folder ([`ca::init`],
//!   [`ca::load`], [`ca::revoke`], [`ca::publish`]), its TLS endpoint
//!   ([`ca::Ca::builder`]) and a device's side of it ([`ca::enroll`], [`ca::renew`],
//!   [`ca::fetch_revocations`]).
//! - [`device`]: a device's enrolment and revocation lists in its
//!   [`tacit_store::Store`] (what `tacit id` keeps), and the revocation list a
//!   device brings in force before it talks to peers ([`device::revocations_on_start`]).
//! - [`receiver`]: a PrivateDrop receiver ([`receiver::Receiver::builder`]): mutual
//!   TLS, the mutual-contact check, accepted files checked and placed in a folder.
//! - [`sender`]: a PrivateDrop sender ([`sender::Sender::builder`]): receivers found
//!   over mDNS or given by address, authenticated at once, files delivered.
//!
//! Every protection the CLI has is the builders' default (connection limits and
//! deadlines, TLS pinned to the CA, revocation checks, rate limits, size and
//! free-space checks, no-overwrite placement of received files); what weakens one is
//! a builder method that names it. Revocation needs the CA's list, which only the
//! product can bring: until `.revocations(..)` puts one in force (what
//! [`device::revocations_on_start`] returns, as the CLI does), a receiver or sender
//! refuses every peer ([`crate::Error::NoRevocationList`]);
//! `.insecure_no_revocations()` names the opposite.

pub mod ca;
pub mod device;
pub mod receiver;
pub mod sender;

/// What can go wrong in a PrivateDrop service: the protocol's errors ([`crate::Error`]),
/// the store's, the network's, a file's, and the services' own. Messages are the
/// `tacit` CLI's, with their causes as [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The protocol, a certificate, a list or a message.
    #[error(transparent)]
    Drop(#[from] crate::Error),
    /// The store (a device's, or the CA's registry).
    #[error(transparent)]
    Store(#[from] tacit_store::Error),
    /// The network.
    #[error(transparent)]
    Net(#[from] tacit_net::Error),
    /// A TLS configuration that could not be made.
    #[error(transparent)]
    Tls(#[from] tacit_net::tls::TlsConfigError),
    /// mDNS advertising or browsing.
    #[error(transparent)]
    Mdns(#[from] tacit_net::mdns::MdnsError),
    /// A file that could not be read.
    #[error(transparent)]
    File(#[from] tacit_wire::file::FileError),
    /// An operating-system error while doing `what`.
    #[error("{what}")]
    Io {
        /// What was being done ("cannot write ca/ca.key").
        what: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A failure in a context: `what` names the context, `source` the failure.
    #[error("{what}")]
    Context {
        /// The context ("cannot reach the CA at 127.0.0.1:7700").
        what: String,
        /// The failure.
        #[source]
        source: Box<ServiceError>,
    },
    /// The CA refused an enrolment or list request and said why.
    #[error("the CA refused: {0}")]
    CaRefused(String),
    /// Anything else that is not as it must be (the message says what).
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of the services.
pub type Result<T> = core::result::Result<T, ServiceError>;

impl ServiceError {
    /// `what`, caused by `e`.
    pub(crate) fn context(what: impl Into<String>, e: impl Into<ServiceError>) -> Self {
        ServiceError::Context {
            what: what.into(),
            source: Box::new(e.into()),
        }
    }

    /// An I/O error while doing `what`.
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        ServiceError::Io {
            what: what.into(),
            source,
        }
    }
}

/// `.ctx(..)` on results: anyhow's `context` for [`ServiceError`].
pub(crate) trait Ctx<T> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<ServiceError>> Ctx<T> for core::result::Result<T, E> {
    fn ctx<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| ServiceError::context(what(), e))
    }
}

/// An error and its causes on one line, a cause skipped whose text the line already
/// holds, escaped for a terminal: how refusals are sent to a peer and events name a
/// failure (the CLI prints its errors the same way).
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(g @ tacit_net::Error::Greeting(_)) = c.downcast_ref::<tacit_net::Error>() {
            return tacit_wire::text::escape_for_display(&g.to_string()).into_owned();
        }
        cause = c.source();
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&s);
        }
        cause = c.source();
    }
    tacit_wire::text::escape_for_display(&out.replace('\n', " ")).into_owned()
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
