//! `tacit drop …`: PrivateDrop between two processes, and the attack on legacy captures.

use crate::drop::ca::{DropParamArgs, print_refresh_note, revocations_on_start};
use crate::util::progress::{Progress, Unit};
use crate::util::{MdnsArg, sanitize, store_path};
use anyhow::{Result, bail};
use clap::{Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tacit_crypto::{GroupId, P256, PrimeGroup, Ristretto255};
use tacit_drop::DropParams;
use tacit_drop::attack::{PhoneRange, brute_force, read_capture};
use tacit_drop::protocol::{Discoverability, Peer, ReceiverOutcome};
use tacit_drop::revocation::StalePolicy;
use tacit_drop::service::device::{self, Refresher};
use tacit_drop::service::receiver::{Advertised, Receiver, ReceiverBuilder};
use tacit_drop::service::sender::{self, Choice, Sender};
use tacit_drop::transport::{Event, Limits};
use tacit_store::Store;

/// Who may authenticate to a receiver.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    /// Only senders that prove to be in our address book (default).
    ContactsOnly,
    /// Anyone; non-contacts are shown by device name only.
    Everyone,
    /// Nobody.
    Off,
}

/// What to do while the revocation list is past its next update and cannot be
/// refreshed.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StaleArg {
    /// Go on with the list held, with a warning (default: devices work offline).
    Warn,
    /// Talk to no peer until a current list is in force.
    Refuse,
}

impl StaleArg {
    fn policy(self) -> StalePolicy {
        match self {
            StaleArg::Warn => StalePolicy::Warn,
            StaleArg::Refuse => StalePolicy::Refuse,
        }
    }
}

/// What the receiver does with an authenticated offer.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AcceptArg {
    /// Ask at a y/N prompt.
    Ask,
    /// Accept from mutual contacts, decline the rest.
    Contacts,
    /// Accept everything that passed authentication.
    All,
    /// Decline everything.
    None,
}

