//! Certificates, blessings (SDSI-style certificate chains) and their validation
//! against trusted roots (§3, "Principals authenticate each other by exchanging
//! certificate chains … a principal validates its peer's certificate chain, and
//! extracts the name bound to the certificate chain").

use super::name::{Name, Policy, check_component, check_label};
use super::revocation::{CertificateId, Revocations};
use super::time::Utc;
use super::{
    Error, MAX_CAVEAT_DATA, MAX_CAVEATS, MAX_DEPTH, MAX_NAME_LEN, MAX_TRUSTED_ROOTS, Result, SIGNATURE_DST, tags,
};
use core::fmt;
use sha2::{Digest, Sha256};
use tacit_crypto::sign::{PUBLIC_KEY_LEN, SIGNATURE_LEN, VerifyingKey};
use tacit_wire::{Decode, Encode, Reader, Writer};

/// Domain separator of the message a certificate's signature covers.
const LINK_DST: &[u8] = b"tacit-discovery/blessing/v1/link\0";
/// Domain separator of `h_0`, the chain digest above a root.
const ROOT_DST: &[u8] = b"tacit-discovery/blessing/v1/root\0";
/// Domain separator of the running chain digest `h_i`.
const CHAIN_DST: &[u8] = b"tacit-discovery/blessing/v1/chain\0";

/// The kinds of the caveats this module implements. The high bit of a kind marks a
/// caveat as *critical*: a validator that does not understand a critical caveat must
/// refuse the blessing; a non-critical caveat it does not understand is ignored.
pub mod caveat_kinds {
    /// Set in the kind of every critical caveat.
    pub const CRITICAL: u8 = 0x80;
    /// [`super::Caveat::ExpiresAt`] (critical).
    pub const EXPIRES_AT: u8 = 0x81;
    /// [`super::Caveat::NotBefore`] (critical).
    pub const NOT_BEFORE: u8 = 0x82;
}

/// A restriction on a certificate, checked by every validator (Vanadium's caveats, §6;
/// the paper's protocols are "agnostic to the specific format of certificates", §3).
///
/// On the wire a caveat is `u8 kind || u8 len || data` with `len ≤ 64`; the
/// certificate's signature covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caveat {
    /// The certificate is valid until this Unix time (inclusive), like its
    /// `not_after`; lets a blesser add a tighter expiry without a new field. Data: `u64`
    /// big-endian.
    ExpiresAt(u64),
    /// The certificate is valid from this Unix time on (inclusive). Data: `u64`
    /// big-endian.
    NotBefore(u64),
    /// A caveat this module does not interpret; refused at validation if critical.
    Other(OpaqueCaveat),
}

/// A caveat of a kind this module does not implement: kind byte and up to
/// [`MAX_CAVEAT_DATA`] bytes of data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpaqueCaveat {
    kind: u8,
    data: Vec<u8>,
}

impl OpaqueCaveat {
    /// A caveat of `kind` with `data`; refuses the kinds of built-in caveats (so each
    /// caveat has one representation) and data over [`MAX_CAVEAT_DATA`] bytes.
    pub fn new(kind: u8, data: Vec<u8>) -> Result<Self> {
        if matches!(kind, caveat_kinds::EXPIRES_AT | caveat_kinds::NOT_BEFORE) {
            return Err(Error::ReservedCaveatKind { kind });
        }
        if data.len() > MAX_CAVEAT_DATA {
            return Err(Error::CaveatTooLong { len: data.len() });
        }
        Ok(OpaqueCaveat { kind, data })
    }

    /// The kind byte.
    pub fn kind(&self) -> u8 {
        self.kind
    }

    /// The data.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether validators that do not understand it must refuse the blessing.
    pub fn is_critical(&self) -> bool {
        self.kind & caveat_kinds::CRITICAL != 0
    }
}

impl Caveat {
    /// The kind byte.
    pub fn kind(&self) -> u8 {
        match self {
            Caveat::ExpiresAt(_) => caveat_kinds::EXPIRES_AT,
            Caveat::NotBefore(_) => caveat_kinds::NOT_BEFORE,
            Caveat::Other(o) => o.kind,
        }
    }

    /// Whether validators that do not understand it must refuse the blessing.
    pub fn is_critical(&self) -> bool {
        self.kind() & caveat_kinds::CRITICAL != 0
    }

