//! `tacit`: privacy-preserving discovery, authentication and matching.
//!
//! Every subcommand has `--help` with an example; errors end the program with a
//! one-line reason and a non-zero exit code.
//!
//! # Layout
//!
//! This file only parses arguments and dispatches. Each subsystem has one folder,
//! after cargo's `src/bin/cargo/commands/`:
//!
//! ```text
//! <subsystem>/mod.rs     what the folder holds
//! <subsystem>/cmd.rs     the subcommands: clap arguments, parse, call the library, print
//! <subsystem>/bench.rs   `tacit bench <subsystem>`: the paper's tables, JSON, plots
//! <subsystem>/demo.rs    its scene in `tacit demo`
//! ```
//!
//! with further files where a subsystem has more commands (`drop/ca.rs` for
//! `tacit ca` and `tacit id`, `discovery/world.rs` for the scene both the demo and
//! the bench use). The folders are `psi/`, `drop/`, `discovery/`, `contacts/`; the
//! coming `pros/`, `mpc/` and `pir/` follow the same pattern. The top-level
//! `bench.rs` and `demo.rs` only list the experiments and scenes and call into the
//! folders. Helpers every subsystem shares (set files, store path, progress bars,
//! quantiles, timings, plots) live once, in `util/`; a subsystem folder never
//! reaches into another subsystem's folder.

mod bench;
mod contacts;
mod demo;
mod discovery;
mod drop;
mod mpc;
mod pir;
mod pros;
mod psi;
mod reproduce;
mod schedule_args;
mod util;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// tacit — private discovery, authentication and matching between devices that do
/// not trust each other.
#[derive(Debug, Parser)]
#[command(
    name = "tacit",
    version,
    about = "tacit — private discovery, authentication and matching between devices that do not trust each other",
    long_about = None,
    after_help = "\
Examples:
  tacit demo                                  two local parties, PSI and PrivateDrop
  tacit contacts import examples/contacts.vcf
  tacit psi serve --set book.txt --listen 127.0.0.1:7878
  tacit psi query --set ids.txt --connect 127.0.0.1:7878
  tacit ca init --dir ./ca
  tacit id enroll --ca 127.0.0.1:7700 --ca-key <hex> --id +14155550142
  tacit drop receive --dir ~/Downloads
  tacit drop send photo.jpg --to \"Bob Builder\"
  tacit discover advertise --policy 'Home/*'
  tacit discover browse --policy 'Home/Devices/*' --message 'status?'
  tacit bench psi --ids 10 --contacts 10000
  tacit bench drop
  tacit bench discovery
  tacit mpc run --circuit aes_128.txt --party a --listen 127.0.0.1:7900 --input <bits>
  tacit bench mpc engine
  tacit pros keygen --out key.json
  tacit pros reconcile serve --set prefs.txt --listen 127.0.0.1:7980 --sessions 1
  tacit schedule connect --calendar alice.ics --connect 127.0.0.1:7990 --from 2025-01-06 --to 2025-01-11
  tacit bench pros"
)]
struct Cli {
    /// The SQLite store (default: $TACIT_STORE, else $XDG_DATA_HOME/tacit/tacit.sqlite3,
    /// else ~/.local/share/tacit/tacit.sqlite3).
    #[arg(long, global = true, value_name = "PATH")]
    store: Option<PathBuf>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run two local parties end to end on loopback and show what each learned.
    #[command(after_help = "Example:\n  tacit demo\n  tacit demo --group p256 --contacts 2000")]
    Demo(demo::DemoArgs),
    /// The certification authority PrivateDrop's inputs rely on.
    #[command(subcommand)]
    Ca(drop::ca::CaCommand),
    /// This device's PrivateDrop identity: enrolment with a CA.
    #[command(subcommand)]
    Id(drop::ca::IdCommand),
    /// PrivateDrop: mutual-contact authentication and file transfer; the legacy attack.
    #[command(subcommand)]
    Drop(drop::cmd::DropCommand),
    /// Import and list the address book (vCard 3.0 / 4.0).
    #[command(subcommand)]
    Contacts(contacts::cmd::ContactsCommand),
    /// Private discovery and private mutual authentication (IBE prefix encryption).
    #[command(subcommand)]
    Discover(discovery::cmd::DiscoverCommand),
    /// Private set intersection between two processes.
    #[command(subcommand)]
    Psi(psi::cmd::PsiCommand),
    /// Boolean circuits under GMW (Bristol Fashion), triples from a token or OT extension.
    #[command(subcommand)]
    Mpc(mpc::cmd::MpcCommand),
    /// PIR tables and a one-process PIR query (TracEdge's backends).
    #[command(subcommand)]
    Pir(pir::cmd::PirCommand),
    /// PROS: Paillier (python-paillier JSON), FNP set intersection, 3PR reconciliation.
    #[command(subcommand)]
    Pros(pros::cmd::ProsCommand),
    /// Private meeting scheduling from .ics calendars (PROS appoint, 3PR).
    #[command(subcommand)]
    Schedule(pros::schedule::ScheduleCommand),
    /// Measure the protocols on this machine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// Rust ignores SIGPIPE, so `tacit id show | head -1` made `println!` panic with
/// "failed printing to stdout: Broken pipe". A command-line tool ends quietly when its
/// reader goes away, with SIGPIPE's exit status (141), as other Unix tools do. SIGPIPE
/// itself stays ignored: a server writing to a socket whose peer left must get an
/// error, not die.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_broken_pipe();
    let cli = Cli::parse();
    util::shutdown::install();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Ca(c) => drop::ca::run_ca(c),
        Command::Drop(c) => drop::cmd::run(c, cli.store.as_deref()),
        Command::Id(c) => drop::ca::run_id(c, cli.store.as_deref()),
        Command::Contacts(c) => contacts::cmd::run(c, cli.store.as_deref()),
        Command::Psi(c) => psi::cmd::run(c, cli.store.as_deref()),
        Command::Discover(c) => discovery::cmd::run(c, cli.store.as_deref()),
        Command::Mpc(c) => mpc::cmd::run_cmd(c, cli.store.as_deref()),
        Command::Pir(c) => pir::cmd::run(c),
        Command::Pros(c) => pros::cmd::run(c, cli.store.as_deref()),
        Command::Schedule(c) => pros::schedule::run(c, cli.store.as_deref()),
        Command::Bench(c) => bench::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            util::remove_blank_new_stores();
            eprintln!("tacit: error: {}", util::one_line(&e));
            ExitCode::FAILURE
        }
    }
}
