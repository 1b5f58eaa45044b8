//! appoint (PROS §5): private meeting scheduling. Each party turns its calendar into
//! an ordered set of free slots (best first, by its preferences), and the two run
//! 3PR (by default Sum of Ranks, FNP-implicit, as appoint did) on those sets. Both
//! learn the agreed slot(s) and the number of rounds, nothing else about the other's
//! calendar (see `docs/pros.md`).
//!
//! Before reconciling, A sends the window it schedules in (`from`, `to`, duration,
//! step, slot encoding); B refuses unless it schedules in the same window, because
//! slots only match when both grids are the same. The window is not secret.
//!
//! Slot encodings:
//! * [`SlotEncoding::Default`] — the slot's start and end (Unix seconds) hashed to a
//!   127-bit element: any date, any duration;
//! * [`SlotEncoding::Paper`] — the paper's 32-bit `Z = S ‖ D` (§5.2): `S` the start in
//!   minutes since midnight UTC of the window's first day (16 bits, hence at most 45
//!   days ahead), `D` the duration in whole hours (16 bits).

use crate::element::ElementEncoding;
use crate::paillier::{PrivateKey, RnPool};
use crate::threepr::{Limits, ReconcileParams, Reconciled, Responder, Scheme, Variant};
use crate::{Error, Result};
use chrono::{DateTime, Duration, TimeZone, Utc};
use rand_core::CryptoRngCore;
use std::collections::HashMap;
use std::sync::Arc;
use tacit_calendar::Slot;
use tacit_net::FramedConn;
use tacit_wire::{Reader, Writer};

/// Wire tag of A's scheduling hello (the window).
pub const TAG_WINDOW: u16 = 0x0430;
/// Wire tag of B's agreement to the window.
pub const TAG_WINDOW_OK: u16 = 0x0431;

/// How slots become set elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SlotEncoding {
    /// Start and end hashed (no limit on dates or durations).
    #[default]
    Default,
    /// The paper's 32-bit `S ‖ D`.
    Paper,
}

impl SlotEncoding {
    fn code(self) -> u8 {
        match self {
            SlotEncoding::Default => 0,
            SlotEncoding::Paper => 1,
        }
    }

    fn from_code(c: u8) -> Result<Self> {
        match c {
            0 => Ok(SlotEncoding::Default),
            1 => Ok(SlotEncoding::Paper),
            _ => Err(Error::Wire(tacit_wire::Error::invalid(
                "slot encoding",
                format!("unknown code {c}"),
            ))),
        }
    }

    /// The element encoding 3PR runs with.
    pub fn element_encoding(self) -> ElementEncoding {
        match self {
            SlotEncoding::Default => ElementEncoding::Hash127,
            SlotEncoding::Paper => ElementEncoding::Integer32,
        }
    }
}

/// The public frame of a scheduling run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First possible start.
    pub from: DateTime<Utc>,
    /// Meetings end by then.
    pub to: DateTime<Utc>,
    /// Meeting length.
    pub duration: Duration,
    /// Grid step.
    pub step: Duration,
    /// Slot encoding.
    pub encoding: SlotEncoding,
}

impl Window {
    fn encode(&self, w: &mut Writer) {
        w.put_u64(self.from.timestamp() as u64);
        w.put_u64(self.to.timestamp() as u64);
        w.put_u32(self.duration.num_seconds() as u32);
        w.put_u32(self.step.num_seconds() as u32);
        w.put_u8(self.encoding.code());
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let ts = |v: u64| -> Result<DateTime<Utc>> {
            Utc.timestamp_opt(v as i64, 0)
                .single()
                .ok_or_else(|| Error::Wire(tacit_wire::Error::invalid("window time", "out of range")))
        };
        Ok(Window {
            from: ts(r.u64()?)?,
            to: ts(r.u64()?)?,
            duration: Duration::seconds(r.u32()? as i64),
            step: Duration::seconds(r.u32()? as i64),
            encoding: SlotEncoding::from_code(r.u8()?)?,
        })
    }