    fn encode(&self, w: &mut Writer) {
        w.put_u8(self.kind());
        match self {
            Caveat::ExpiresAt(t) | Caveat::NotBefore(t) => {
                w.put_u8(8);
                w.put_u64(*t);
            }
            Caveat::Other(o) => {
                // At most MAX_CAVEAT_DATA = 64 bytes (checked by `OpaqueCaveat::new`).
                w.put_u8(o.data.len() as u8);
                w.put_fixed(&o.data);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Caveat> {
        let kind = r.u8()?;
        let len = r.u8()? as usize;
        if len > MAX_CAVEAT_DATA {
            return Err(tacit_wire::Error::TooLong {
                what: "caveat data",
                len: len as u64,
                max: MAX_CAVEAT_DATA as u64,
            });
        }
        let data = r.fixed("caveat data", len)?;
        let time = || -> tacit_wire::Result<u64> {
            let arr: [u8; 8] = data.try_into().map_err(|_| {
                tacit_wire::Error::invalid(
                    "caveat",
                    format!("kind {kind:#04x} carries an 8-byte time, not {len} bytes"),
                )
            })?;
            Ok(u64::from_be_bytes(arr))
        };
        Ok(match kind {
            caveat_kinds::EXPIRES_AT => Caveat::ExpiresAt(time()?),
            caveat_kinds::NOT_BEFORE => Caveat::NotBefore(time()?),
            _ => Caveat::Other(OpaqueCaveat {
                kind,
                data: data.to_vec(),
            }),
        })
    }
}

/// One link of a [`Blessing`]: it binds `public_key` to the name of the chain above it
/// extended by `extension`, until `not_after`, under `caveats`; `signature` is by the
/// previous link's key (by `public_key` itself for a root).
///
/// A `Certificate` value is well-formed (the extension is a valid name component, at
/// most [`MAX_CAVEATS`] caveats, the key a valid Ed25519 key that is not of small
/// order) but not necessarily correctly signed: that is checked by
/// [`Blessing::validate`] only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    extension: String,
    public_key: VerifyingKey,
    not_after: u64,
    caveats: Vec<Caveat>,
    signature: [u8; SIGNATURE_LEN],
}

impl Certificate {
    /// A certificate from its fields (for chains assembled from parts, and tests);
    /// checks the form only, not the signature.
    pub fn from_parts(
        extension: &str,
        public_key: VerifyingKey,
        not_after: u64,
        caveats: Vec<Caveat>,
        signature: [u8; SIGNATURE_LEN],
    ) -> Result<Self> {
        check_label("extension", extension)?;
        if caveats.len() > MAX_CAVEATS {
            return Err(Error::TooManyCaveats { count: caveats.len() });
        }
        Ok(Certificate {
            extension: extension.to_owned(),
            public_key,
            not_after,
            caveats,
            signature,
        })
    }

    /// Signs a new link below the chain whose digest is `parent` (`h_{i−1}`).
    pub(super) fn sign(
        signer: &tacit_crypto::sign::SigningKey,
        parent: &[u8; 32],
        extension: &str,
        public_key: VerifyingKey,
        not_after: u64,
        caveats: Vec<Caveat>,
    ) -> Result<Self> {
        let mut cert = Certificate::from_parts(extension, public_key, not_after, caveats, [0; SIGNATURE_LEN])?;
        cert.signature = signer.sign(&cert.signed_message(parent));
        Ok(cert)
    }

    /// The name component this link adds.
    pub fn extension(&self) -> &str {
        &self.extension
    }

    /// The key the link binds the name to.
    pub fn public_key(&self) -> VerifyingKey {
        self.public_key
    }

    /// End of validity (Unix seconds, inclusive).
    pub fn not_after(&self) -> u64 {
        self.not_after
    }

    /// The caveats.
    pub fn caveats(&self) -> &[Caveat] {
        &self.caveats
    }

    /// The signature by the previous link's key.
    pub fn signature(&self) -> &[u8; SIGNATURE_LEN] {
        &self.signature
    }

    /// End of validity taking [`Caveat::ExpiresAt`] into account.
    pub fn expires_at(&self) -> u64 {
        self.caveats.iter().fold(self.not_after, |t, c| match c {
            Caveat::ExpiresAt(e) => t.min(*e),
            _ => t,
        })
    }

    /// The encoding without the signature.
    fn encode_body(&self, w: &mut Writer) {
        // Extension ≤ 64 bytes and ≤ 4 caveats: the lengths fit in a byte.
        w.put_u8(self.extension.len() as u8);
        w.put_fixed(self.extension.as_bytes());
        w.put_fixed(&self.public_key.to_bytes());
        w.put_u64(self.not_after);
        w.put_u8(self.caveats.len() as u8);
        for c in &self.caveats {
            c.encode(w);
        }
    }

    /// `LINK_DST || h_{i−1} || body`: what the previous link's key signs.
    fn signed_message(&self, parent: &[u8; 32]) -> Vec<u8> {
        let mut w = Writer::with_capacity(LINK_DST.len() + 32 + self.encoded_len());
        w.put_fixed(LINK_DST);
        w.put_fixed(parent);
        self.encode_body(&mut w);
        w.into_bytes()
    }

    /// The identifier of this link below the link whose identifier is `parent`
    /// (`id_i`, see [`super::revocation`]): its content without the signature.
    fn id(&self, parent: &CertificateId) -> CertificateId {
        let mut w = Writer::with_capacity(self.encoded_len());
        self.encode_body(&mut w);
        CertificateId::of_link(parent, &w.into_bytes())
    }

    /// `h_i = SHA-256(CHAIN_DST || h_{i−1} || Certificate_i)`.
    fn chain_digest(&self, parent: &[u8; 32]) -> [u8; 32] {
        Sha256::new()
            .chain_update(CHAIN_DST)
            .chain_update(parent)
            .chain_update(self.to_wire())
            .finalize()
            .into()
    }

    /// Length of the encoding.
    pub fn encoded_len(&self) -> usize {
        let caveats: usize = self
            .caveats
            .iter()
            .map(|c| {
                2 + match c {
                    Caveat::ExpiresAt(_) | Caveat::NotBefore(_) => 8,
                    Caveat::Other(o) => o.data.len(),
                }
            })
            .sum();
        1 + self.extension.len() + PUBLIC_KEY_LEN + 8 + 1 + caveats + SIGNATURE_LEN
    }

    /// Decodes link `index` (from 1) of a chain.
    fn decode_link(r: &mut Reader<'_>, index: usize) -> tacit_wire::Result<Certificate> {
        let len = r.u8()? as usize;
        let ext = r.fixed("blessing extension", len)?;
        let ext = core::str::from_utf8(ext).map_err(|_| {
            tacit_wire::Error::invalid("blessing", format!("name component {index} is not valid UTF-8"))
        })?;
        check_component(ext).map_err(|problem| {
            tacit_wire::Error::invalid("blessing", Error::InvalidComponent { index, problem }.to_string())
        })?;
        let public_key = VerifyingKey::from_bytes(r.fixed("blessing public key", PUBLIC_KEY_LEN)?)
            .map_err(|e| tacit_wire::Error::invalid("blessing public key", format!("link {index}: {e}")))?;
        let not_after = r.u64()?;
        let count = r.u8()? as usize;
        if count > MAX_CAVEATS {
            return Err(tacit_wire::Error::TooMany {
                what: "caveats of a certificate",
                count: count as u64,
                max: MAX_CAVEATS as u64,
            });
        }
        let mut caveats = Vec::with_capacity(count);
        for _ in 0..count {
            caveats.push(Caveat::decode(r)?);
        }
        let signature = r.array("blessing signature")?;
        Ok(Certificate {
            extension: ext.to_owned(),
            public_key,
            not_after,
            caveats,
            signature,
        })
    }
}

/// Embedded encoding of one link (see the module documentation).
impl Encode for Certificate {
    fn encode(&self, w: &mut Writer) {
        self.encode_body(w);
        w.put_fixed(&self.signature);
    }
}

/// `h_0`, the digest above a root.
fn root_digest() -> [u8; 32] {
    Sha256::digest(ROOT_DST).into()
}

/// A blessing: a certificate chain binding a [`Name`] to a public key (§3; the term is
/// Vanadium's, §6).
///
/// The first certificate is a self-signed root whose extension is the root name (e.g.
/// `HomeSecurityCorp`); each following certificate is signed by the previous
/// certificate's key and extends the name by one component. The name of the blessing
/// is the extensions joined by `/`, its key the last certificate's key.
///
/// A `Blessing` value is well-formed (1..=[`MAX_DEPTH`] certificates, name at most
/// [`MAX_NAME_LEN`] bytes) but **not trusted**: only [`Blessing::validate`] checks
/// signatures, expiry and the root, and only the [`ValidatedBlessing`] it returns
/// yields a name to base authorization on.
#[derive(Clone, PartialEq, Eq)]
pub struct Blessing {
    links: Vec<Certificate>,
}

impl Blessing {
    /// A chain from its links (root first); checks the form only.
    pub fn from_links(links: Vec<Certificate>) -> Result<Self> {
        if links.is_empty() {
            return Err(Error::EmptyChain);
        }
        if links.len() > MAX_DEPTH {
            return Err(Error::ChainTooDeep { depth: links.len() });
        }
        let len = name_len(&links);
        if len > MAX_NAME_LEN {
            return Err(Error::NameTooLong { len });
        }
        Ok(Blessing { links })
    }

    /// A self-signed root `name` bound to the signer's key (§3: roots are the
    /// certificate authorities a peer trusts).
    pub(super) fn new_root(signer: &tacit_crypto::sign::SigningKey, name: &str, not_after: u64) -> Result<Self> {
        check_label("root name", name)?;
        let root = Certificate::sign(signer, &root_digest(), name, signer.verifying_key(), not_after, vec![])?;
        Ok(Blessing { links: vec![root] })
    }

    /// The chain extended by a link signed by `signer` (the caller checks that it holds
    /// the last link's key and clamps `not_after`).
    pub(super) fn extend(
        &self,
        signer: &tacit_crypto::sign::SigningKey,
        extension: &str,
        child: VerifyingKey,
        not_after: u64,
        caveats: Vec<Caveat>,
    ) -> Result<Self> {
        let depth = self.links.len() + 1;
        if depth > MAX_DEPTH {
            return Err(Error::ChainTooDeep { depth });
        }
        check_label("extension", extension)?;
        let len = name_len(&self.links) + 1 + extension.len();
        if len > MAX_NAME_LEN {
            return Err(Error::NameTooLong { len });
        }
        let link = Certificate::sign(signer, &self.digest(), extension, child, not_after, caveats)?;
        let mut links = self.links.clone();
        links.push(link);
        Ok(Blessing { links })
    }

    /// `h_n`, the digest of the whole chain (what a child link is bound to).
    fn digest(&self) -> [u8; 32] {
        self.links.iter().fold(root_digest(), |h, l| l.chain_digest(&h))
    }

    /// The identifiers of the links, root first (see [`super::revocation`]): revoking
    /// the `i`-th revokes this chain and every chain that extends its first `i`
    /// links.
    pub fn link_ids(&self) -> Vec<CertificateId> {
        let mut parent = CertificateId::ABOVE_ROOT;
        self.links
            .iter()
            .map(|l| {
                parent = l.id(&parent);
                parent
            })
            .collect()
    }

    /// The identifier of the last link: what a root revokes to revoke this
    /// blessing (and every blessing made from it).
    pub fn id(&self) -> CertificateId {
        self.link_ids().last().copied().unwrap_or(CertificateId::ABOVE_ROOT)
    }

    /// The certificates, root first.
    pub fn links(&self) -> &[Certificate] {
        &self.links
    }

    /// The certificates, root first.
    pub fn into_links(self) -> Vec<Certificate> {
        self.links
    }

    /// Number of certificates (= components of the name).
    pub fn depth(&self) -> usize {
        self.links.len()
    }

    /// The key the chain binds its name to (the last certificate's key). Before
    /// [`Blessing::validate`], a claim.
    pub fn public_key(&self) -> VerifyingKey {
        self.last().public_key
    }

    /// The root certificate's extension (the root name).
    pub fn root_name(&self) -> &str {
        &self.root().extension
    }

    /// The root certificate's key.
    pub fn root_key(&self) -> VerifyingKey {
        self.root().public_key
    }

    /// The name the chain claims, **unauthenticated**: for display and for choosing
    /// among one's own blessings. Authorization uses [`ValidatedBlessing::name`].
    pub fn unverified_name(&self) -> Name {
        let s = self
            .links
            .iter()
            .map(|l| l.extension.as_str())
            .collect::<Vec<_>>()
            .join("/");
        Name::from_checked(s)
    }

    /// End of validity of the chain: the earliest expiry of any link.
    pub fn expires_at(&self) -> u64 {
        self.links.iter().map(Certificate::expires_at).min().unwrap_or(0)
    }

    fn root(&self) -> &Certificate {
        // Constructors and the decoder refuse empty chains.
        &self.links[0]
    }

    fn last(&self) -> &Certificate {
        &self.links[self.links.len() - 1]
    }

    /// Validates the chain at Unix time `now` against `trusted_roots` and extracts the
    /// name (§3; done on `ID_S` and `ID_C` in steps 3 and 4 of §4 and steps 1 and 3 of
    /// §5).
    ///
    /// Checks, in this order, reporting the first failure:
    /// 1. the chain has 1..=[`MAX_DEPTH`] links and its name is a valid [`Name`];
    /// 2. the root (its name *and* key) is in `trusted_roots`;
    /// 3. for each link `i = 1..n`: its signature verifies (strict Ed25519) under the
    ///    key of link `i − 1` (its own key for the root) over
    ///    `LINK_DST || h_{i−1} || body_i`; `now ≤ not_after`; and its caveats hold
    ///    (`now ≤ t` for [`Caveat::ExpiresAt`], `now ≥ t` for [`Caveat::NotBefore`],
    ///    no critical caveat of unknown kind);
    /// 4. no link is on the revocation list in force for the root
    ///    ([`TrustedRoots::apply_revocations`]).
    ///
    /// Expiry is inclusive: a link with `not_after = now` is still valid.
    pub fn validate(&self, trusted_roots: &TrustedRoots, now: u64) -> Result<ValidatedBlessing> {
        if self.links.is_empty() {
            return Err(Error::EmptyChain);
        }
        if self.links.len() > MAX_DEPTH {
            return Err(Error::ChainTooDeep {
                depth: self.links.len(),
            });
        }
        let name = Name::from_components(self.links.iter().map(|l| l.extension.as_str()))?;
        let root = self.root();
        trusted_roots.check(&root.extension, &root.public_key)?;

        let mut parent = root_digest();
        let mut signer = root.public_key;
        for (i, link) in self.links.iter().enumerate() {
            let index = i + 1;
            let extension = || link.extension.clone();
            signer
                .verify(&link.signed_message(&parent), &link.signature)
                .map_err(|_| Error::BadSignature {
                    link: index,
                    extension: extension(),
                })?;
            if now > link.not_after {
                return Err(Error::Expired {
                    link: index,
                    extension: extension(),
                    not_after: link.not_after,
                    now,
                });
            }
            for c in &link.caveats {
                match c {
                    Caveat::ExpiresAt(t) if now > *t => {
                        return Err(Error::Expired {
                            link: index,
                            extension: extension(),
                            not_after: *t,
                            now,
                        });
                    }
                    Caveat::NotBefore(t) if now < *t => {
                        return Err(Error::NotYetValid {
                            link: index,
                            extension: extension(),
                            not_before: *t,
                            now,
                        });
                    }
                    Caveat::Other(o) if o.is_critical() => {
                        return Err(Error::UnknownCriticalCaveat {
                            link: index,
                            extension: extension(),
                            kind: o.kind,
                        });
                    }
                    _ => {}
                }
            }
            parent = link.chain_digest(&parent);
            signer = link.public_key;
        }
        let ids = self.link_ids();
        let trusted = TrustedRoot {
            name: root.extension.clone(),
            public_key: root.public_key,
        };
        if let Some(i) = trusted_roots.revocations.first_revoked(&trusted, &ids) {
            return Err(Error::Revoked {
                link: i + 1,
                extension: self.links[i].extension.clone(),
                id: ids[i].to_string(),
            });
        }
        Ok(ValidatedBlessing {
            name,
            public_key: signer,
            expires_at: self.expires_at(),
            blessing: self.clone(),
        })
    }

    /// Length of the embedded encoding.
    pub fn encoded_len(&self) -> usize {
        1 + self.links.iter().map(Certificate::encoded_len).sum::<usize>()
    }

    /// The file form: envelope [`tags::BLESSING`], then the embedded encoding.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(3 + self.encoded_len());
        w.put_envelope(tags::BLESSING);
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes the file form (exact length).
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::BLESSING, "blessing")?;
        let b = Blessing::decode(&mut r)?;
        r.finish()?;
        Ok(b)
    }
}

