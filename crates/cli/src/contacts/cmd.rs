//! `tacit contacts import | list`.

use crate::util::{sanitize, store_path};
use anyhow::Result;
use clap::Subcommand;
use std::path::{Path, PathBuf};
use tacit_store::NormalizeOptions;

/// Address book commands.
#[derive(Debug, Subcommand)]
pub enum ContactsCommand {
    /// Import contacts from a vCard 3.0 / 4.0 file; bad cards are reported and skipped.
    #[command(after_help = "\
Phone numbers are stored as E.164 digits (\"+1 (234) 567-8901\" → 12345678901);
numbers without a country code need --region. E-mail addresses are trimmed and
lower-cased.
Example:
  tacit contacts import examples/contacts.vcf --region US")]
    Import {
        /// The .vcf file.
        file: PathBuf,
        /// Default region (ISO 3166 code such as US or DE) for numbers without a
        /// country code.
        #[arg(long)]
        region: Option<String>,
        /// Print the import report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the stored contacts.
    #[command(after_help = "Example:\n  tacit contacts list\n  tacit contacts list --json")]
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: ContactsCommand, store: Option<&Path>) -> Result<()> {
    let path = store_path(store)?;
    match cmd {
        ContactsCommand::Import { file, region, json } => {
            let bytes = crate::util::read_file(&file, "vCard file", tacit_store::vcard::MAX_FILE_BYTES as u64)?;
            let text = String::from_utf8_lossy(&bytes);
            let opts = match &region {
                Some(r) => NormalizeOptions::with_default_region(r)?,
                None => NormalizeOptions::new(),
            };
            let has_card = text.lines().any(|l| l.trim().eq_ignore_ascii_case("BEGIN:VCARD"));
            anyhow::ensure!(
                has_card,
                "{} holds no vCard (a vCard starts with a BEGIN:VCARD line); nothing imported",
                file.display()
            );
            let mut st = crate::util::open_store(&path)?;
            let report = st.import_vcard(&text, &opts)?;
            if report.cards_imported == 0 {
                for p in &report.problems {
                    eprintln!("{}:{}: {}", file.display(), p.line, sanitize(&p.reason));
                }
                anyhow::bail!(
                    "no card in {} could be imported ({} problems, listed above); nothing imported",
                    file.display(),
                    report.problems.len()
                );
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for p in &report.problems {
                    eprintln!(
                        "{}:{}: {}{}",
                        file.display(),
                        p.line,
                        sanitize(&p.reason),
                        if p.skipped_card { " (card skipped)" } else { "" }
                    );
                }
                println!(
                    "imported {} cards, {} new identifiers ({} already known) into {}",
                    report.cards_imported,
                    report.identifiers_added,
                    report.duplicates,
                    path.display()
                );
            }
        }
        ContactsCommand::List { json } => {
            let st = crate::util::open_store_existing(store, "tacit contacts import FILE.vcf")?;
            let contacts = st.contacts()?;
            if json {
                println!("{}", serde_json::to_string_pretty(&contacts)?);
            } else if contacts.is_empty() {
                println!(
                    "no contacts in {} (import some with `tacit contacts import FILE.vcf`)",
                    path.display()
                );
            } else {
                for c in &contacts {
                    let ids: Vec<String> = c.identifiers.iter().map(|i| i.value.clone()).collect();
                    println!("{:<28} {}", sanitize(&c.display_name), ids.join(", "));
                }
                println!(
                    "{} contacts, address book version {}",
                    contacts.len(),
                    st.contacts_version()?
                );
            }
        }
    }
    Ok(())
}