    /// `01 0430 || u64 from || u64 to || u32 duration s || u32 step s || u8 encoding`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.put_envelope(TAG_WINDOW);
        self.encode(&mut w);
        w.into_bytes()
    }

    /// Decodes a window message.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        crate::messages::check_refusal(bytes)?;
        let mut r = Reader::new(bytes);
        r.envelope(TAG_WINDOW, "scheduling window")?;
        let w = Self::decode(&mut r)?;
        r.finish()?;
        Ok(w)
    }

    /// The fields in which `other` differs from this window (names only: a refusal
    /// sent to a peer says which fields differ, not our values).
    pub fn differences(&self, other: &Window) -> Vec<&'static str> {
        let mut d = Vec::new();
        if self.from != other.from {
            d.push("from");
        }
        if self.to != other.to {
            d.push("to");
        }
        if self.duration != other.duration {
            d.push("duration");
        }
        if self.step != other.step {
            d.push("step");
        }
        if self.encoding != other.encoding {
            d.push("encoding");
        }
        d
    }

    /// The window in words (for local logs).
    pub fn describe(&self) -> String {
        format!(
            "{} to {} in {}-minute slots every {} minutes ({:?} encoding)",
            self.from.to_rfc3339(),
            self.to.to_rfc3339(),
            self.duration.num_minutes(),
            self.step.num_minutes(),
            self.encoding
        )
    }

    /// The set element of a slot.
    pub fn element(&self, slot: &Slot) -> Result<Vec<u8>> {
        match self.encoding {
            SlotEncoding::Default => {
                let mut v = b"tacit-slot/v1".to_vec();
                v.extend_from_slice(&slot.start.timestamp().to_be_bytes());
                v.extend_from_slice(&slot.end.timestamp().to_be_bytes());
                Ok(v)
            }
            SlotEncoding::Paper => {
                let midnight = Utc.from_utc_datetime(&self.from.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default());
                let s = (slot.start - midnight).num_minutes();
                if !(0..65536).contains(&s) {
                    return Err(Error::Invalid(format!(
                        "the paper's slot encoding reaches 45 days (65535 minutes) from {}; this slot starts {} minutes after",
                        midnight.date_naive(),
                        s
                    )));
                }
                let d = slot.end - slot.start;
                if d.num_minutes() % 60 != 0 || d.num_hours() < 1 || d.num_hours() > 65535 {
                    return Err(Error::Invalid(format!(
                        "the paper's slot encoding holds durations in whole hours; {} minutes is not one",
                        d.num_minutes()
                    )));
                }
                let z = ((s as u32) << 16) | d.num_hours() as u32;
                Ok(z.to_string().into_bytes())
            }
        }
    }
}

/// The largest number of slots a party puts in its ordered set (the worst case costs
/// `n²` comparisons).
pub const MAX_SLOTS: usize = 512;

/// The agreed slot(s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agreed {
    /// The slots of maximal combined preference (empty: no common free slot).
    pub slots: Vec<Slot>,
    /// The reconciliation's details.
    pub reconciled: Reconciled,
}

/// Slot elements in order, and the slot of each element.
type SlotElements = (Vec<Vec<u8>>, HashMap<Vec<u8>, Slot>);

fn elements(window: &Window, slots: &[Slot]) -> Result<SlotElements> {
    if slots.is_empty() {
        return Err(Error::Invalid("no free slot in the window".into()));
    }
    if slots.len() > MAX_SLOTS {
        return Err(Error::SetTooLarge {
            what: "the slot list",
            len: slots.len(),
            max: MAX_SLOTS,
        });
    }
    let mut map = HashMap::new();
    let mut out = Vec::with_capacity(slots.len());
    for s in slots {
        let e = window.element(s)?;
        map.insert(e.clone(), *s);
        out.push(e);
    }
    Ok((out, map))
}

fn params(encoding: SlotEncoding, scheme: Scheme, variant: Variant) -> ReconcileParams {
    ReconcileParams {
        scheme,
        variant,
        encoding: encoding.element_encoding(),
    }
}

