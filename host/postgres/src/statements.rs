//! The SQL of a store, for one table: the statements of a get, a save (plain, create-only,
//! compare-and-set on the version) and a delete, the listing statement for each shape of a
//! list query, and the table's indexes and migration; the push-config table's beside it.

use crate::push_sql::PushSql;
use crate::table_name::derived_name;
use std::fmt::Write as _;

/// The statements, for one table (a listing's are made per call: [`Sql::list`]). A save's
/// parameters: `$1` id, `$2` task, `$3` exact, `$4` context_id, `$5` state, `$6` the status
/// timestamp in ns (text, for numeric), and for `replace`, `$7` the expected version.
pub(crate) struct Sql {
    pub(crate) table: String,
    /// The Task and its version.
    pub(crate) get: String,
    /// The version alone (for a conflict's answer).
    pub(crate) version: String,
    /// Save whatever is stored: a new row at version 1, or the next version.
    pub(crate) upsert: String,
    /// Insert only if there is no row for the id.
    pub(crate) insert_new: String,
    /// Replace the row only if it still has the expected version.
    pub(crate) replace: String,
    /// Remove the Task and its push configs, in one statement.
    pub(crate) delete: String,
    /// How many Tasks and their bytes as stored (the text a get returns).
    pub(crate) usage: String,
    /// The push-config table's statements.
    pub(crate) push: PushSql,
}

/// The columns a page of a listing reads: the id, the Task's text, its sort timestamp.
const LIST_COLUMNS: &str = "id, COALESCE(exact, task::text) AS doc, status_ts_ns AS ts";
/// List order: newest status timestamp first, Tasks without one last, ties by id (bytea: byte
/// order). The `_listed` indexes are in this order.
const LIST_ORDER: &str = "status_ts_ns DESC NULLS LAST, id";
/// The comment on `status_ts_ns` once every row has it (new tables, finished migrations);
/// anything else means rows of an earlier version may still lack it (see [`backfill`]).
pub(crate) const BACKFILLED: &str =
    "toolnexus: status.timestamp in ns since the Unix epoch; complete";
/// The comment while a migration's backfill has not finished.
const BACKFILL_PENDING: &str =
    "toolnexus: status.timestamp in ns since the Unix epoch; backfill pending";

impl Sql {
    pub(crate) fn new(table: String) -> Self {
        let columns = "id, task, exact, context_id, state, status_ts_ns, version, updated_at";
        let values = "$1, $2::text::jsonb, $3, $4, $5, $6::text::numeric";
        let push = PushSql::new(&table);
        Sql {
            get: format!("SELECT COALESCE(exact, task::text), version FROM {table} WHERE id = $1"),
            version: format!("SELECT version FROM {table} WHERE id = $1"),
            upsert: format!(
                "INSERT INTO {table} AS t ({columns}) VALUES ({values}, 1, clock_timestamp()) \
                 ON CONFLICT (id) DO UPDATE SET task = EXCLUDED.task, exact = EXCLUDED.exact, \
                 context_id = EXCLUDED.context_id, state = EXCLUDED.state, \
                 status_ts_ns = EXCLUDED.status_ts_ns, version = t.version + 1, \
                 updated_at = EXCLUDED.updated_at \
                 RETURNING version"
            ),
            insert_new: format!(
                "INSERT INTO {table} ({columns}) VALUES ({values}, 1, clock_timestamp()) \
                 ON CONFLICT (id) DO NOTHING RETURNING version"
            ),
            replace: format!(
                "UPDATE {table} SET task = $2::text::jsonb, exact = $3, context_id = $4, \
                 state = $5, status_ts_ns = $6::text::numeric, version = version + 1, \
                 updated_at = clock_timestamp() \
                 WHERE id = $1 AND version = $7 RETURNING version"
            ),
            // A data-modifying WITH runs to completion whether or not the outer statement
            // reads it; the count is the Task's.
            delete: format!(
                "WITH configs AS (DELETE FROM {} WHERE task_id = $1) \
                 DELETE FROM {table} WHERE id = $1",
                push.table
            ),
            usage: format!(
                "SELECT count(*)::bigint, \
                 COALESCE(sum(octet_length(COALESCE(exact, task::text))), 0)::bigint FROM {table}"
            ),
            push,
            table,
        }
    }

