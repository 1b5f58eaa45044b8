//! Contacts of the address book.

use serde::Serialize;

use crate::identifier::IdentifierKind;

/// One phone number or e-mail address of a contact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ContactIdentifier {
    /// Phone number or e-mail address.
    pub kind: IdentifierKind,
    /// Normalised value (see [`crate::Identifier`]).
    pub value: String,
    /// The vCard `TYPE` parameters, lower-cased (`"cell"`, `"home"`, `"pref"`, …).
    pub types: Vec<String>,
}

/// A contact of the user's address book (the PrivateDrop paper's `AB`, §4.1,
/// with the names a person needs to recognise it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Contact {
    /// Row id, stable for the life of the contact.
    pub id: i64,
    /// The name shown to the user.
    pub display_name: String,
    /// The contact's identifiers, in the order they were first imported.
    pub identifiers: Vec<ContactIdentifier>,
}