/// A's side (key holder): sends the window, then reconciles `slots` (best first).
#[allow(clippy::too_many_arguments)]
pub async fn connect(
    conn: &mut FramedConn,
    window: &Window,
    scheme: Scheme,
    variant: Variant,
    key: PrivateKey,
    slots: &[Slot],
    pool: Arc<RnPool>,
    rng: &mut impl CryptoRngCore,
) -> Result<Agreed> {
    connect_limited(
        conn,
        window,
        scheme,
        variant,
        key,
        slots,
        pool,
        DEFAULT_MAX_PEER_SLOTS,
        rng,
    )
    .await
}

/// The most slots A lets B bring by default ([`connect_limited`]): B gets one guess
/// against each of A's offered slots per slot of the session, `n ≤ max(A's slots, this)`.
pub const DEFAULT_MAX_PEER_SLOTS: u32 = 128;

/// [`connect`], accepting a session length `n` up to `max(A's slots, max_peer_slots)`:
/// a deviating B gets `n` guesses against each of A's offered slots.
#[allow(clippy::too_many_arguments)]
pub async fn connect_limited(
    conn: &mut FramedConn,
    window: &Window,
    scheme: Scheme,
    variant: Variant,
    key: PrivateKey,
    slots: &[Slot],
    pool: Arc<RnPool>,
    max_peer_slots: u32,
    rng: &mut impl CryptoRngCore,
) -> Result<Agreed> {
    let (set, map) = elements(window, slots)?;
    crate::net::send(conn, &window.to_bytes()).await?;
    let ok = crate::net::recv_at_most(conn, WINDOW_OK_LEN).await?;
    crate::messages::check_refusal(&ok)?;
    let mut r = Reader::new(&ok);
    r.envelope(TAG_WINDOW_OK, "window agreement")?;
    r.finish()?;
    let rec = crate::net::reconcile_initiator_limited(
        conn,
        params(window.encoding, scheme, variant),
        key,
        &set,
        pool,
        max_peer_slots,
        rng,
    )
    .await?;
    finish(rec, &map)
}

/// What B accepts from a peer: key sizes and what one session may cost, and B's
/// ring-Pedersen parameters (A proves its key's factors large against them).
#[derive(Debug, Clone)]
pub struct Policy {
    /// Smallest peer key, in bits.
    pub min_key_bits: u32,
    /// Largest peer key, in bits.
    pub max_key_bits: u32,
    /// The peer's list length and the comparisons of one session.
    pub limits: Limits,
    /// B's ring-Pedersen parameters ([`crate::facproof::RingPedersen`]).
    pub ring_pedersen: std::sync::Arc<crate::facproof::RingPedersen>,
    /// **Insecure**: accept peer keys below [`crate::facproof::MIN_PEER_KEY_BITS`]
    /// (down to `min_key_bits`), whose factors Π^fac does not bound
    /// ([`Responder::accept_insecure_small_keys`]); for reproducing the paper only.
    pub insecure_small_keys: bool,
}

/// Bytes of the window message.
pub const WINDOW_LEN: usize = 3 + 8 + 8 + 4 + 4 + 1;
/// Bytes of B's agreement.
pub const WINDOW_OK_LEN: usize = 3;

async fn refuse(conn: &mut FramedConn, why: &str) {
    let msg = tacit_wire::Encode::to_wire(&tacit_wire::ErrorMessage::new(why));
    let _ = crate::net::send(conn, &msg).await;
}