/// Sum of the extension lengths plus the separators.
fn name_len(links: &[Certificate]) -> usize {
    links.iter().map(|l| l.extension.len()).sum::<usize>() + links.len().saturating_sub(1)
}

impl fmt::Debug for Blessing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blessing")
            .field("unverified_name", &self.unverified_name().as_str())
            .field("public_key", &self.public_key())
            .field("expires_at", &Utc(self.expires_at()))
            .finish()
    }
}

/// Embedded encoding: `u8 n (1..=8) || n × Certificate`, no envelope.
impl Encode for Blessing {
    fn encode(&self, w: &mut Writer) {
        // At most MAX_DEPTH = 8 links.
        w.put_u8(self.links.len() as u8);
        for l in &self.links {
            l.encode(w);
        }
    }
}

/// Strict decoder: bounded link and caveat counts, valid name components, the name
/// within [`MAX_NAME_LEN`], keys valid and not of small order. Signatures are checked by
/// [`Blessing::validate`], not here.
impl Decode for Blessing {
    fn decode(r: &mut Reader<'_>) -> tacit_wire::Result<Blessing> {
        let n = r.u8()? as usize;
        if n == 0 {
            return Err(tacit_wire::Error::invalid("blessing", Error::EmptyChain.to_string()));
        }
        if n > MAX_DEPTH {
            return Err(tacit_wire::Error::TooMany {
                what: "certificates of a blessing",
                count: n as u64,
                max: MAX_DEPTH as u64,
            });
        }
        let mut links = Vec::with_capacity(n);
        for i in 0..n {
            links.push(Certificate::decode_link(r, i + 1)?);
            let len = name_len(&links);
            if len > MAX_NAME_LEN {
                return Err(tacit_wire::Error::TooLong {
                    what: "blessing name",
                    len: len as u64,
                    max: MAX_NAME_LEN as u64,
                });
            }
        }
        Ok(Blessing { links })
    }
}