/// PrivateDrop commands.
#[derive(Debug, Subcommand)]
pub enum DropCommand {
    /// Receive files from senders that authenticate (PrivateDrop over HTTPS, mutual TLS).
    #[command(after_help = "\
Needs an enrolled identity (`tacit id enroll`) and an address book (`tacit contacts import`).
Examples:
  tacit drop receive --listen 0.0.0.0:8770 --dir ~/Downloads
  tacit drop receive --listen 127.0.0.1:8770 --accept contacts --mode everyone
  tacit drop receive --listen 127.0.0.1:8770 --legacy --capture seen.cap   # record what peers send")]
    Receive {
        /// Address to listen on (port 0 picks one; the address is printed). The
        /// default, every interface, is what other machines can reach; with
        /// 127.0.0.1 only this machine can send (and the mDNS advert says so).
        #[arg(long, default_value = "0.0.0.0:8770")]
        listen: String,
        /// Where received files go.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// What to do with an offer.
        #[arg(long, value_enum, default_value = "ask")]
        accept: AcceptArg,
        /// Discoverability.
        #[arg(long, value_enum, default_value = "contacts-only")]
        mode: ModeArg,
        /// Also serve the legacy AirDrop `/Discover` flow (leaks identifier hashes).
        #[arg(long)]
        legacy: bool,
        /// Record every request body received into FILE (for `attack-legacy`).
        #[arg(long, value_name = "FILE")]
        capture: Option<PathBuf>,
        /// Exit after this many connections: a number (0: exit once ready) or
        /// `forever` (the default).
        #[arg(long, value_name = "N", value_parser = crate::util::parse_sessions)]
        sessions: Option<u64>,
        /// Our device name.
        #[arg(long, default_value = "tacit receiver")]
        name: String,
        /// Advertise on mDNS/DNS-SD (`_tacit-drop._tcp`, random instance name, no
        /// identifier in the TXT record).
        #[arg(long, value_enum, default_value = "all")]
        mdns: MdnsArg,
        /// Compute the DO3 answer only after the sender's DO2 answer arrived (instead
        /// of while the sender computes it): slower, but a sender that stops after
        /// StartPSI costs no PSI work.
        #[arg(long)]
        work_first: bool,
        /// Largest file accepted (bytes; K, M, G suffixes): larger offers are refused.
        /// Offers that would leave less than 256 MiB free in DIR are refused too.
        #[arg(long, default_value = "4G", value_parser = crate::util::parse_size)]
        max_file: u64,
        /// StartPSI requests one enrolled account may make per minute (each costs an
        /// address-book precomputation); 0 for no limit.
        #[arg(long, default_value_t = Limits::default().start_psi_per_minute)]
        start_psi_per_minute: u32,
        #[command(flatten)]
        serve_limits: crate::util::ServeLimitArgs,
        /// When the revocation list is past its next update and cannot be refreshed:
        /// warn and go on, or refuse every peer until a current list arrives.
        #[arg(long, value_enum, default_value = "warn")]
        stale_revocations: StaleArg,
        #[command(flatten)]
        params: DropParamArgs,
    },
    /// Authenticate to receivers and send files, to several at once.
    #[command(after_help = "\
Receivers are chosen by who they proved to be, never by the name a device gives
itself: --to matches a contact's identifier or the name of the contact it belongs
to, and only receivers that authenticated as that contact. --to-device matches the
receiver's self-chosen device name, which anyone can pick (shown as unauthenticated).
Each receiver's outcome is one line; the exit status is non-zero if any failed.
Examples:
  tacit drop send report.pdf --to bob@example.com      # discover receivers over mDNS
  tacit drop send report.pdf --to bob@example.com --to \"Carol Diaz\"
  tacit drop send photo.jpg --all                      # every contact that has you too
  tacit drop send report.pdf photo.jpg --peer 192.0.2.7:8770
  tacit drop send --legacy --peer 127.0.0.1:8770     # the old, leaking AirDrop flow")]
    Send {
        /// Files to send (none: only authenticate).
        files: Vec<PathBuf>,
        /// A receiver's address (skips discovery); repeat for several.
        #[arg(long)]
        peer: Vec<String>,
        /// Send to the receiver that authenticated as this contact (an identifier in
        /// your address book, or the contact's name); repeat for several.
        #[arg(long, value_name = "NAME")]
        to: Vec<String>,
        /// Send to the receiver whose self-chosen device name is NAME (not
        /// authenticated: anyone nearby can use any device name); repeat for several.
        #[arg(long, value_name = "NAME")]
        to_device: Vec<String>,
        /// Send to every receiver found that is your contact and has you in its
        /// contacts.
        #[arg(long)]
        all: bool,
        /// How long to browse mDNS for receivers.
        #[arg(long, default_value_t = 3.0)]
        discover_secs: f64,
        /// Most receivers found over mDNS to connect to; beyond it, this many chosen
        /// at random (anyone on the network can advertise any number).
        #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
        max_receivers: u32,
        /// Where mDNS browses.
        #[arg(long, value_enum, default_value = "all")]
        mdns: MdnsArg,
        /// Run the legacy AirDrop `Discover` flow instead (for comparison; leaks).
        #[arg(long)]
        legacy: bool,
        /// Our device name.
        #[arg(long, default_value = "tacit sender")]
        name: String,
        /// When the revocation list is past its next update and cannot be refreshed:
        /// warn and go on, or refuse to send.
        #[arg(long, value_enum, default_value = "warn")]
        stale_revocations: StaleArg,
        #[command(flatten)]
        params: DropParamArgs,
    },
    /// Recover phone numbers from the identifier hashes in a capture, by brute force.
    #[command(after_help = "\
The capture is what a receiver recorded with `tacit drop receive --capture FILE`.
A legacy exchange leaks the sender's hashed identifiers to anyone; a PrivateDrop
exchange with a non-contact carries nothing derived from an identifier.
Example:
  tacit drop attack-legacy --capture seen.cap --range +1415555XXXX")]
    AttackLegacy {
        /// The capture file.
        #[arg(long)]
        capture: PathBuf,
        /// The numbers to try: leading digits and X wildcards (+1555XXXXXXX is 10^7).
        #[arg(long)]
        range: String,
        #[command(flatten)]
        params: DropParamArgs,
    },
}

