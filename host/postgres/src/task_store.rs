//! [`TaskStore`] over the table: each operation one statement by primary key (a listing: one
//! keyset page and its total), run on the store's runtime within the call timeout. Push
//! configs are in the table beside it (`push_configs.rs`).

use crate::pool::{OnLost, Shared, with_client};
use crate::save_row::SaveRow;
use crate::statements::{CursorShape, ListShape};
use crate::store::PostgresTaskStore;
use tokio_postgres::types::ToSql;
use toolnexus_core::state::normalize_state;
use toolnexus_core::{
    Expect, ListQuery, PushConfig, StoreError, StoreUsage, Task, TaskPage, TaskStore, check_id,
};
use toolnexus_format::query::{SortKey, Timestamp};

#[async_trait::async_trait]
impl TaskStore for PostgresTaskStore {
    async fn get(&self, id: &str) -> Result<Option<Task>, StoreError> {
        Ok(self.get_versioned(id).await?.map(|(task, _)| task))
    }

    /// One statement, by primary key.
    fn supports_versions(&self) -> bool {
        true
    }

    async fn get_versioned(&self, id: &str) -> Result<Option<(Task, u64)>, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.run(move |shared| async move {
            let row: Option<(String, i64)> = with_client(&shared, OnLost::Retry, |client| {
                let (sql, id) = (&shared.sql.get, id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let row = client.query_opt(&statement, &[&id]).await?;
                        Ok(row.map(|row| (row.get(0), row.get(1))))
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            row.map(|(text, version)| {
                let id = id.as_bytes();
                Ok((
                    read_task(&shared, id, &text)?,
                    read_version(&shared, id, version)?,
                ))
            })
            .transpose()
        })
        .await
    }

    async fn save(&self, task: &Task) -> Result<(), StoreError> {
        self.save_versioned(task, Expect::Any).await.map(|_| ())
    }

    /// One statement: `INSERT … ON CONFLICT (id) DO UPDATE SET version = version + 1` for
    /// [`Expect::Any`], `INSERT … ON CONFLICT (id) DO NOTHING` for [`Expect::Absent`],
    /// `UPDATE … WHERE id = $1 AND version = $v` for [`Expect::Version`], each `RETURNING
    /// version`. No row back: another writer got there first, and the current version is read
    /// for the [`StoreError::Conflict`]. A save is never retried once sent: a connection lost
    /// after that answers [`StoreError::OutcomeUnknown`] (the first attempt may have
    /// committed, and a retry would undo a save another client made meanwhile).
    async fn save_versioned(&self, task: &Task, expect: Expect) -> Result<u64, StoreError> {
        let task = task.clone();
        self.run(move |shared| async move {
            let row = SaveRow::of(&task);
            let id = task.id().as_bytes();
            let mut attempts = 0;
            loop {
                attempts += 1;
                let written = write(&shared, &row, &task, expect).await?;
                if let Some(version) = written {
                    return read_version(&shared, id, version);
                }
                let current: Option<i64> = with_client(&shared, OnLost::Retry, |client| {
                    let sql = &shared.sql.version;
                    async move {
                        let result = async {
                            let statement = client.prepare_cached(sql).await?;
                            let row = client.query_opt(&statement, &[&id]).await?;
                            Ok(row.map(|row| row.get(0)))
                        }
                        .await;
                        (client, result)
                    }
                })
                .await?;
                let current = current
                    .map(|version| read_version(&shared, id, version))
                    .transpose()?;
                // The write missed, but what is stored now is what it expected: the row changed
                // between the two statements (a delete, a re-creation). Try again, a few times.
                // (A plain save never misses, so it never gets here.)
                let holds = expect != Expect::Any && expect.holds(current);
                if !holds || attempts == 3 {
                    return Err(StoreError::Conflict {
                        id: task.id().to_owned(),
                        expected: expect,
                        current,
                    });
                }
            }
        })
        .await
    }

    /// One statement: the page, keyset-paginated on (status timestamp, id) through an index in
    /// list order (see `Sql::list`), and the number of matching Tasks, from one snapshot.
    async fn list(&self, query: &ListQuery) -> Result<TaskPage, StoreError> {
        let cursor = query.cursor().map_err(|e| StoreError::InvalidQuery {
            reason: e.to_string(),
        })?;
        let query = query.clone();
        self.run(move |shared| async move {
            let limit = query.limit();
            let shape = ListShape {
                context: query.context_id.is_some(),
                state: query.state.is_some(),
                after: query.status_timestamp_after.is_some(),
                cursor: match &cursor {
                    None => CursorShape::Start,
                    Some(SortKey {
                        timestamp: Some(_), ..
                    }) => CursorShape::Timed,
                    Some(SortKey {
                        timestamp: None, ..
                    }) => CursorShape::Untimed,
                },
            };
            let sql = shared.sql.list(shape);
            let mut params: Vec<Box<dyn ToSql + Sync + Send>> = Vec::with_capacity(6);
            params.push(Box::new(i64::try_from(limit + 1).unwrap_or(i64::MAX)));
            if let Some(context) = &query.context_id {
                params.push(Box::new(context.as_bytes().to_vec()));
            }
            if let Some(state) = &query.state {
                params.push(Box::new(normalize_state(state).into_bytes()));
            }
            if let Some(after) = query.status_timestamp_after {
                params.push(Box::new(after.unix_nanos().to_string()));
            }
            if let Some(cursor) = &cursor {
                if let Some(timestamp) = cursor.timestamp {
                    params.push(Box::new(timestamp.unix_nanos().to_string()));
                }
                params.push(Box::new(cursor.id.as_bytes().to_vec()));
            }
            type PageRow = (i64, Option<Vec<u8>>, Option<String>, Option<String>);
            let rows: Vec<PageRow> = with_client(&shared, OnLost::Retry, |client| {
                let (sql, params) = (&sql, &params);
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let params: Vec<&(dyn ToSql + Sync)> = params
                            .iter()
                            .map(|p| p.as_ref() as &(dyn ToSql + Sync))
                            .collect();
                        let rows = client.query(&statement, &params).await?;
                        Ok(rows
                            .iter()
                            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                            .collect())
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            let total = rows.first().map_or(0, |row| row.0);
            let more = rows.len() > limit;
            let mut tasks = Vec::with_capacity(rows.len().min(limit));
            let mut last = None;
            for (_, id, text, ts) in rows.into_iter().take(limit) {
                // A row without an id is the empty page's (the total alone).
                let (Some(id), Some(text)) = (id, text) else {
                    continue;
                };
                let task = read_task(&shared, &id, &text)?;
                let timestamp = ts
                    .map(|ts| {
                        ts.parse::<i128>()
                            .map(Timestamp::from_unix_nanos)
                            .map_err(|_| corrupt(&shared, &id, format!("status_ts_ns is {ts}")))
                    })
                    .transpose()?;
                last = Some(SortKey {
                    timestamp,
                    id: task.id().to_owned(),
                });
                tasks.push(task);
            }
            Ok(TaskPage {
                tasks,
                next_page_token: last.filter(|_| more).map(|key| key.encode()),
                total_size: Some(u64::try_from(total).unwrap_or(0)),
            })
        })
        .await
    }

    /// One statement: the Task's push configs and the Task (`true` if there was a Task).
    async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        check_id(id)?;
        let id = id.to_owned();
        self.run(move |shared| async move {
            let deleted = with_client(&shared, OnLost::Unknown, |client| {
                let (sql, id) = (&shared.sql.delete, id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        client.execute(&statement, &[&id]).await
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(deleted > 0)
        })
        .await
    }

    /// One query over the whole table (`count(*)` and the sum of the stored texts' lengths).
    async fn usage(&self) -> Result<Option<StoreUsage>, StoreError> {
        self.run(move |shared| async move {
            let (tasks, bytes): (i64, i64) = with_client(&shared, OnLost::Retry, |client| {
                let sql = &shared.sql.usage;
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let row = client.query_one(&statement, &[]).await?;
                        Ok((row.try_get(0)?, row.try_get(1)?))
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(Some(StoreUsage {
                tasks: u64::try_from(tasks).unwrap_or(0),
                bytes: u64::try_from(bytes).unwrap_or(0),
            }))
        })
        .await
    }

    /// In the table `<table>_push_configs`, made beside the Task table at connect.
    fn supports_push_configs(&self) -> bool {
        true
    }

    /// One statement: `INSERT … ON CONFLICT (task_id, config_id) DO UPDATE`.
    async fn save_push_config(&self, task_id: &str, config: &PushConfig) -> Result<(), StoreError> {
        self.upsert_push_config(task_id, config).await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        self.select_push_config(task_id, config_id).await
    }

    async fn list_push_configs(&self, task_id: &str) -> Result<Vec<PushConfig>, StoreError> {
        self.select_push_configs(task_id).await
    }

    async fn delete_push_config(&self, task_id: &str, config_id: &str) -> Result<bool, StoreError> {
        self.remove_push_config(task_id, config_id).await
    }

    fn describe(&self) -> String {
        self.shared.describe.clone()
    }
}

/// The one write of a save: the new version, or `None` if what `expect` says is not stored.
async fn write(
    shared: &Shared,
    row: &SaveRow,
    task: &Task,
    expect: Expect,
) -> Result<Option<i64>, StoreError> {
    let expected_version = match expect {
        // No row has a version beyond i64: it cannot be stored.
        Expect::Version(v) => match i64::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => return Ok(None),
        },
        Expect::Any | Expect::Absent => None,
    };
    let sql = match expect {
        Expect::Any => &shared.sql.upsert,
        Expect::Absent => &shared.sql.insert_new,
        Expect::Version(_) => &shared.sql.replace,
    };
    with_client(shared, OnLost::Unknown, |client| async move {
        let result = async {
            let statement = client.prepare_cached(sql).await?;
            let (jsonb, exact) = row.task_columns(task);
            let id = task.id().as_bytes();
            let (context, state) = row.filter_columns();
            let ts = row.status_ts.as_deref();
            let mut params: Vec<&(dyn ToSql + Sync)> =
                vec![&id, &jsonb, &exact, &context, &state, &ts];
            if let Some(version) = &expected_version {
                params.push(version);
            }
            let row = client.query_opt(&statement, &params).await?;
            Ok(row.map(|row| row.get(0)))
        }
        .await;
        (client, result)
    })
    .await
}

/// A stored version as the trait's: never negative.
fn read_version(shared: &Shared, id: &[u8], version: i64) -> Result<u64, StoreError> {
    u64::try_from(version).map_err(|_| corrupt(shared, id, format!("version is {version}")))
}

fn corrupt(shared: &Shared, id: &[u8], reason: String) -> StoreError {
    StoreError::Corrupt {
        location: format!("{} row {:?}", shared.describe, String::from_utf8_lossy(id)),
        reason,
    }
}

/// A stored row back into a Task: it must be one, with the id of its row.
fn read_task(shared: &Shared, id: &[u8], text: &str) -> Result<Task, StoreError> {
    let corrupt = |reason: String| corrupt(shared, id, reason);
    let task = Task::from_json(text).map_err(|e| corrupt(e.to_string()))?;
    if task.id().as_bytes() != id {
        return Err(corrupt(format!("the row holds the Task {:?}", task.id())));
    }
    Ok(task)
}