/// B's side: checks A's window equals ours, then reconciles.
pub async fn serve(
    conn: &mut FramedConn,
    window: &Window,
    scheme: Scheme,
    variant: Variant,
    slots: &[Slot],
    policy: &Policy,
    rng: &mut impl CryptoRngCore,
) -> Result<Agreed> {
    let (set, map) = elements(window, slots)?;
    let msg = crate::net::recv_at_most(conn, WINDOW_LEN).await?;
    let theirs = match Window::from_bytes(&msg) {
        Ok(w) => w,
        Err(e) => {
            refuse(conn, &e.to_string()).await;
            return Err(e);
        }
    };
    if theirs != *window {
        // the peer learns which fields differ, not our values; the local error has both
        let fields = window.differences(&theirs).join(", ");
        let refusal = tacit_wire::Mismatch::new(
            "scheduling window",
            format!("another window (it differs in {fields})"),
            theirs.describe(),
        );
        let _ = crate::net::send(conn, &tacit_wire::Encode::to_wire(&refusal)).await;
        return Err(Error::Mismatch(tacit_wire::Mismatch::new(
            "scheduling window",
            window.describe(),
            theirs.describe(),
        )));
    }
    let responder = Responder::new(
        params(window.encoding, scheme, variant),
        &set,
        policy.min_key_bits,
        policy.max_key_bits,
        policy.ring_pedersen.clone(),
    )?
    .with_limits(policy.limits);
    let responder = if policy.insecure_small_keys {
        responder.accept_insecure_small_keys()
    } else {
        responder
    };
    let mut w = Writer::new();
    w.put_envelope(TAG_WINDOW_OK);
    crate::net::send(conn, &w.into_bytes()).await?;
    let rec = crate::net::reconcile_responder(conn, responder, rng).await?;
    finish(rec, &map)
}

fn finish(rec: Reconciled, map: &HashMap<Vec<u8>, Slot>) -> Result<Agreed> {
    let slots = rec
        .elements
        .iter()
        .map(|e| {
            map.get(e)
                .copied()
                .ok_or_else(|| Error::Deviation("an agreed slot that is not ours".into()))
        })
        .collect::<Result<_>>()?;
    Ok(Agreed { slots, reconciled: rec })
}

/// A scheduling server: [`Server::builder`] (B's side of `tacit schedule serve`).
pub type Server = crate::endpoint::Server<Service>;

impl crate::endpoint::Server<Service> {
    /// A scheduling server offering `slots` (best first) in `window`, keeping its
    /// keys in `store` (see [`crate::endpoint::ServerBuilder`] for the channel and
    /// the limits).
    pub fn builder(
        store: tacit_store::Store,
        window: Window,
        scheme: Scheme,
        variant: Variant,
        slots: Vec<Slot>,
    ) -> crate::endpoint::ServerBuilder<Service> {
        crate::endpoint::ServerBuilder::new(
            store,
            Service {
                window,
                scheme,
                variant,
                slots,
                // the defaults of `tacit schedule serve`
                limits: Limits {
                    max_peer_set: DEFAULT_MAX_PEER_SLOTS,
                    max_comparisons: 16_384,
                },
                policy: None,
            },
        )
    }
}

/// B's side of a scheduling server.
#[derive(Debug)]
pub struct Service {
    window: Window,
    scheme: Scheme,
    variant: Variant,
    slots: Vec<Slot>,
    limits: Limits,
    policy: Option<Policy>,
}

impl Service {
    /// The window it schedules in.
    pub fn window(&self) -> &Window {
        &self.window
    }
    /// The slots it offers, best first.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }
}

impl crate::endpoint::ServerBuilder<Service> {
    /// Bounds what one session may cost: the peer's slot count and the comparisons
    /// (default 128 slots, 16 384 comparisons).
    pub fn limits(self, limits: Limits) -> Self {
        self.map_service(|s| s.limits = limits)
    }
}

impl crate::endpoint::Service for Service {
    type Output = Agreed;
    const PROTOCOL: tacit_net::Protocol = tacit_net::Protocol::ProsSchedule;

    fn prepare(&mut self, policy: &crate::endpoint::KeyPolicy) -> crate::endpoint::Result<usize> {
        if self.slots.is_empty() || self.slots.len() > MAX_SLOTS {
            return Err(Error::Invalid(format!("a party offers 1 to {MAX_SLOTS} slots")).into());
        }
        elements(&self.window, &self.slots)?;
        self.policy = Some(Policy {
            min_key_bits: policy.min_key_bits,
            max_key_bits: policy.max_key_bits,
            limits: self.limits,
            ring_pedersen: policy.ring_pedersen.clone(),
            insecure_small_keys: policy.insecure_small_keys,
        });
        Ok(WINDOW_LEN)
    }

