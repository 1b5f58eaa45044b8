//! `tacit`: privacy-preserving discovery, authentication and matching.
//!
//! Every subcommand has `--help` with an example; errors end the program with a
//! one-line reason and a non-zero exit code.

mod bench;
mod bench_discovery;
mod bench_drop;
mod ca;
mod contacts;
mod demo;
mod demo_discovery;
mod discover;
mod discover_world;
mod drop;
mod pir;
mod plot;
mod psi;
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
  tacit bench discovery"
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
    Ca(ca::CaCommand),
    /// This device's PrivateDrop identity: enrolment with a CA.
    #[command(subcommand)]
    Id(ca::IdCommand),
    /// PrivateDrop: mutual-contact authentication and file transfer; the legacy attack.
    #[command(subcommand)]
    Drop(drop::DropCommand),
    /// Import and list the address book (vCard 3.0 / 4.0).
    #[command(subcommand)]
    Contacts(contacts::ContactsCommand),
    /// Private discovery and private mutual authentication (IBE prefix encryption).
    #[command(subcommand)]
    Discover(discover::DiscoverCommand),
    /// Private set intersection between two processes.
    #[command(subcommand)]
    Psi(psi::PsiCommand),
    /// PIR tables and a one-process PIR query (TracEdge's backends).
    #[command(subcommand)]
    Pir(pir::cmd::PirCommand),
    /// Measure the protocols on this machine.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Ca(c) => ca::run_ca(c),
        Command::Drop(c) => drop::run(c, cli.store.as_deref()),
        Command::Id(c) => ca::run_id(c, cli.store.as_deref()),
        Command::Contacts(c) => contacts::run(c, cli.store.as_deref()),
        Command::Psi(c) => psi::run(c, cli.store.as_deref()),
        Command::Discover(c) => discover::run(c, cli.store.as_deref()),
        Command::Pir(c) => pir::cmd::run(c),
        Command::Bench(c) => bench::run(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tacit: error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, skipping a cause whose text the line
/// already holds (error types that print their source as part of their message).
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let s = cause.to_string();
        if out.contains(&s) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&s);
    }
    out.replace('\n', " ")
}