/// A blessing that has been validated: the only source of an authenticated [`Name`]
/// (§3: "authorization decisions are based on this extracted name").
///
/// It can only be obtained from [`Blessing::validate`]; holding one means the chain was
/// valid, under the trusted roots given, at the time given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedBlessing {
    name: Name,
    public_key: VerifyingKey,
    expires_at: u64,
    blessing: Blessing,
}

impl ValidatedBlessing {
    /// The authenticated name.
    pub fn name(&self) -> &Name {
        &self.name
    }

    /// The key the name is bound to ("the public key identified by `ID_P`", §4).
    pub fn public_key(&self) -> VerifyingKey {
        self.public_key
    }

    /// End of validity (Unix seconds, inclusive): the earliest expiry in the chain.
    pub fn expires_at(&self) -> u64 {
        self.expires_at
    }

    /// The chain that was validated.
    pub fn blessing(&self) -> &Blessing {
        &self.blessing
    }

    /// Whether the authenticated name satisfies `policy` (the authorization checks of
    /// §4 steps 3–4 and §5 steps 1 and 3).
    pub fn satisfies(&self, policy: &Policy) -> bool {
        policy.matches(&self.name)
    }

    /// Verifies a signature made by [`super::Principal::sign`] with the blessed key
    /// (`SIG_P(m)` in §4 and §5).
    pub fn verify(&self, msg: &[u8], signature: &[u8]) -> Result<()> {
        verify_principal_signature(&self.public_key, msg, signature)
    }
}

