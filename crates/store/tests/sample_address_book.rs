//! The sample address book shipped for the README (`examples/contacts.vcf`),
//! imported through the public API only.

use tacit_store::{IdentifierKind, NormalizeOptions, Store, vcard};

const EXAMPLE: &str = include_str!("../../../examples/contacts.vcf");
const COPY: &str = include_str!("data/contacts-6.vcf");

#[test]
fn the_readme_sample_is_the_test_copy() {
    assert_eq!(EXAMPLE, COPY);
}

#[test]
fn the_readme_sample_imports_cleanly() -> Result<(), tacit_store::Error> {
    let mut store = Store::open_in_memory()?;
    // Every number in the sample has a country code: no region needed.
    let report = store.import_vcard(EXAMPLE, &NormalizeOptions::new())?;
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    assert_eq!(report.cards_imported, 6);
    assert_eq!(report.contacts_created, 6);

    let contacts = store.contacts()?;
    let names: Vec<&str> = contacts.iter().map(|c| c.display_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Johnny Appleseed",
            "Dr. Anna Müller",
            "Carlos Gómez",
            "Ngozi Okafor",
            "Jane Doe",
            "Pizza Napoli"
        ]
    );
    let book = store.address_book()?;
    assert_eq!(
        book,
        [
            "12025550173",
            "12125550147",
            "14155550101",
            "14155550102",
            "16465550134",
            "34612345678",
            "447400123456",
            "4915123456789",
            "493045050",
            "anna.mueller@charite.example",
            "carlos.gomez@gmail.example",
            "jane.doe@example.net",
            "johnny.appleseed@icloud.example",
            "ngozi.okafor@example.co.uk",
        ]
    );
    let phones = contacts
        .iter()
        .flat_map(|c| &c.identifiers)
        .filter(|i| i.kind == IdentifierKind::Phone)
        .count();
    assert_eq!(phones, 9);

    // A second import is a no-op.
    let version = store.contacts_version()?;
    let again = store.import_vcard(EXAMPLE, &NormalizeOptions::new())?;
    assert_eq!((again.identifiers_added, again.duplicates), (0, 14));
    assert_eq!(store.contacts_version()?, version);
    Ok(())
}

#[test]
fn parsing_lossy_decoded_bytes_works_like_the_fuzz_target() {
    let mut bytes = EXAMPLE.as_bytes().to_vec();
    bytes.insert(200, 0xff);
    let text = String::from_utf8_lossy(&bytes);
    let parse = vcard::parse(&text);
    assert!(parse.cards.len() >= 5);
}