    /// The statement for one page of a listing, and the total: `$1` is the number of rows to
    /// fetch (page size + 1), then the filters that are set (`context_id`, `state`, the
    /// timestamp lower bound), then the cursor's timestamp (if it has one) and id.
    ///
    /// Keyset paging on (`status_ts_ns` descending, NULLs last, `id`): the rows after a cursor
    /// with a timestamp are those with the same timestamp and a greater id, then those with an
    /// older timestamp, then those without one; after a cursor without a timestamp, only rows
    /// without one and a greater id. Each part is one range of a `_listed` index, and the page
    /// merges them in order, so a page reads about one page of rows, however deep it is.
    pub(crate) fn list(&self, shape: ListShape) -> String {
        let table = &self.table;
        let mut n = 1;
        let mut next = || {
            n += 1;
            n
        };
        let mut filter = String::from("true");
        if shape.context {
            let _ = write!(filter, " AND context_id = ${}", next());
        }
        if shape.state {
            let _ = write!(filter, " AND state = ${}", next());
        }
        if shape.after {
            let _ = write!(filter, " AND status_ts_ns >= ${}::text::numeric", next());
        }
        let part = |condition: &str| {
            format!(
                "SELECT {LIST_COLUMNS} FROM {table} WHERE {filter}{condition} \
                 ORDER BY {LIST_ORDER} LIMIT $1"
            )
        };
        let page = match shape.cursor {
            CursorShape::Start => part(""),
            CursorShape::Timed => {
                let (ts, id) = (next(), next());
                let mut parts = vec![
                    part(&format!(
                        " AND status_ts_ns = ${ts}::text::numeric AND id > ${id}"
                    )),
                    part(&format!(" AND status_ts_ns < ${ts}::text::numeric")),
                ];
                if !shape.after {
                    // With a timestamp bound, no Task without a timestamp matches.
                    parts.push(part(" AND status_ts_ns IS NULL"));
                }
                let parts: Vec<String> = parts.into_iter().map(|p| format!("({p})")).collect();
                format!(
                    "SELECT * FROM ({}) AS parts ORDER BY ts DESC NULLS LAST, id LIMIT $1",
                    parts.join(" UNION ALL ")
                )
            }
            CursorShape::Untimed => {
                let id = next();
                part(&format!(" AND status_ts_ns IS NULL AND id > ${id}"))
            }
        };
        format!(
            "SELECT total.n, page.id, page.doc, page.ts::text \
             FROM (SELECT count(*) AS n FROM {table} WHERE {filter}) AS total \
             LEFT JOIN ({page}) AS page ON true ORDER BY page.ts DESC NULLS LAST, page.id"
        )
    }

    /// An index of the table, `suffix` appended to the table's name; `qualified`: with the
    /// table's schema, if it has one (an index lives in its table's schema).
    pub(crate) fn index(&self, suffix: &str, qualified: bool) -> String {
        derived_name(&self.table, suffix, qualified)
    }

    /// The three indexes of a listing: all Tasks, by context, by state, each in list order.
    pub(crate) fn list_indexes(&self, if_not_exists: bool) -> String {
        let table = &self.table;
        let guard = if if_not_exists { "IF NOT EXISTS " } else { "" };
        format!(
            "CREATE INDEX {guard}{} ON {table} ({LIST_ORDER}); \
             CREATE INDEX {guard}{} ON {table} (context_id, {LIST_ORDER}); \
             CREATE INDEX {guard}{} ON {table} (state, {LIST_ORDER});",
            self.index("listed", false),
            self.index("context_listed", false),
            self.index("state_listed", false),
        )
    }