/// Checks a [`super::Principal::sign`] signature: strict Ed25519 over
/// `SIGNATURE_DST || msg`.
pub(super) fn verify_principal_signature(key: &VerifyingKey, msg: &[u8], signature: &[u8]) -> Result<()> {
    let mut m = Vec::with_capacity(SIGNATURE_DST.len() + msg.len());
    m.extend_from_slice(SIGNATURE_DST);
    m.extend_from_slice(msg);
    Ok(key.verify(&m, signature)?)
}

/// A root a peer trusts: a root name and the key it must be bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedRoot {
    name: String,
    public_key: VerifyingKey,
}

impl TrustedRoot {
    /// The root `name` (a single name component) with `public_key`.
    pub fn new(name: &str, public_key: VerifyingKey) -> Result<Self> {
        check_label("root name", name)?;
        Ok(TrustedRoot {
            name: name.to_owned(),
            public_key,
        })
    }

    /// The root of `blessing`, as it claims (to trust it, e.g. after checking its key
    /// out of band).
    pub fn of(blessing: &Blessing) -> Self {
        TrustedRoot {
            name: blessing.root_name().to_owned(),
            public_key: blessing.root_key(),
        }
    }

    /// The root name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The root key.
    pub fn public_key(&self) -> VerifyingKey {
        self.public_key
    }
}

