//! A device's PrivateDrop state in its [`Store`]: the CA it trusts, its certified
//! identity, a pending offline enrolment, where it reaches the CA and its published
//! revocation list, and the revocation list in force.

use super::{Ctx, Result, ServiceError, now};
use crate::ca::{DeviceEnrollment, DropIdentity};
use crate::records::CaPublicKey;
use crate::revocation::{Revocations, SignedRevocationList, StalePolicy, VerifiedRevocationList};
use tacit_crypto::sign::VerifyingKey;
use tacit_crypto::{GroupId, PrimeGroup};
use tacit_store::Store;

/// Store key purpose of the trusted CA's public key.
pub const CA_PUBLIC: &str = "drop-ca-public";
/// Where the CA was reached last (enrolment, renewal, refresh): where a device
/// refreshes a stale revocation list.
pub const CA_ADDRESS: &str = "drop-ca-address";
/// Where this device last fetched a revocation list over HTTP(S), tried first when
/// a list falls due.
pub const REVOCATION_URL: &str = "drop-revocation-url";

fn identity_purpose(g: GroupId) -> String {
    format!("drop-identity/{g}")
}

fn pending_purpose(g: GroupId) -> String {
    format!("drop-pending/{g}")
}

fn next_epoch(st: &Store, purpose: &str) -> Result<u64> {
    Ok(st.current_key(purpose)?.map_or(1, |k| k.epoch + 1))
}

fn put_text(st: &mut Store, purpose: &str, value: &str) -> Result<()> {
    if text(st, purpose)?.as_deref() == Some(value) {
        return Ok(());
    }
    let epoch = next_epoch(st, purpose)?;
    st.put_key(purpose, epoch, value.as_bytes(), now())?;
    Ok(())
}

fn text(st: &Store, purpose: &str) -> Result<Option<String>> {
    Ok(st
        .current_key(purpose)?
        .map(|k| String::from_utf8_lossy(&k.secret).into_owned()))
}

/// Keeps the CA's public key (the trust root).
pub fn remember_ca(st: &mut Store, ca: &CaPublicKey) -> Result<()> {
    if st
        .current_key(CA_PUBLIC)?
        .is_some_and(|k| k.secret.as_slice() == ca.0.to_bytes())
    {
        return Ok(());
    }
    let epoch = next_epoch(st, CA_PUBLIC)?;
    st.put_key(CA_PUBLIC, epoch, &ca.0.to_bytes(), now())?;
    Ok(())
}

/// The trusted CA's public key.
pub fn ca_public(st: &Store) -> Result<CaPublicKey> {
    let k = st.current_key(CA_PUBLIC)?.ok_or_else(|| {
        ServiceError::Invalid("no CA public key in the store (enrol with `tacit id enroll --ca-key …`)".into())
    })?;
    Ok(CaPublicKey(
        VerifyingKey::from_bytes(&k.secret).map_err(crate::Error::from)?,
    ))
}

/// The CA address this device last used, if any.
pub fn ca_address(st: &Store) -> Result<Option<String>> {
    text(st, CA_ADDRESS)
}

/// Remembers where the CA was reached.
pub fn remember_ca_address(st: &mut Store, addr: &str) -> Result<()> {
    put_text(st, CA_ADDRESS, addr)
}

/// The revocation-list URL this device last used, if any.
pub fn revocation_url(st: &Store) -> Result<Option<String>> {
    text(st, REVOCATION_URL)
}

/// Remembers where a revocation list was fetched.
pub fn remember_revocation_url(st: &mut Store, url: &str) -> Result<()> {
    put_text(st, REVOCATION_URL, url)
}

/// Keeps `identity` as this device's identity in its group.
pub fn store_identity<G: PrimeGroup>(st: &mut Store, identity: &DropIdentity<G>) -> Result<()> {
    let purpose = identity_purpose(G::ID);
    let e = next_epoch(st, &purpose)?;
    st.put_key(&purpose, e, &identity.to_bytes(), now())?;
    Ok(())
}