    fn session(self: Arc<Self>, mut conn: FramedConn) -> crate::endpoint::SessionFuture<Agreed> {
        Box::pin(async move {
            let policy = self
                .policy
                .clone()
                .ok_or_else(|| Error::Invalid("the service was not prepared".into()))?;
            let mut rng = crate::endpoint::session_rng()?;
            serve(
                &mut conn,
                &self.window,
                self.scheme,
                self.variant,
                &self.slots,
                &policy,
                &mut rng,
            )
            .await
        })
    }
}

/// A scheduling client offering `slots` (best first) in `window` (A's side of
/// `tacit schedule connect`, the key holder), keeping its keys in `store`; run it
/// with [`crate::endpoint::ClientBuilder::run`].
pub fn connect_to(
    store: tacit_store::Store,
    window: Window,
    scheme: Scheme,
    variant: Variant,
    slots: Vec<Slot>,
) -> crate::endpoint::ClientBuilder<Schedule> {
    crate::endpoint::ClientBuilder::new(
        store,
        Schedule {
            window,
            scheme,
            variant,
            slots,
            max_peer_slots: DEFAULT_MAX_PEER_SLOTS,
        },
    )
}

/// A's side of a scheduling session.
#[derive(Debug)]
pub struct Schedule {
    window: Window,
    scheme: Scheme,
    variant: Variant,
    slots: Vec<Slot>,
    max_peer_slots: u32,
}

impl crate::endpoint::ClientBuilder<Schedule> {
    /// The most slots the server may bring (refused above max(ours, this); default
    /// [`DEFAULT_MAX_PEER_SLOTS`]): a hostile server gets n guesses against each of
    /// our offered slots.
    pub fn max_peer_slots(self, n: u32) -> Self {
        self.map_session(|s| s.max_peer_slots = n)
    }
}

impl crate::endpoint::Session for Schedule {
    type Output = Agreed;
    const PROTOCOL: tacit_net::Protocol = tacit_net::Protocol::ProsSchedule;

    fn pool_size(&self) -> usize {
        self.slots.len()
    }

    fn check(&self) -> crate::endpoint::Result<()> {
        if self.max_peer_slots == 0 || self.max_peer_slots > MAX_SLOTS as u32 {
            return Err(crate::endpoint::Error::Config(format!(
                "--max-peer-slots must be from 1 to {MAX_SLOTS}"
            )));
        }
        Ok(())
    }

    fn describe(&self, addr: &str) -> String {
        format!("scheduling with {addr}")
    }

    fn run(
        self,
        mut conn: FramedConn,
        key: PrivateKey,
        pool: Arc<RnPool>,
        mut rng: rand_chacha::ChaCha20Rng,
    ) -> crate::endpoint::SessionFuture<Agreed> {
        Box::pin(async move {
            connect_limited(
                &mut conn,
                &self.window,
                self.scheme,
                self.variant,
                key,
                &self.slots,
                pool,
                self.max_peer_slots,
                &mut rng,
            )
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 1, 6, h, m, 0).unwrap()
    }

    #[test]
    fn encodings() {
        let mut w = Window {
            from: t(0, 0),
            to: t(23, 0),
            duration: Duration::hours(1),
            step: Duration::minutes(30),
            encoding: SlotEncoding::Paper,
        };
        let s = Slot {
            start: t(9, 30),
            end: t(10, 30),
        };
        assert_eq!(w.element(&s).unwrap(), (((570u32) << 16) | 1).to_string().into_bytes());
        let far = Slot {
            start: t(9, 0) + Duration::days(46),
            end: t(10, 0) + Duration::days(46),
        };
        assert!(w.element(&far).is_err());
        assert!(
            w.element(&Slot {
                start: t(9, 0),
                end: t(9, 30)
            })
            .is_err()
        );
        w.encoding = SlotEncoding::Default;
        assert!(w.element(&far).is_ok());
        assert_eq!(Window::from_bytes(&w.to_bytes()).unwrap(), w);
        let mut b = w.to_bytes();
        b.push(1);
        assert!(Window::from_bytes(&b).is_err());
    }
}