/// The roots a principal trusts to certify names (§3: the certificate authorities of
/// the distributed PKI). A name may be listed with several keys (key rollover).
///
/// It also holds the revocation list in force for each root
/// ([`TrustedRoots::apply_revocations`]), which [`Blessing::validate`] checks. Clones
/// **share** the revocation lists (a list applied through one clone is in force for
/// all), so a running service that keeps a clone learns of a revocation at once.
/// Equality compares the roots only.
#[derive(Debug, Clone, Default)]
pub struct TrustedRoots {
    roots: Vec<TrustedRoot>,
    revocations: Revocations,
}

impl PartialEq for TrustedRoots {
    fn eq(&self, other: &Self) -> bool {
        self.roots == other.roots
    }
}

impl Eq for TrustedRoots {}

impl TrustedRoots {
    /// An empty list (trusts nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts `name` with `public_key`; `Ok(false)` if it was already trusted.
    pub fn add(&mut self, name: &str, public_key: VerifyingKey) -> Result<bool> {
        self.insert(TrustedRoot::new(name, public_key)?)
    }

    /// Trusts `root`; `Ok(false)` if it was already trusted.
    pub fn insert(&mut self, root: TrustedRoot) -> Result<bool> {
        if self.roots.contains(&root) {
            return Ok(false);
        }
        if self.roots.len() >= MAX_TRUSTED_ROOTS {
            return Err(Error::TooManyTrustedRoots);
        }
        self.roots.push(root);
        Ok(true)
    }

    /// Stops trusting `name` with `public_key`; whether it was trusted.
    pub fn remove(&mut self, name: &str, public_key: &VerifyingKey) -> bool {
        let before = self.roots.len();
        self.roots.retain(|r| !(r.name == name && r.public_key == *public_key));
        before != self.roots.len()
    }

    /// Whether `name` is trusted with `public_key`.
    pub fn is_trusted(&self, name: &str, public_key: &VerifyingKey) -> bool {
        self.check(name, public_key).is_ok()
    }

    pub(super) fn revocation_state(&self) -> &Revocations {
        &self.revocations
    }

    pub(super) fn check(&self, name: &str, public_key: &VerifyingKey) -> Result<()> {
        let mut name_known = false;
        for r in self.roots.iter().filter(|r| r.name == name) {
            if r.public_key == *public_key {
                return Ok(());
            }
            name_known = true;
        }
        let root = name.to_owned();
        Err(if name_known {
            Error::RootKeyMismatch { root }
        } else {
            Error::UntrustedRoot { root }
        })
    }