pub fn run(cmd: DropCommand, store: Option<&Path>) -> Result<()> {
    let p = match &cmd {
        DropCommand::AttackLegacy { capture, range, params } => return attack(capture, range, &params.params()?),
        DropCommand::Receive { params, .. } | DropCommand::Send { params, .. } => params.params()?,
    };
    let path = store_path(store)?;
    // sending and receiving need this device's enrolment: never a new, empty store
    let st = crate::util::open_store_existing(store, "tacit id enroll")?;
    // A receiver serves many senders at once, and so does a sender with several
    // receivers; a sender talking to one receiver runs on one thread, where its HTTP
    // connection needs no cross-thread wake-ups.
    let many = |c: &DropCommand| match c {
        DropCommand::Receive { .. } => true,
        DropCommand::Send {
            peer,
            to,
            to_device,
            all,
            ..
        } => *all || peer.len() > 1 || to.len() + to_device.len() > 1,
        DropCommand::AttackLegacy { .. } => false,
    };
    let rt = match many(&cmd) {
        true => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build()?,
    };
    match p.psi.group {
        GroupId::Ristretto255 => rt.block_on(crate::util::shutdown::serving(dispatch::<Ristretto255>(
            cmd, st, path, p,
        ))),
        GroupId::P256 => rt.block_on(crate::util::shutdown::serving(dispatch::<P256>(cmd, st, path, p))),
    }
}

async fn dispatch<G: PrimeGroup>(cmd: DropCommand, mut st: Store, path: PathBuf, p: DropParams) -> Result<()> {
    let identity = Arc::new(device::identity::<G>(&st)?);
    if identity.params != p {
        bail!(
            "this device was enrolled with m = {}, n = {}; run with --max-ids {} --max-contacts {} (or enrol again)",
            identity.params.max_ids(),
            identity.params.max_contacts(),
            identity.params.max_ids(),
            identity.params.max_contacts()
        );
    }
    let ca = device::ca_public(&st)?;
    let (who, stale) = match &cmd {
        DropCommand::Receive { stale_revocations, .. } => ("drop receive", *stale_revocations),
        DropCommand::Send { stale_revocations, .. } => ("drop send", *stale_revocations),
        DropCommand::AttackLegacy { .. } => unreachable!("no store needed"),
    };
    // Issue 10: the CA's revocation list, refreshed first if it is past due; every
    // handshake refuses a revoked peer (issue 32: and, under --stale-revocations
    // refuse, every peer while the list is not current).
    let revocations = revocations_on_start(&mut st, &ca, who, stale.policy()).await?;
    let book = Arc::new(device::address_book(&st, &p)?);
    match cmd {
        DropCommand::Receive {
            listen,
            dir,
            accept,
            mode,
            legacy,
            capture,
            sessions,
            name,
            mdns,
            work_first,
            max_file,
            start_psi_per_minute,
            serve_limits,
            ..
        } => {
            let limits = Limits {
                prepare_answer: !work_first,
                max_file,
                max_offer: max_file.saturating_mul(4),
                start_psi_per_minute,
                connections: serve_limits.apply(Limits::default().connections)?,
                ..Limits::default()
            };
            let mut b = Receiver::builder(identity, book, ca)
                .revocations(revocations.clone())
                .mode(match mode {
                    ModeArg::ContactsOnly => Discoverability::ContactsOnly,
                    ModeArg::Everyone => Discoverability::Everyone,
                    ModeArg::Off => Discoverability::Off,
                })
                .name(name)
                .dir(dir)
                .limits(limits)
                .sessions(sessions)
                .accept(move |o| decide(accept, o))
                .events(receiver_events());
            if legacy {
                b = b.serve_legacy_discover();
            }
            if let Some(c) = capture {
                b = b.record_requests_to(c);
            }
            // Keeps the revocation list current while the receiver runs.
            let refresher = device::keep_current(revocations, ca, path, |e| match e {
                Refresher::Note(n) => print_refresh_note("drop receive", &n),
                Refresher::NoCurrentList(policy) => eprintln!(
                    "tacit drop receive: warning: no source had a current revocation list{}",
                    match policy {
                        StalePolicy::Refuse => "; every sender is refused until it is current",
                        StalePolicy::Warn => "",
                    }
                ),
                Refresher::Failed(e) => eprintln!(
                    "tacit drop receive: warning: could not refresh the revocation list: {}",
                    crate::util::one_line(&e.into())
                ),
            });
            let r = receive(b, &listen, mdns).await;
            refresher.abort();
            r
        }
        DropCommand::Send {
            files,
            peer,
            to,
            to_device,
            all,
            discover_secs,
            max_receivers,
            mdns,
            legacy,
            name,
            ..
        } => {
            let target = Target {
                peer,
                choice: Choice { to, to_device, all },
                wait: std::time::Duration::from_secs_f64(discover_secs.max(0.1)),
                max_receivers: max_receivers as usize,
                mdns,
            };
            let sender = Sender::builder(identity, book, ca)
                .revocations(revocations)
                .name(name)
                .events(sender_events())
                .build();
            send(sender, files, target, legacy, &st).await
        }
        DropCommand::AttackLegacy { .. } => unreachable!("no store needed"),
    }
}