/// This device's identity in group `G`.
pub fn identity<G: PrimeGroup>(st: &Store) -> Result<DropIdentity<G>> {
    let k = st.current_key(&identity_purpose(G::ID))?.ok_or_else(|| {
        ServiceError::Invalid(format!(
            "this device is not enrolled for {} (run `tacit id enroll`)",
            G::ID
        ))
    })?;
    Ok(DropIdentity::<G>::from_bytes(&k.secret)?)
}

/// The address book kept in the store (`tacit contacts import`), for PrivateDrop with
/// `params`: refused when it holds more than `n` entries.
pub fn address_book(st: &Store, params: &crate::DropParams) -> Result<crate::protocol::AddressBook> {
    let entries = st.address_book()?;
    if entries.len() > params.max_contacts() {
        return Err(ServiceError::Invalid(format!(
            "the address book has {} entries; the limit is {}",
            entries.len(),
            params.max_contacts()
        )));
    }
    Ok(crate::protocol::AddressBook::new(&entries))
}

/// Keeps an offline enrolment until the CA's answer arrives ([`pending`]).
pub fn store_pending<G: PrimeGroup>(st: &mut Store, pending: &DeviceEnrollment<G>) -> Result<()> {
    let purpose = pending_purpose(G::ID);
    let e = next_epoch(st, &purpose)?;
    st.put_key(&purpose, e, &pending.to_bytes(), now())?;
    Ok(())
}

/// The offline enrolment waiting for the CA's answer.
pub fn pending<G: PrimeGroup>(st: &Store) -> Result<DeviceEnrollment<G>> {
    let k = st.current_key(&pending_purpose(G::ID))?.ok_or_else(|| {
        ServiceError::Invalid(format!(
            "no pending enrolment for {} (run `tacit id enroll --offline` first)",
            G::ID
        ))
    })?;
    Ok(DeviceEnrollment::<G>::from_bytes(&k.secret)?)
}

/// The revocation list kept in the store for `ca`, verified.
pub fn stored_revocations(st: &Store, ca: &CaPublicKey) -> Result<Option<VerifiedRevocationList>> {
    match st.revocation_list(&super::ca::issuer(ca))? {
        None => Ok(None),
        Some(s) => Ok(Some(
            SignedRevocationList::from_bytes(&s.list)?
                .verify(ca)
                .ctx(|| "the stored revocation list")?,
        )),
    }
}

/// Keeps `list` unless the store holds a newer one (an error then); whether it was
/// stored (`false`: the same list was held).
pub fn keep_revocations(st: &mut Store, list: &VerifiedRevocationList) -> Result<bool> {
    let l = list.list();
    if let Some(cur) = stored_revocations(st, list.ca())?
        && cur.list().sequence() > l.sequence()
    {
        return Err(ServiceError::Invalid(format!(
            "revocation list {} is older than list {} already held",
            l.sequence(),
            cur.list().sequence()
        )));
    }
    Ok(st.put_revocation_list(
        &super::ca::issuer(list.ca()),
        l.sequence(),
        l.next_update(),
        &list.signed().to_bytes(),
    )?)
}

/// Where the device fetches revocation lists: the URL it last refreshed from and
/// the CA's endpoint.
#[derive(Debug, Clone, Default)]
pub struct ListSources {
    /// A URL where the CA's operator publishes the list.
    pub url: Option<String>,
    /// The CA's address.
    pub ca: Option<String>,
}

/// What [`ListSources::fetch`] found.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The newest list a source gave that is newer than the one held, and where it
    /// came from: a current one if any source had one (else the newest stale one,
    /// which still revokes more than the list held).
    pub list: Option<(VerifiedRevocationList, String)>,
    /// Why each other source gave nothing usable: unreachable, a list that does not
    /// verify, one past its next update, or one not newer than the list held.
    pub failures: Vec<String>,
}

impl Fetched {
    /// Whether a current list was found.
    pub fn is_current(&self, now: u64) -> bool {
        self.list.as_ref().is_some_and(|(l, _)| !l.list().is_stale(now))
    }
}