    /// The trusted roots, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &TrustedRoot> + '_ {
        self.roots.iter()
    }

    /// Number of trusted roots.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether nothing is trusted.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The file form:
    /// `envelope(0x0312) || u32 count (≤ 1024) || count × (u8 len || name || key (32))`.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(tags::TRUSTED_ROOTS);
        w.put_count(self.roots.len());
        for r in &self.roots {
            // A root name is one component of at most 64 bytes.
            w.put_u8(r.name.len() as u8);
            w.put_fixed(r.name.as_bytes());
            w.put_fixed(&r.public_key.to_bytes());
        }
        w.into_bytes()
    }

    /// Decodes the file form (exact length; duplicates, invalid names and invalid or
    /// small-order keys refused).
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Self> {
        let mut r = Reader::new(bytes);
        r.envelope(tags::TRUSTED_ROOTS, "trusted roots")?;
        let count = r.count("trusted roots", MAX_TRUSTED_ROOTS, 1 + 1 + PUBLIC_KEY_LEN)?;
        let mut roots = TrustedRoots {
            roots: Vec::with_capacity(count),
            revocations: Revocations::default(),
        };
        for i in 0..count {
            let len = r.u8()? as usize;
            let name = r.fixed("root name", len)?;
            let name =
                core::str::from_utf8(name).map_err(|_| tacit_wire::Error::invalid("root name", "not valid UTF-8"))?;
            let key = VerifyingKey::from_bytes(r.fixed("root key", PUBLIC_KEY_LEN)?)
                .map_err(|e| tacit_wire::Error::invalid("trusted roots", format!("root {} key: {e}", i + 1)))?;
            let root = TrustedRoot::new(name, key).map_err(|e| invalid_root(i, e))?;
            if !roots.insert(root)? {
                return Err(
                    tacit_wire::Error::invalid("trusted roots", format!("root {} appears twice", i + 1)).into(),
                );
            }
        }
        r.finish()?;
        Ok(roots)
    }
}