/// A transfer's progress on stderr: a bar on a terminal, else a line at each tenth
/// of the file and at least every 10 s (issue 28, item 10); files under 1 MiB show
/// nothing.
fn bar(total: u64, name: &str, who: &str) -> Progress {
    Progress::new(total, name, who, Unit::Bytes, 1 << 20)
}

fn describe(p: &Peer) -> String {
    match p {
        Peer::Contact { identifier } => format!("your contact {identifier}"),
        Peer::Unknown => "not identified as one of your contacts (device name only)".into(),
    }
}

/// A device name as the peer chose it: escaped, and marked as unauthenticated.
fn device_name(name: &str) -> String {
    format!("device name {:?}, unauthenticated", sanitize(name))
}

/// The receiver's answer to an authenticated offer under `--accept`.
fn decide(accept: AcceptArg, o: &ReceiverOutcome) -> bool {
    let files: Vec<String> = o
        .ask
        .files
        .iter()
        .map(|f| format!("{} ({} B)", sanitize(&f.name), f.size))
        .collect();
    eprintln!(
        "tacit drop receive: {} ({}) offers {}",
        device_name(&o.ask.sender_name),
        describe(&o.sender),
        if files.is_empty() {
            "nothing".into()
        } else {
            files.join(", ")
        }
    );
    match accept {
        AcceptArg::All => true,
        AcceptArg::None => false,
        AcceptArg::Contacts => matches!(o.sender, Peer::Contact { .. }),
        AcceptArg::Ask => {
            eprint!("accept? [y/N] ");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).is_ok() && matches!(line.trim(), "y" | "Y" | "yes")
        }
    }
}

/// The receiver's log lines and progress bars.
fn receiver_events() -> impl Fn(Event) + Send + Sync + 'static {
    let bars: Mutex<std::collections::HashMap<String, Progress>> = Mutex::default();
    move |e: Event| match e {
        Event::Connected(a) => eprintln!("tacit drop receive: connection from account {a}"),
        Event::Authenticated(p) => eprintln!("tacit drop receive: sender is {}", describe(&p)),
        Event::Progress { name, done, total } => {
            if let Ok(mut b) = bars.lock() {
                let pb = b
                    .entry(name.clone())
                    .or_insert_with(|| bar(total, &sanitize(&name), "tacit drop receive"));
                pb.set_position(done);
                if done >= total {
                    pb.finish();
                    b.remove(&name);
                }
            }
        }
        Event::Received(p) => eprintln!("tacit drop receive: received {}", p.display()),
        Event::Failed(why) => eprintln!("tacit drop receive: session failed: {why}"),
        Event::Admission(e) => eprintln!("tacit drop receive: {e}"),
    }
}

/// The sender's upload progress bars.
fn sender_events() -> impl Fn(Event) + Send + Sync + 'static {
    let current: Mutex<Option<Progress>> = Mutex::default();
    move |e: Event| {
        if let Event::Progress { name, done, total } = e
            && let Ok(mut c) = current.lock()
        {
            let pb = c.get_or_insert_with(|| bar(total, &sanitize(&name), "tacit drop send"));
            pb.set_position(done);
            if done >= total {
                pb.finish();
                *c = None;
            }
        }
    }
}

