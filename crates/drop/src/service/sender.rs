//! A PrivateDrop sender as a service ([`Sender::builder`]): receivers found over mDNS
//! ([`discover`]) or given by address, authenticated at once (the address-book
//! precomputation made only after TLS succeeded with an unrevoked account of our
//! CA), chosen by who they proved to be ([`choose`]), files delivered ([`deliver`]).

use super::{Result, ServiceError};
use crate::ca::DropIdentity;
use crate::protocol::{AddressBook, FileOffer, Peer};
use crate::records::CaPublicKey;
use crate::revocation::Revocations;
use crate::transport::{self, Event, Limits, SenderConfig, Session, Timings};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tacit_crypto::PrimeGroup;
use tacit_crypto::rng::SecureRng;

/// The protocol version PrivateDrop receivers put in their mDNS TXT record (`v=1`,
/// [`tacit_net::mdns::advertise`]); senders connect only to receivers of this one.
pub const TXT_VERSION: &str = "1";

/// A PrivateDrop sender ([`Sender::builder`]), cheap to clone.
#[derive(Clone)]
pub struct Sender<G: PrimeGroup> {
    cfg: Arc<SenderConfig<G>>,
}

/// Configures a sender ([`Sender::builder`]).
pub struct SenderBuilder<G: PrimeGroup> {
    identity: Arc<DropIdentity<G>>,
    book: Arc<AddressBook>,
    ca: CaPublicKey,
    revocations: Revocations,
    name: String,
    limits: Limits,
    events: Arc<transport::Events>,
}

impl<G: PrimeGroup> SenderBuilder<G> {
    /// The CA's revocation list in force: a receiver whose account it names is sent
    /// nothing, not even our certified inputs.
    pub fn revocations(mut self, r: Revocations) -> Self {
        self.revocations = r;
        self
    }

    /// Checks no revocation list: a receiver whose account the CA revoked gets our
    /// certified inputs and files. Without this or [`SenderBuilder::revocations`],
    /// every receiver is refused with [`crate::Error::NoRevocationList`].
    pub fn insecure_no_revocations(mut self) -> Self {
        self.revocations = Revocations::new();
        self
    }

    /// The device name receivers see (unauthenticated).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Limits and timeouts (the deadline of a whole exchange among them).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where connections, authentications and upload progress are reported.
    pub fn events(mut self, events: impl Fn(Event) + Send + Sync + 'static) -> Self {
        self.events = Arc::new(events);
        self
    }

    /// The sender.
    pub fn build(self) -> Sender<G> {
        Sender {
            cfg: Arc::new(SenderConfig {
                identity: self.identity,
                book: self.book,
                ca: self.ca,
                revocations: self.revocations,
                name: self.name,
                limits: self.limits,
                events: self.events,
            }),
        }
    }
}

impl<G: PrimeGroup> Sender<G> {
    /// A sender with `identity` (enrolled with the CA whose key is `ca`) and the
    /// address book `book`. Defaults: device name "tacit sender", [`Limits::default`]
    /// (an exchange ends within an hour, each answer within 15 s), every receiver
    /// refused until the CA's revocation list is in force ([`SenderBuilder::revocations`];
    /// [`SenderBuilder::insecure_no_revocations`] names the opposite).
    pub fn builder(identity: Arc<DropIdentity<G>>, book: Arc<AddressBook>, ca: CaPublicKey) -> SenderBuilder<G> {
        SenderBuilder {
            identity,
            book,
            ca,
            revocations: Revocations::required(),
            name: "tacit sender".into(),
            limits: Limits::default(),
            events: Arc::new(|_| {}),
        }
    }

    /// The configuration the transport runs with.
    pub fn config(&self) -> &Arc<SenderConfig<G>> {
        &self.cfg
    }

    /// Connects to the receiver at `addr` and runs PrivateDrop's authentication.
    pub async fn authenticate(&self, addr: &str) -> crate::Result<Session<G>> {
        let (book, params) = (self.cfg.book.clone(), self.cfg.identity.params);
        transport::authenticate_with(addr, self.cfg.clone(), move || book.fresh_sender::<G>(&params)).await
    }