impl ListSources {
    /// The sources the device in `st` knows.
    pub fn of(st: &Store) -> Result<Self> {
        Ok(ListSources {
            url: revocation_url(st)?,
            ca: ca_address(st)?,
        })
    }

    /// Whether the device knows any source.
    pub fn is_empty(&self) -> bool {
        self.url.is_none() && self.ca.is_none()
    }

    /// Asks every source at once and keeps the newest current list of all (a mirror
    /// that keeps serving an old list, or anyone replaying one on the path of an
    /// `http://` URL, cannot hide the CA's current list). A list past its next
    /// update at `now`, or not newer than `held`, is a failure of its source.
    pub async fn fetch(&self, ca: CaPublicKey, held: Option<&VerifiedRevocationList>, now: u64) -> Fetched {
        let from_url = async {
            match &self.url {
                Some(url) => Some((url.clone(), super::ca::fetch_revocations_url(url, ca).await)),
                None => None,
            }
        };
        let from_ca = async {
            match &self.ca {
                Some(addr) => Some((
                    format!("the CA at {addr}"),
                    super::ca::fetch_revocations(addr, ca).await,
                )),
                None => None,
            }
        };
        let (a, b) = tokio::join!(from_url, from_ca);
        let mut out = Fetched::default();
        let mut stale: Option<(VerifiedRevocationList, String)> = None;
        for (from, got) in [a, b].into_iter().flatten() {
            let list = match got {
                Ok(l) => l,
                Err(e) => {
                    out.failures.push(format!("{from}: {}", super::one_line(&e)));
                    continue;
                }
            };
            let (seq, next) = (list.list().sequence(), list.list().next_update());
            if let Some(h) = held
                && seq <= h.list().sequence()
            {
                out.failures.push(format!(
                    "{from}: served list {seq}, not newer than list {} already held",
                    h.list().sequence()
                ));
                continue;
            }
            let newer = |best: &Option<(VerifiedRevocationList, String)>| {
                best.as_ref().is_none_or(|(b, _)| b.list().sequence() < seq)
            };
            if list.list().is_stale(now) {
                out.failures.push(format!(
                    "{from}: served list {seq}, past its next update by {} s",
                    now - next
                ));
                if newer(&stale) {
                    stale = Some((list, from));
                }
            } else if newer(&out.list) {
                out.list = Some((list, from));
            }
        }
        if out.list.is_none() {
            out.list = stale;
        }
        out
    }
}

/// What [`refresh_from_sources`] did, for the log.
#[derive(Debug, Default)]
pub struct Refreshed {
    /// Whether a current list is in force afterwards.
    pub current: bool,
    /// Lines for the log: each source that gave nothing usable ("revocation list …"),
    /// a list that could not be kept, and the list put in force.
    pub notes: Vec<RefreshNote>,
}

/// One line of [`Refreshed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshNote {
    /// A source gave nothing usable (why).
    SourceFailed(String),
    /// The list was put in force but could not be kept in the store (why).
    NotKept(String),
    /// A list was put in force.
    InForce {
        /// Its sequence number.
        sequence: u64,
        /// Where it came from.
        from: String,
        /// Accounts it revokes.
        accounts: usize,
    },
    /// A source sent a list the revocation state refused (why).
    Unusable {
        /// Where it came from.
        from: String,
        /// Why.
        why: String,
    },
}

/// Fetches from every source the device knows and puts the newest list in force in
/// `revocations` and the store; `None` when the device knows no source. Used on
/// start and by a running receiver's refresher alike.
pub async fn refresh_from_sources(
    st: &mut Store,
    revocations: &Revocations,
    ca: CaPublicKey,
) -> Result<Option<Refreshed>> {
    let sources = ListSources::of(st)?;
    if sources.is_empty() {
        return Ok(None);
    }
    let now = now();
    let held = revocations.current();
    let fetched = sources.fetch(ca, held.as_ref(), now).await;
    let mut out = Refreshed {
        current: fetched.is_current(now),
        notes: fetched.failures.into_iter().map(RefreshNote::SourceFailed).collect(),
    };
    if let Some((list, from)) = fetched.list {
        match revocations.update(list.clone()) {
            Ok(_) => {
                if let Err(e) = keep_revocations(st, &list) {
                    out.notes.push(RefreshNote::NotKept(super::one_line(&e)));
                }
                out.notes.push(RefreshNote::InForce {
                    sequence: list.list().sequence(),
                    from,
                    accounts: list.list().accounts().len(),
                });
            }
            Err(e) => out.notes.push(RefreshNote::Unusable {
                from,
                why: e.to_string(),
            }),
        }
    }
    Ok(Some(out))
}

