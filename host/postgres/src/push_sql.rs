//! The SQL of the push-config table beside a Task table: its name, its DDL, and the statements
//! of a set, a get, a listing and a delete. (A Task's delete, which removes its configs in the
//! same statement, is in `statements.rs`.)

use crate::table_name::derived_name;

/// What is appended to the Task table's name: `<table>_push_configs` (61 bytes at most).
const TABLE_SUFFIX: &str = "push_configs";
/// The primary key's name, `<table>_push_pkey`: PostgreSQL's own choice,
/// `<table>_push_configs_pkey`, would pass 63 bytes for the longest tables and be cut.
const KEY_SUFFIX: &str = "push_pkey";

/// The statements, for the push-config table of one Task table. Parameters: `$1` the Task id,
/// `$2` the config id (both their UTF-8 bytes), `$3` the config's JSON text.
pub(crate) struct PushSql {
    /// The push-config table, quoted and schema-qualified like the Task table.
    pub(crate) table: String,
    /// A config by its key.
    pub(crate) get: String,
    /// Every config of a Task, in config-id byte order.
    pub(crate) list: String,
    /// Insert or replace a config.
    pub(crate) upsert: String,
    /// Remove one config.
    pub(crate) delete: String,
}

/// The column types the store needs, in the order of [`PushSql::probe`]'s columns, as the
/// driver names them.
pub(crate) const PUSH_COLUMN_TYPES: [&str; 3] = ["bytea", "bytea", "text"];

impl PushSql {
    /// The push-config table of the (quoted) Task table `table`.
    pub(crate) fn new(table: &str) -> Self {
        let push = derived_name(table, TABLE_SUFFIX, true);
        PushSql {
            get: format!("SELECT config FROM {push} WHERE task_id = $1 AND config_id = $2"),
            list: format!(
                "SELECT config_id, config FROM {push} WHERE task_id = $1 ORDER BY config_id"
            ),
            upsert: format!(
                "INSERT INTO {push} (task_id, config_id, config) VALUES ($1, $2, $3) \
                 ON CONFLICT (task_id, config_id) DO UPDATE SET config = EXCLUDED.config"
            ),
            delete: format!("DELETE FROM {push} WHERE task_id = $1 AND config_id = $2"),
            table: push,
        }
    }

    /// Creates the table. Ids are `bytea`, as the Task table's: the key's order is byte order
    /// (what `list_push_configs` promises, no collation can change it) and an id may hold
    /// U+0000. The config is `text`, so it comes back exactly as written (a `PushConfig` is
    /// compact JSON, its control characters escaped, so no U+0000 reaches the column). No
    /// foreign key to the Task table: a store does not check that the Task exists (the A2A
    /// layer does), and a Task's delete removes its configs itself.
    pub(crate) fn create(&self, task_table: &str) -> String {
        let push = &self.table;
        let key = derived_name(task_table, KEY_SUFFIX, false);
        format!(
            "CREATE TABLE {push} (\
                 task_id bytea NOT NULL, \
                 config_id bytea NOT NULL, \
                 config text NOT NULL, \
                 CONSTRAINT {key} PRIMARY KEY (task_id, config_id)); \
             COMMENT ON TABLE {push} IS \
                 'toolnexus A2A push notification configs of the Tasks in {task_table} \
                 (see docs/postgres.md)'"
        )
    }

    /// A statement whose columns are the ones the store reads and writes, to check that an
    /// existing table is one of ours (types: [`PUSH_COLUMN_TYPES`]).
    pub(crate) fn probe(&self) -> String {
        format!(
            "SELECT task_id, config_id, config FROM {} WHERE false",
            self.table
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_name::{MAX_IDENTIFIER, MAX_TABLE_NAME, quote_table};

    #[test]
    fn the_push_table_lives_beside_the_task_table() {
        let sql = PushSql::new(&quote_table("app.tasks").unwrap());
        assert_eq!(sql.table, "\"app\".\"tasks_push_configs\"");
        let create = sql.create(&quote_table("app.tasks").unwrap());
        assert!(
            create.starts_with("CREATE TABLE \"app\".\"tasks_push_configs\" ("),
            "{create}"
        );
        // A constraint's name takes its table's schema.
        assert!(
            create.contains("CONSTRAINT \"tasks_push_pkey\" PRIMARY KEY (task_id, config_id)"),
            "{create}"
        );
        assert!(sql.list.ends_with("WHERE task_id = $1 ORDER BY config_id"));
    }

    #[test]
    fn derived_names_of_the_longest_table_fit_postgres_identifiers() {
        let longest = quote_table(&"t".repeat(MAX_TABLE_NAME)).unwrap();
        let sql = PushSql::new(&longest);
        let bare = |quoted: &str| quoted.trim_matches('"').len();
        assert_eq!(bare(&sql.table), MAX_TABLE_NAME + 1 + TABLE_SUFFIX.len());
        assert!(bare(&sql.table) <= MAX_IDENTIFIER);
        assert!(bare(&derived_name(&longest, KEY_SUFFIX, false)) <= MAX_IDENTIFIER);
    }
}
