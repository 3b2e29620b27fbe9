//! [`PostgresTaskStore`]: every Task in one PostgreSQL table, so several replicas of a runtime
//! share their Tasks.
//!
//! The table (created if missing, migrated from an earlier version at connect; see
//! `docs/postgres.md`):
//!
//! ```sql
//! CREATE TABLE toolnexus_tasks (
//!     id           bytea PRIMARY KEY, -- the id's UTF-8 bytes: byte order, and U+0000 fits
//!     task         jsonb NOT NULL,    -- the Task, for SQL
//!     exact        text,              -- NULL, or the Task's own JSON text when jsonb cannot
//!                                     -- give it back (see below)
//!     context_id   bytea,             -- contextId, for the list filter
//!     state        bytea,             -- status.state, normalized, for the list filter
//!     updated_at   timestamptz NOT NULL DEFAULT now(),
//!     version      bigint NOT NULL,   -- 1 at the first save, +1 with every save
//!     status_ts_ns numeric            -- status.timestamp, ns since the Unix epoch; NULL if
//!                                     -- absent or unreadable (list order, time filter)
//! );
//! CREATE INDEX toolnexus_tasks_listed ON toolnexus_tasks
//!     (status_ts_ns DESC NULLS LAST, id);
//! CREATE INDEX toolnexus_tasks_context_listed ON toolnexus_tasks
//!     (context_id, status_ts_ns DESC NULLS LAST, id);
//! CREATE INDEX toolnexus_tasks_state_listed ON toolnexus_tasks
//!     (state, status_ts_ns DESC NULLS LAST, id);
//! ```
//!
//! Push-notification configs are in a second table beside it, created (or, beside a table of an
//! earlier release, added) at connect, named after it:
//!
//! ```sql
//! CREATE TABLE toolnexus_tasks_push_configs (
//!     task_id   bytea NOT NULL, -- the Task id's UTF-8 bytes
//!     config_id bytea NOT NULL, -- the config id's: the key's order is byte order
//!     config    text NOT NULL,  -- the config's compact JSON text, exactly as saved
//!     CONSTRAINT toolnexus_tasks_push_pkey PRIMARY KEY (task_id, config_id)
//! );
//! ```
//!
//! A Task's `delete` removes its configs in the same statement.
//!
//! Every save is one statement that also returns the new version; a conditional save
//! (`save_versioned` with [`Expect::Absent`](toolnexus_core::Expect::Absent) or
//! [`Expect::Version`](toolnexus_core::Expect::Version)) is atomic against every
//! other writer of the table, whatever process it is in. A listing is one statement: a keyset
//! page in list order through one of the `_listed` indexes, and the count of the matches.
//!
//! Fidelity: a Task comes back equal as JSON to what was saved, always. jsonb keeps members in
//! its own order (shorter keys first) and drops insignificant whitespace, which JSON equality
//! ignores; it respells some numbers (`-0.0` becomes `0.0`, `1e-3` becomes `0.001`) and cannot
//! hold U+0000 at all. A Task with such a number or character keeps its exact JSON text in
//! `exact` (and `task` holds it with U+0000 replaced by U+FFFD), so nothing a caller can build
//! is refused or changed.
//!
//! `toolnexus::resolve_store` hands this crate every `postgres://` selector
//! ([`builder_from_selector`]); the trait, `Task` and the errors come from `toolnexus-core`.
//!
//! Calls run on a small Tokio runtime the store owns (the driver's connections live there), so
//! the store works from any runtime, or none at construction, and dropping it never blocks.
//!
//! TLS: rustls (the *ring* provider), with libpq's `sslmode` (`disable`, `prefer` — the
//! default —, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file of CA
//! certificates, or `system`), with libpq's meanings; see the `tls` module and
//! `docs/postgres.md`.

mod builder;
mod errors;
mod pool;
mod push_configs;
mod push_schema;
mod push_sql;
mod save_row;
mod schema;
mod selector;
mod statements;
mod store;
mod table_name;
mod task_store;
mod tls;

pub use builder::{DEFAULT_TABLE, PostgresTaskStoreBuilder};
pub use selector::{POSTGRES_OPTIONS, builder_from_selector, redact};
pub use store::PostgresTaskStore;