/// The revocation state a device brings up before it talks to peers.
#[derive(Debug)]
pub struct OnStart {
    /// The list in force (shared with the receiver or sender that checks peers).
    pub revocations: Revocations,
    /// Under [`StalePolicy::Warn`]: why the list in force is not current, if it is not.
    pub stale: Option<String>,
}

/// The stored list, refreshed first when it is missing or past its next update (from
/// the URL or CA the device knows; `log` hears what refreshing did). If it is still
/// not current, `policy` decides: warn and go on ([`OnStart::stale`]), or refuse to
/// run (an error).
pub async fn revocations_on_start(
    st: &mut Store,
    ca: &CaPublicKey,
    policy: StalePolicy,
    log: &mut (dyn FnMut(&RefreshNote) + Send),
) -> Result<OnStart> {
    let revocations = Revocations::new().with_stale_policy(policy);
    if let Some(l) = stored_revocations(st, ca)? {
        revocations.update(l)?;
    }
    if revocations.staleness(now()).is_some()
        && let Some(r) = refresh_from_sources(st, &revocations, *ca).await?
    {
        r.notes.iter().for_each(&mut *log);
    }
    let stale = revocations.staleness(now());
    if let (Some(why), StalePolicy::Refuse) = (&stale, policy) {
        return Err(ServiceError::Invalid(format!(
            "the revocation list {why} and could not be refreshed; with --stale-revocations refuse this device \
             talks to no peer until it has a current one (`tacit id refresh --ca ADDR`, `--url URL` or `--file FILE`)"
        )));
    }
    Ok(OnStart { revocations, stale })
}

/// What [`keep_current`] did, for the log.
#[derive(Debug)]
pub enum Refresher {
    /// A line of a refresh.
    Note(RefreshNote),
    /// No source had a current list (the policy in force says what follows).
    NoCurrentList(StalePolicy),
    /// Refreshing failed (the store, say).
    Failed(ServiceError),
}

/// Keeps a running device's revocation list current: fetches the list when the one
/// in force reaches its next update (every hour without a list; ten minutes after a
/// failure or when no source had a current list), asking the URL and the CA the
/// device knows at once and keeping the newest current list of all (as on start,
/// [`refresh_from_sources`]), and keeps it in the store at `store`. The sources are
/// read from the store each time (`tacit id refresh` changes them). Abort the task
/// to stop it.
pub fn keep_current(
    revocations: Revocations,
    ca: CaPublicKey,
    store: std::path::PathBuf,
    log: impl Fn(Refresher) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut wait = 0u64;
        loop {
            let due = match revocations.current() {
                Some(l) => l.list().next_update().saturating_sub(now()),
                None => 3600,
            };
            tokio::time::sleep(std::time::Duration::from_secs(due.max(wait).max(60))).await;
            let refreshed = match Store::open(&store) {
                Ok(mut st) => refresh_from_sources(&mut st, &revocations, ca).await,
                Err(e) => Err(e.into()),
            };
            match refreshed {
                Ok(None) => wait = 3600,
                Ok(Some(r)) => {
                    r.notes.into_iter().for_each(|n| log(Refresher::Note(n)));
                    if r.current {
                        wait = 0;
                    } else {
                        wait = 600;
                        log(Refresher::NoCurrentList(revocations.stale_policy()));
                    }
                }
                Err(e) => {
                    wait = 600;
                    log(Refresher::Failed(e));
                }
            }
        }
    })
}
