//! The table a store keeps its Tasks in, as a builder or a selector names it: checked to be a
//! plain identifier (optionally schema-qualified) and quoted for SQL; and the names derived
//! from it (indexes, the push-config table).

/// The longest table name accepted, leaving room for the derived names (indexes, the push
/// config table and its key) within PostgreSQL's 63 bytes.
pub(crate) const MAX_TABLE_NAME: usize = 48;

/// PostgreSQL's longest identifier, in bytes; a longer one is silently cut.
pub(crate) const MAX_IDENTIFIER: usize = 63;

/// `name` or `schema.name`, each a plain identifier, quoted for SQL.
pub(crate) fn quote_table(table: &str) -> Result<String, String> {
    let parts: Vec<&str> = table.split('.').collect();
    let ident = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    if parts.len() > 2 || !parts.iter().all(|p| ident(p)) || table.len() > 2 * MAX_IDENTIFIER {
        return Err(format!(
            "table {table:?} must be an identifier ([A-Za-z_][A-Za-z0-9_]*), optionally \
             schema-qualified (schema.table)"
        ));
    }
    if parts.last().is_some_and(|name| name.len() > MAX_TABLE_NAME) {
        return Err(format!(
            "table name {table:?} is longer than {MAX_TABLE_NAME} bytes"
        ));
    }
    Ok(parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join("."))
}

/// The name of something belonging to the quoted table `table` (an index, a constraint, the
/// push-config table): the table's own name, `_`, `suffix`, quoted; `qualified`: with the
/// table's schema, if it has one (an index or a table of the store lives in its schema).
///
/// Every suffix starts with a letter that is no code of a namespace's table name (see
/// `toolnexus::namespace_table`: `_` and `u`, `d`, `h`, `x`), so a derived name never equals
/// the table of another namespace.
pub(crate) fn derived_name(table: &str, suffix: &str, qualified: bool) -> String {
    let (schema, bare) = match table.rsplit_once('.') {
        Some((schema, bare)) => (Some(schema), bare),
        None => (None, table),
    };
    let name = format!("\"{}_{suffix}\"", bare.trim_matches('"'));
    match schema {
        Some(schema) if qualified => format!("{schema}.{name}"),
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_identifiers() {
        assert_eq!(quote_table("tasks").unwrap(), "\"tasks\"");
        assert_eq!(quote_table("app.tasks_2").unwrap(), "\"app\".\"tasks_2\"");
        for bad in [
            "",
            "1tasks",
            "tasks;drop",
            "a.b.c",
            "ta\"sks",
            "a.",
            "x-y",
            &"t".repeat(MAX_TABLE_NAME + 1),
        ] {
            assert!(quote_table(bad).is_err(), "{bad}");
        }
    }
}