    /// Authenticates to every address at once; each result beside its address, in
    /// the order they finished.
    pub async fn authenticate_all(&self, addrs: &[String]) -> Vec<(String, crate::Result<Session<G>>)> {
        let mut auth = tokio::task::JoinSet::new();
        for addr in addrs.iter().cloned() {
            let me = self.clone();
            auth.spawn(async move {
                let r = me.authenticate(&addr).await;
                (addr, r)
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = auth.join_next().await {
            match joined {
                Ok(r) => out.push(r),
                Err(e) => out.push((
                    "?".into(),
                    Err(crate::Error::Transport(format!("authentication task: {e}"))),
                )),
            }
        }
        out
    }

    /// The legacy AirDrop `Discover` exchange with `addr` (it leaks our identifier
    /// hashes): the receiver as identified, its device name, the timings.
    pub async fn legacy_discover(&self, addr: &str) -> crate::Result<(Peer, String, Timings)> {
        transport::legacy_discover(addr, self.cfg.clone()).await
    }
}

/// Receivers found over mDNS ([`discover`]).
#[derive(Debug, Clone, Default)]
pub struct Discovered {
    /// Addresses to connect to (at most the maximum asked for, chosen at random when
    /// more answered).
    pub addrs: Vec<String>,
    /// How many addresses answered (before the maximum was applied).
    pub answered: usize,
    /// Receivers left out for advertising another protocol version, and the versions
    /// they named ("v=2", "no version").
    pub other_versions: (usize, Vec<String>),
}

/// Browses mDNS for PrivateDrop receivers for `wait`; keeps those of our protocol
/// version and at most `max` addresses, chosen at random (so that advertisements
/// with chosen names cannot push the real receivers out). Browsing blocks: call it
/// from a blocking thread where that matters.
pub fn discover(scope: tacit_net::mdns::Scope, wait: Duration, max: usize) -> Result<Discovered> {
    let instances = tacit_net::mdns::browse_txt(tacit_net::mdns::DROP_SERVICE, scope, wait)?;
    let (ours, other): (Vec<_>, Vec<_>) = instances.into_iter().partition(|f| {
        f.txt
            .iter()
            .find(|(k, _)| k == "v")
            .is_some_and(|(_, v)| v.as_slice() == TXT_VERSION.as_bytes())
    });
    let versions: BTreeSet<String> = other
        .iter()
        .map(|f| match f.txt.iter().find(|(k, _)| k == "v") {
            Some((_, v)) => format!("v={}", String::from_utf8_lossy(&v[..v.len().min(16)])),
            None => "no version".to_string(),
        })
        .collect();
    let found: BTreeSet<SocketAddr> = ours.iter().flat_map(tacit_net::mdns::Found::socket_addrs).collect();
    let mut addrs: Vec<String> = found.iter().map(|a| a.to_string()).collect();
    let answered = addrs.len();
    if addrs.len() > max {
        tacit_crypto::rng::shuffle(&mut SecureRng::from_os(), &mut addrs);
        addrs.truncate(max);
    }
    Ok(Discovered {
        addrs,
        answered,
        other_versions: (other.len(), versions.into_iter().collect()),
    })
}

/// Which authenticated receivers to send to.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    /// Receivers that authenticated as one of these contacts (an identifier in our
    /// book, or the name of the contact it belongs to).
    pub to: Vec<String>,
    /// Receivers whose self-chosen device name is one of these (unauthenticated).
    pub to_device: Vec<String>,
    /// Every receiver that is a mutual contact.
    pub all: bool,
}

impl Choice {
    /// Whether nothing was asked for (then the one receiver that answered is taken).
    pub fn is_empty(&self) -> bool {
        self.to.is_empty() && self.to_device.is_empty() && !self.all
    }
}

/// Whether the receiver of `session` authenticated as the contact `name`: one of our
/// address-book identifiers, or the name of the contact (in `contacts`) that
/// identifier belongs to. The receiver's self-chosen device name never counts
/// (anyone nearby can call itself "Bob Builder").
pub fn is_contact<G: PrimeGroup>(contacts: &[tacit_store::Contact], session: &Session<G>, name: &str) -> bool {
    let Peer::Contact { identifier } = &session.outcome.receiver else {
        return false;
    };
    let want = name.trim().to_lowercase();
    if identifier.to_lowercase() == want || identifier.trim_start_matches('+') == want.trim_start_matches('+') {
        return true;
    }
    contacts
        .iter()
        .any(|c| c.display_name.to_lowercase() == want && c.identifiers.iter().any(|i| &i.value == identifier))
}

/// Authenticated receivers, each beside its address.
pub type Authenticated<G> = Vec<(String, Session<G>)>;

/// The receivers `choice` picks among the authenticated `sessions` (each once), and
/// a line for each wish nothing matched. With an empty choice, the one receiver that
/// answered (none: none; several: an error asking to choose).
pub fn choose<G: PrimeGroup>(
    mut sessions: Authenticated<G>,
    choice: &Choice,
    contacts: &[tacit_store::Contact],
) -> Result<(Authenticated<G>, Vec<String>)> {
    let mut chosen: Vec<(String, Session<G>)> = Vec::new();
    let mut failed = Vec::new();
    let mut take = |pred: &dyn Fn(&Session<G>) -> bool,
                    what: String,
                    chosen: &mut Vec<(String, Session<G>)>,
                    sessions: &mut Vec<(String, Session<G>)>| {
        match sessions.iter().position(|(_, s)| pred(s)) {
            Some(i) => chosen.push(sessions.swap_remove(i)),
            None if chosen.iter().any(|(_, s)| pred(s)) => {}
            None => failed.push(format!("{what}: no receiver found that matches")),
        }
    };
    for n in &choice.to {
        take(
            &|s| is_contact(contacts, s, n),
            format!("--to {n:?}"),
            &mut chosen,
            &mut sessions,
        );
    }
    for n in &choice.to_device {
        take(
            &|s| s.outcome.receiver_name.trim().eq_ignore_ascii_case(n.trim()),
            format!("--to-device {n:?}"),
            &mut chosen,
            &mut sessions,
        );
    }
    if choice.all {
        let mut rest = Vec::new();
        for (addr, s) in sessions.drain(..) {
            if matches!(s.outcome.receiver, Peer::Contact { .. }) && !s.outcome.known_by_receiver.is_empty() {
                chosen.push((addr, s));
            } else {
                rest.push((addr, s));
            }
        }
        sessions = rest;
        if chosen.is_empty() {
            failed.push("--all: no receiver is a mutual contact".into());
        }
    }
    if choice.is_empty() {
        match sessions.len() {
            0 | 1 => chosen.extend(sessions.pop()),
            n => {
                return Err(ServiceError::Invalid(format!(
                    "{n} receivers answered; choose with --to CONTACT (or --all, or --to-device NAME)"
                )));
            }
        }
    }
    Ok((chosen, failed))
}

/// The offers of `files` (SHA-256 and size), `progress(file, bytes hashed, size)`
/// called as each is hashed.
pub async fn offers(
    files: &[PathBuf],
    progress: &(dyn Fn(usize, u64, u64) + Sync),
) -> Result<Vec<(PathBuf, FileOffer)>> {
    let mut out = Vec::new();
    for (i, f) in files.iter().enumerate() {
        out.push((
            f.clone(),
            transport::offer_with_progress(f, &|done, total| progress(i, done, total)).await?,
        ));
    }
    Ok(out)
}

/// A file a receiver took.
#[derive(Debug, Clone)]
pub struct Delivered {
    /// The file sent.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// The name the receiver stored it under (as the receiver said: escape it
    /// before printing).
    pub stored_as: String,
}

/// Offers `files` on an authenticated session and uploads each if the receiver
/// accepts; an error if it declines (saying when it does not hold us).
pub async fn deliver<G: PrimeGroup>(mut session: Session<G>, files: &[(PathBuf, FileOffer)]) -> Result<Vec<Delivered>> {
    let offers: Vec<_> = files.iter().map(|(_, o)| o.clone()).collect();
    if !session.ask(&offers).await? {
        if session.outcome.known_by_receiver.is_empty() {
            // The receiver answers a contacts-only refusal like a decline; we know
            // from DO3 that it does not hold us.
            return Err(ServiceError::Invalid(
                "declined (the receiver does not have you in its contacts; a contacts-only receiver refuses such senders)"
                    .into(),
            ));
        }
        return Err(ServiceError::Invalid("declined".into()));
    }
    let mut stored = Vec::new();
    for (i, (f, o)) in files.iter().enumerate() {
        let name = session.upload(i, f, o).await?;
        stored.push(Delivered {
            path: f.clone(),
            size: o.size,
            stored_as: name,
        });
    }
    Ok(stored)
}