    /// What turns a table of an earlier version (before versions and timestamp order) into
    /// one of this version, except the backfill of `status_ts_ns`. Idempotent.
    pub(crate) fn migration(&self) -> String {
        let table = &self.table;
        format!(
            "ALTER TABLE {table} ADD COLUMN IF NOT EXISTS version bigint NOT NULL DEFAULT 1, \
                 ADD COLUMN IF NOT EXISTS status_ts_ns numeric; \
             ALTER TABLE {table} ALTER COLUMN version DROP DEFAULT; \
             DROP INDEX IF EXISTS {}; \
             DROP INDEX IF EXISTS {}; \
             {} \
             COMMENT ON COLUMN {table}.status_ts_ns IS '{BACKFILL_PENDING}'",
            self.index("context_id", true),
            self.index("state", true),
            self.list_indexes(true),
        )
    }
}

/// Which statement a listing needs: the filters it has, and where its cursor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ListShape {
    pub(crate) context: bool,
    pub(crate) state: bool,
    pub(crate) after: bool,
    pub(crate) cursor: CursorShape,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CursorShape {
    /// The first page.
    Start,
    /// After a Task with a status timestamp.
    Timed,
    /// After a Task without one.
    Untimed,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table_name::{MAX_TABLE_NAME, quote_table};

    #[test]
    fn list_statements_number_their_parameters_and_page_by_keyset() {
        let sql = Sql::new(quote_table("t").unwrap());
        let first = sql.list(ListShape {
            context: false,
            state: false,
            after: false,
            cursor: CursorShape::Start,
        });
        assert_eq!(
            first,
            "SELECT total.n, page.id, page.doc, page.ts::text FROM (SELECT count(*) AS n FROM \
             \"t\" WHERE true) AS total LEFT JOIN (SELECT id, COALESCE(exact, task::text) AS doc, \
             status_ts_ns AS ts FROM \"t\" WHERE true ORDER BY status_ts_ns DESC NULLS LAST, id \
             LIMIT $1) AS page ON true ORDER BY page.ts DESC NULLS LAST, page.id"
        );
        let timed = sql.list(ListShape {
            context: true,
            state: true,
            after: false,
            cursor: CursorShape::Timed,
        });
        let filter = "WHERE true AND context_id = $2 AND state = $3";
        assert!(timed.contains(&format!("count(*) AS n FROM \"t\" {filter}) AS total")));
        assert!(timed.contains(&format!(
            "{filter} AND status_ts_ns = $4::text::numeric AND id > $5 ORDER BY"
        )));
        assert!(timed.contains(&format!(
            "{filter} AND status_ts_ns < $4::text::numeric ORDER BY"
        )));
        assert!(timed.contains(&format!("{filter} AND status_ts_ns IS NULL ORDER BY")));
        assert!(!timed.contains("$6"));
        let bounded = sql.list(ListShape {
            context: false,
            state: true,
            after: true,
            cursor: CursorShape::Timed,
        });
        assert!(bounded.contains("AND state = $2 AND status_ts_ns >= $3::text::numeric"));
        assert!(bounded.contains("status_ts_ns = $4::text::numeric AND id > $5"));
        assert!(
            !bounded.contains("IS NULL"),
            "no untimed part under a timestamp bound"
        );
        let untimed = sql.list(ListShape {
            context: true,
            state: false,
            after: false,
            cursor: CursorShape::Untimed,
        });
        assert!(untimed.contains("context_id = $2 AND status_ts_ns IS NULL AND id > $3 ORDER BY"));
        assert!(!untimed.contains("UNION"));
    }

    #[test]
    fn index_names_live_in_the_tables_schema() {
        let sql = Sql::new(quote_table("app.tasks").unwrap());
        assert_eq!(sql.index("listed", false), "\"tasks_listed\"");
        assert_eq!(sql.index("state", true), "\"app\".\"tasks_state\"");
        let longest = Sql::new(quote_table(&"t".repeat(MAX_TABLE_NAME)).unwrap());
        assert!(
            longest
                .index("context_listed", false)
                .trim_matches('"')
                .len()
                <= 63
        );
    }
}
