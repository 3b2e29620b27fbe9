//! The table a store keeps its Tasks in, as a builder or a selector names it: checked to be a
//! plain identifier (optionally schema-qualified) and quoted for SQL.

/// The longest table name accepted, leaving room for the index names within PostgreSQL's 63.
pub(crate) const MAX_TABLE_NAME: usize = 48;

/// `name` or `schema.name`, each a plain identifier, quoted for SQL.
pub(crate) fn quote_table(table: &str) -> Result<String, String> {
    let parts: Vec<&str> = table.split('.').collect();
    let ident = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    if parts.len() > 2 || !parts.iter().all(|p| ident(p)) || table.len() > 2 * 63 {
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