async fn receive<G: PrimeGroup>(b: ReceiverBuilder<G>, listen: &str, mdns: MdnsArg) -> Result<()> {
    let r = b.bind(listen).await?;
    match r.swept() {
        Ok(0) => {}
        Ok(n) => eprintln!(
            "tacit drop receive: removed {n} partial file(s) an interrupted receive left in {}",
            r.dir().display()
        ),
        Err(e) => eprintln!(
            "tacit drop receive: cannot look for partial files in {}: {e}",
            r.dir().display()
        ),
    }
    eprintln!(
        "tacit drop receive: precomputed the address book ({} entries padded to {}) in {:.0} ms",
        r.book_len(),
        r.max_contacts(),
        r.precomputed_in().as_secs_f64() * 1e3
    );
    eprintln!("tacit drop receive: listening on {}", r.local_addr());
    // Only addresses others can connect to are announced (issue 28): a receiver on
    // 127.0.0.1 is advertised to this machine only, and says so.
    let _advertisement = match mdns.scope().map(|scope| r.advertise(scope)).transpose()? {
        Some(Advertised::Announced { advertisement, note }) => {
            match &note {
                Some(note) => eprintln!(
                    "tacit drop receive: advertised as {} over mDNS, but {note}",
                    advertisement.fullname()
                ),
                None => eprintln!(
                    "tacit drop receive: advertised as {} over mDNS",
                    advertisement.fullname()
                ),
            }
            Some(advertisement)
        }
        Some(Advertised::Unreachable(why)) => {
            eprintln!("tacit drop receive: {why}");
            None
        }
        None => None,
    };
    r.serve().await?;
    Ok(())
}

/// Where to send: addresses, or mDNS discovery; and which authenticated receivers.
struct Target {
    peer: Vec<String>,
    choice: Choice,
    wait: std::time::Duration,
    /// Most mDNS candidates connected to.
    max_receivers: usize,
    mdns: MdnsArg,
}

async fn send<G: PrimeGroup>(
    sender: Sender<G>,
    files: Vec<PathBuf>,
    target: Target,
    legacy: bool,
    st: &Store,
) -> Result<()> {
    let candidates: Vec<String> = if !target.peer.is_empty() {
        target.peer.clone()
    } else {
        let Some(scope) = target.mdns.scope() else {
            bail!("no --peer given and mDNS is off");
        };
        eprintln!(
            "tacit drop send: looking for receivers over mDNS for {:.1} s…",
            target.wait.as_secs_f64()
        );
        let found = tacit_drop::service::sender::discover(scope, target.wait, target.max_receivers)?;
        let (others, versions) = &found.other_versions;
        if *others > 0 {
            eprintln!(
                "tacit drop send: left out {others} receiver(s) advertising another protocol version ({}; we speak v={})",
                versions.join(", "),
                tacit_drop::service::sender::TXT_VERSION
            );
        }
        if found.addrs.is_empty() {
            bail!("no receiver found over mDNS (is one running `tacit drop receive`? or give --peer)");
        }
        if found.answered > found.addrs.len() {
            eprintln!(
                "tacit drop send: {} addresses answered over mDNS; connecting to {} chosen at random (--max-receivers)",
                found.answered, target.max_receivers
            );
        }
        found.addrs
    };
    if legacy {
        let peer = match candidates.as_slice() {
            [one] => one.clone(),
            _ => bail!("{} receivers found; the legacy flow needs one --peer", candidates.len()),
        };
        let (receiver, rname, t) = sender.legacy_discover(&peer).await?;
        println!(
            "legacy Discover with {}: receiver is {}",
            device_name(&rname),
            describe(&receiver)
        );
        println!("authentication took {:.1} ms (TLS {:.1} ms)", ms(t.total), ms(t.tls));
        return Ok(());
    }
    let mut offers = Vec::new();
    for f in &files {
        let size = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let pb = Progress::new(size, "hashing", "tacit drop send", Unit::Bytes, 64 << 20);
        offers.extend(sender::offers(std::slice::from_ref(f), &|_, done, _| pb.set_position(done)).await?);
        pb.finish();
    }
    let offers = Arc::new(offers);
    // Authenticate to every candidate at once (the precomputation is made only after
    // TLS succeeded with a certificate of our CA).
    let mut sessions = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    for (addr, r) in sender.authenticate_all(&candidates).await {
        match r {
            Ok(s) => {
                eprintln!(
                    "tacit drop send: {addr}: {} ({}); authenticated in {:.1} ms",
                    describe(&s.outcome.receiver),
                    device_name(&s.outcome.receiver_name),
                    ms(s.timings.total)
                );
                sessions.push((addr, s));
            }
            Err(e) if candidates.len() > 1 && target.peer.is_empty() => {
                eprintln!("tacit drop send: {addr}: {}", sanitize(&e.to_string()))
            }
            Err(e) => failed.push(format!("{addr}: {}", sanitize(&e.to_string()))),
        }
    }
    // Choose the receivers.
    for n in &target.choice.to_device {
        eprintln!("tacit drop send: --to-device {n:?} matches a name any device can claim; it is not authenticated");
    }
    let contacts = st.contacts().unwrap_or_default();
    let (chosen, unmatched) = sender::choose(sessions, &target.choice, &contacts)?;
    failed.extend(unmatched);
    if target.choice.is_empty() && chosen.is_empty() && failed.is_empty() {
        bail!(
            "none of the {} receivers found over mDNS authenticated (reasons above)",
            candidates.len()
        );
    }
    for (addr, s) in &chosen {
        let known = if s.outcome.known_by_receiver.is_empty() {
            "does not have you in its contacts".to_string()
        } else {
            format!("has you in its contacts as {}", s.outcome.known_by_receiver.join(", "))
        };
        println!(
            "receiver {addr} is {} ({}); it {known}",
            describe(&s.outcome.receiver),
            device_name(&s.outcome.receiver_name)
        );
    }
    // Deliver to every chosen receiver at once.
    let mut deliveries = tokio::task::JoinSet::new();
    for (addr, s) in chosen {
        let who = match &s.outcome.receiver {
            Peer::Contact { identifier } => format!("{identifier} ({addr})"),
            Peer::Unknown => format!("{} ({addr})", device_name(&s.outcome.receiver_name)),
        };
        let files = offers.clone();
        deliveries.spawn(async move { (who, sender::deliver(s, &files).await) });
    }
    while let Some(joined) = deliveries.join_next().await {
        let (who, result) = joined.map_err(|e| anyhow::anyhow!("delivery task: {e}"))?;
        match result {
            Ok(stored) if stored.is_empty() => println!("{who}: authenticated (nothing to send)"),
            Ok(stored) => {
                let stored: Vec<String> = stored
                    .iter()
                    .map(|d| format!("{} ({} B) as {}", d.path.display(), d.size, sanitize(&d.stored_as)))
                    .collect();
                println!("{who}: sent {}", stored.join(", "))
            }
            Err(e) => {
                let why = crate::util::one_line(&e.into());
                println!("{who}: failed: {why}");
                failed.push(format!("{who}: {why}"));
            }
        }
    }
    if !failed.is_empty() {
        bail!(
            "{} failed: {}",
            if failed.len() == 1 {
                "one receiver"
            } else {
                "some receivers"
            },
            failed.join("; ")
        );
    }
    Ok(())
}

