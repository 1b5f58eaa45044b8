//! Naming roots' revocation lists kept in a [`tacit_store::Store`] (its
//! `revocation_lists` table, one row per root under [`issuer`]): what
//! `tacit discover id refresh` / `id import-revocations` / `root revoke` store and
//! what a running [`crate::Advertiser`] or [`crate::Authority`] picks up while it
//! serves.

use crate::Error;
use crate::blessing::{
    self, Applied, Blessing, CertificateId, Principal, SignedRevocationList, TrustedRoot, TrustedRoots,
};
use tacit_store::Store;

/// The prefix of every discovery issuer name in the store.
pub const ISSUER_PREFIX: &str = "discovery-root/";

/// The store's issuer name of a naming root's revocation list
/// (`discovery-root/NAME/KEY-HEX`).
pub fn issuer(root: &TrustedRoot) -> String {
    format!(
        "{ISSUER_PREFIX}{}/{}",
        root.name(),
        hex::encode(root.public_key().to_bytes())
    )
}

/// Applies the revocation lists kept in `st` to `roots`: lists of roots `roots` does
/// not trust are simply not in force; every other list that does not verify is
/// returned with its issuer name and why (nothing is applied from it).
pub fn apply_stored_lists(st: &Store, roots: &TrustedRoots) -> Vec<(String, blessing::Error)> {
    let Ok(lists) = st.revocation_lists(ISSUER_PREFIX) else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for (who, l) in lists {
        match SignedRevocationList::from_file_bytes(&l.list).and_then(|l| roots.apply_revocations(&l).map(|_| ())) {
            Ok(()) | Err(blessing::Error::UntrustedRoot { .. }) => {}
            Err(e) => problems.push((who, e)),
        }
    }
    problems
}

/// Applies `list` to `roots` (it must verify under a trusted root and be no older
/// than the one held) and, if it is now in force, keeps it in `st`.
pub fn adopt(st: &mut Store, roots: &TrustedRoots, list: &SignedRevocationList) -> Result<Applied, Error> {
    let applied = roots.apply_revocations(list)?;
    let l = list.unverified();
    st.put_revocation_list(&issuer(l.root()), l.sequence(), l.next_update(), &list.to_file_bytes())?;
    Ok(applied)
}

/// Keeps `list` in `st` under its root's [`issuer`] name, unverified (a service
/// checks it against the roots it trusts when it reads it); `false` when the store
/// already holds a newer list of that root, which it keeps.
pub fn keep(st: &mut Store, list: &SignedRevocationList) -> Result<bool, Error> {
    let l = list.unverified();
    Ok(st.put_revocation_list(&issuer(l.root()), l.sequence(), l.next_update(), &list.to_file_bytes())?)
}

/// The naming root `root` (a blessing `principal` holds) signs its next revocation
/// list: the one kept in `st` (if any) with `id` added, the next sequence number,
/// issued at `now` and due again at `next_update`. Returns the list and whether `id`
/// was revoked already. Nothing is stored: [`adopt`] it.
pub fn next_revocation_list(
    st: &Store,
    principal: &Principal,
    root: &Blessing,
    id: CertificateId,
    now: u64,
    next_update: u64,
) -> Result<(SignedRevocationList, bool), Error> {
    let current = match st.revocation_list(&issuer(&TrustedRoot::of(root)))? {
        Some(s) => Some(SignedRevocationList::from_file_bytes(&s.list)?),
        None => None,
    };
    let (sequence, mut ids): (u64, Vec<CertificateId>) = match &current {
        Some(c) => (
            c.unverified().sequence() + 1,
            c.unverified().revoked().copied().collect(),
        ),
        None => (1, vec![]),
    };
    let already = ids.contains(&id);
    ids.push(id);
    Ok((
        principal.sign_revocations(root, sequence, now, next_update, ids)?,
        already,
    ))
}

/// Opens the store at `path` (for the reloads of a running service).
pub(crate) fn open(path: &std::path::Path) -> Result<Store, Error> {
    Store::open(path).map_err(|source| Error::StoreOpen {
        path: path.to_owned(),
        source,
    })
}