fn invalid_root(i: usize, e: Error) -> Error {
    match e {
        Error::InvalidLabel { problem, .. } => {
            tacit_wire::Error::invalid("trusted roots", format!("root {} name {problem}", i + 1)).into()
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tacit_crypto::rng::SecureRng;
    use tacit_crypto::sign::SigningKey;

    const NOW: u64 = 1_767_225_600;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_seed(&[seed; 32])
    }

    fn chain() -> (Blessing, TrustedRoots) {
        let (corp, tech, bob) = (key(1), key(2), key(3));
        let root = Blessing::new_root(&corp, "HomeSecurityCorp", NOW + 1000).unwrap();
        let b = root
            .extend(&corp, "Technician", tech.verifying_key(), NOW + 1000, vec![])
            .unwrap()
            .extend(&tech, "Bob", bob.verifying_key(), NOW + 1000, vec![])
            .unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("HomeSecurityCorp", corp.verifying_key()).unwrap();
        (b, roots)
    }

    #[test]
    fn three_link_chain_is_compact() {
        let (b, _) = chain();
        let bytes = b.to_wire();
        println!(
            "three-link blessing HomeSecurityCorp/Technician/Bob: {} bytes",
            bytes.len()
        );
        assert_eq!(bytes.len(), b.encoded_len());
        // 1 + (1+16+32+8+1+64) + (1+10+32+8+1+64) + (1+3+32+8+1+64)
        assert_eq!(bytes.len(), 348);
        assert!(bytes.len() <= 360);
        for l in b.links() {
            assert!((106..=170).contains(&l.encoded_len()));
        }
    }

    #[test]
    fn validates_and_extracts_name() {
        let (b, roots) = chain();
        let v = b.validate(&roots, NOW).unwrap();
        assert_eq!(v.name().as_str(), "HomeSecurityCorp/Technician/Bob");
        assert_eq!(v.public_key(), key(3).verifying_key());
        assert_eq!(v.expires_at(), NOW + 1000);
        assert_eq!(v.blessing(), &b);
        assert_eq!(Blessing::from_wire(&b.to_wire()).unwrap(), b);
        assert_eq!(Blessing::from_file_bytes(&b.to_file_bytes()).unwrap(), b);
    }

    #[test]
    fn caveats_are_enforced() {
        let (corp, tech) = (key(1), key(2));
        let root = Blessing::new_root(&corp, "R", NOW + 1000).unwrap();
        let mut roots = TrustedRoots::new();
        roots.add("R", corp.verifying_key()).unwrap();
        let with = |c: Caveat| {
            root.extend(&corp, "T", tech.verifying_key(), NOW + 1000, vec![c])
                .unwrap()
        };

        let b = with(Caveat::ExpiresAt(NOW + 10));
        assert_eq!(b.expires_at(), NOW + 10);
        assert!(b.validate(&roots, NOW + 10).is_ok());
        assert!(matches!(
            b.validate(&roots, NOW + 11),
            Err(Error::Expired { link: 2, not_after, .. }) if not_after == NOW + 10
        ));

        let b = with(Caveat::NotBefore(NOW + 5));
        assert!(matches!(
            b.validate(&roots, NOW + 4),
            Err(Error::NotYetValid { link: 2, .. })
        ));
        assert!(b.validate(&roots, NOW + 5).is_ok());

        let b = with(Caveat::Other(OpaqueCaveat::new(0x05, b"ignored".to_vec()).unwrap()));
        assert!(b.validate(&roots, NOW).is_ok());
        let b = with(Caveat::Other(OpaqueCaveat::new(0x85, vec![]).unwrap()));
        let e = b.validate(&roots, NOW).unwrap_err();
        assert_eq!(
            e.to_string(),
            "link 2 (T) carries a critical caveat of kind 0x85 that this build does not understand"
        );
        for c in [
            Caveat::ExpiresAt(7),
            Caveat::NotBefore(8),
            Caveat::Other(OpaqueCaveat::new(0x85, vec![1; 64]).unwrap()),
        ] {
            let b = with(c);
            assert_eq!(Blessing::from_wire(&b.to_wire()).unwrap(), b);
        }
        assert!(OpaqueCaveat::new(caveat_kinds::EXPIRES_AT, vec![0; 8]).is_err());
        assert!(OpaqueCaveat::new(1, vec![0; 65]).is_err());
    }

    #[test]
    fn malformed_caveats_are_refused() {
        // An ExpiresAt caveat with 7 bytes of data.
        let (corp, tech) = (key(1), key(2));
        let root = Blessing::new_root(&corp, "R", NOW).unwrap();
        let b = root
            .extend(&corp, "T", tech.verifying_key(), NOW, vec![Caveat::ExpiresAt(1)])
            .unwrap();
        let mut bytes = b.to_wire();
        let at = b.links()[0].encoded_len() + 1 + 1 + 1 + 32 + 8 + 1; // kind byte of the caveat
        assert_eq!(bytes[at], caveat_kinds::EXPIRES_AT);
        bytes[at + 1] = 7;
        assert!(Blessing::from_wire(&bytes).is_err());
    }

    #[test]
    fn expiry_message_prints_dates() {
        let (b, roots) = chain();
        let e = b.validate(&roots, NOW + 1001).unwrap_err();
        assert_eq!(
            e.to_string(),
            "link 1 (HomeSecurityCorp) expired at 2026-01-01T00:16:40Z (now 2026-01-01T00:16:41Z)"
        );
    }

    #[test]
    fn trusted_roots_file() {
        let mut roots = TrustedRoots::new();
        assert!(roots.add("A", key(1).verifying_key()).unwrap());
        assert!(!roots.add("A", key(1).verifying_key()).unwrap());
        assert!(roots.add("A", key(2).verifying_key()).unwrap());
        assert!(roots.add("Zoë", key(3).verifying_key()).unwrap());
        assert!(roots.add("a b", key(3).verifying_key()).is_err());
        let bytes = roots.to_file_bytes();
        assert_eq!(TrustedRoots::from_file_bytes(&bytes).unwrap(), roots);
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(TrustedRoots::from_file_bytes(&longer).is_err());
        assert!(TrustedRoots::from_file_bytes(&bytes[..bytes.len() - 1]).is_err());
        assert!(roots.remove("A", &key(2).verifying_key()));
        assert!(!roots.is_trusted("A", &key(2).verifying_key()));
        assert!(roots.is_trusted("A", &key(1).verifying_key()));

        // Duplicate entries are refused.
        let mut one = TrustedRoots::new();
        one.add("A", key(1).verifying_key()).unwrap();
        let entry = &one.to_file_bytes()[7..];
        let mut w = Writer::new();
        w.put_envelope(tags::TRUSTED_ROOTS);
        w.put_count(2);
        w.put_fixed(entry);
        w.put_fixed(entry);
        let e = TrustedRoots::from_file_bytes(&w.into_bytes()).unwrap_err();
        assert!(e.to_string().contains("root 2 appears twice"), "{e}");

        // A small-order key is refused.
        let mut bytes = one.to_file_bytes();
        let n = bytes.len();
        bytes[n - 32..].copy_from_slice(&{
            let mut id = [0u8; 32];
            id[0] = 1;
            id
        });
        assert!(TrustedRoots::from_file_bytes(&bytes).is_err());
        // A huge count is refused before allocating.
        let mut w = Writer::new();
        w.put_envelope(tags::TRUSTED_ROOTS);
        w.put_u32(u32::MAX);
        assert!(TrustedRoots::from_file_bytes(&w.into_bytes()).is_err());
        // An invalid name says which root.
        let mut w = Writer::new();
        w.put_envelope(tags::TRUSTED_ROOTS);
        w.put_count(1);
        w.put_u8(0);
        w.put_fixed(&key(1).verifying_key().to_bytes());
        w.put_u8(0); // the minimum entry is 34 bytes: pad so the count check passes
        let e = TrustedRoots::from_file_bytes(&w.into_bytes()).unwrap_err();
        assert!(e.to_string().contains("root 1 name is empty"), "{e}");
    }

    #[test]
    fn random_keys_work_too() {
        let mut rng = SecureRng::from_seed([9; 32]);
        let k = SigningKey::generate(&mut rng);
        let b = Blessing::new_root(&k, "X", u64::MAX).unwrap();
        let mut roots = TrustedRoots::new();
        roots.insert(TrustedRoot::of(&b)).unwrap();
        assert!(b.validate(&roots, u64::MAX).is_ok());
    }
}