use crate::util::millis as ms;

fn attack(capture: &Path, range: &str, params: &DropParams) -> Result<()> {
    let range = PhoneRange::parse(range)?;
    let bytes = crate::util::read_file(capture, "capture", 1 << 30)?;
    let summary = read_capture(&bytes, params)?;
    println!("capture {}: {} messages", capture.display(), summary.messages.len());
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for m in &summary.messages {
        match kinds.iter_mut().find(|(k, _)| k == m) {
            Some((_, n)) => *n += 1,
            None => kinds.push((m.clone(), 1)),
        }
    }
    for (k, n) in &kinds {
        println!("  {n} × {k}");
    }
    if summary.hashes.is_empty() {
        println!("no identifier hashes in this capture: nothing derived from an identifier can be tested.");
        println!("(PrivateDrop messages to a non-contact carry only blinded group elements and PRF values");
        println!(" under keys the attacker does not have.)");
        return Ok(());
    }
    println!(
        "{} identifier hashes; trying {} numbers on {} threads…",
        summary.hashes.len(),
        range.len(),
        rayon::current_num_threads()
    );
    let pb = ProgressBar::new(range.len());
    pb.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:30}] {pos}/{len} ({per_sec}, {eta})")
            .expect("static template")
            .progress_chars("=> "),
    );
    pb.set_message("hashing");
    let t = Instant::now();
    let found = brute_force(&summary.hashes, &range, &|k| pb.inc(k));
    pb.finish_and_clear();
    let secs = t.elapsed().as_secs_f64();
    for (number, _) in &found {
        println!("recovered +{number}");
    }
    println!(
        "{} of {} hashes recovered in {:.2} s ({:.1} M numbers/s); the rest are outside the range or e-mail addresses",
        found.len(),
        summary.hashes.len(),
        secs,
        range.len() as f64 / secs / 1e6
    );
    Ok(())
}
