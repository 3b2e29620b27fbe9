//! Push-notification configs in the table beside the Tasks (`<table>_push_configs`): each
//! operation one statement by primary key (task id, config id), run on the store's runtime
//! within the call timeout. The `TaskStore` methods in `task_store.rs` call these.
//!
//! Every row read is checked: its text must be a config (`PushConfig::from_json`) with the
//! config id of its row, or the read is `Corrupt`, naming the table and both ids; a listing
//! never skips a bad row.

use crate::pool::{OnLost, Shared, with_client};
use crate::store::PostgresTaskStore;
use toolnexus_core::{PushConfig, StoreError, check_config_id, check_id};

impl PostgresTaskStore {
    /// Inserts the config, or replaces the Task's config with its id. Never retried once sent:
    /// a retry after a lost answer could replace a config another client saved meanwhile.
    pub(crate) async fn upsert_push_config(
        &self,
        task_id: &str,
        config: &PushConfig,
    ) -> Result<(), StoreError> {
        check_id(task_id)?;
        let (task_id, config) = (task_id.to_owned(), config.clone());
        self.run(move |shared| async move {
            with_client(&shared, OnLost::Unknown, |client| {
                let sql = &shared.sql.push.upsert;
                let (task_id, config_id) = (task_id.as_bytes(), config.id().as_bytes());
                let text = config.as_json();
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        client
                            .execute(&statement, &[&task_id, &config_id, &text])
                            .await
                    }
                    .await;
                    (client, result)
                }
            })
            .await
            .map(drop)
        })
        .await
    }

    pub(crate) async fn select_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<Option<PushConfig>, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        self.run(move |shared| async move {
            let text: Option<String> = with_client(&shared, OnLost::Retry, |client| {
                let sql = &shared.sql.push.get;
                let (task_id, config_id) = (task_id.as_bytes(), config_id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let row = client
                            .query_opt(&statement, &[&task_id, &config_id])
                            .await?;
                        Ok(row.map(|row| row.get(0)))
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            text.map(|text| read_config(&shared, task_id.as_bytes(), config_id.as_bytes(), &text))
                .transpose()
        })
        .await
    }

    /// Every config of the Task, by config id in byte order (the key's order: `bytea`).
    pub(crate) async fn select_push_configs(
        &self,
        task_id: &str,
    ) -> Result<Vec<PushConfig>, StoreError> {
        check_id(task_id)?;
        let task_id = task_id.to_owned();
        self.run(move |shared| async move {
            let rows: Vec<(Vec<u8>, String)> = with_client(&shared, OnLost::Retry, |client| {
                let (sql, task_id) = (&shared.sql.push.list, task_id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        let rows = client.query(&statement, &[&task_id]).await?;
                        Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            rows.iter()
                .map(|(config_id, text)| read_config(&shared, task_id.as_bytes(), config_id, text))
                .collect()
        })
        .await
    }

    /// Removes the config: `true` if there was one. Not retried on a lost connection: the
    /// first attempt may have removed it, and the retry would then answer `false`.
    pub(crate) async fn remove_push_config(
        &self,
        task_id: &str,
        config_id: &str,
    ) -> Result<bool, StoreError> {
        check_id(task_id)?;
        check_config_id(config_id)?;
        let (task_id, config_id) = (task_id.to_owned(), config_id.to_owned());
        self.run(move |shared| async move {
            let removed = with_client(&shared, OnLost::Unknown, |client| {
                let sql = &shared.sql.push.delete;
                let (task_id, config_id) = (task_id.as_bytes(), config_id.as_bytes());
                async move {
                    let result = async {
                        let statement = client.prepare_cached(sql).await?;
                        client.execute(&statement, &[&task_id, &config_id]).await
                    }
                    .await;
                    (client, result)
                }
            })
            .await?;
            Ok(removed > 0)
        })
        .await
    }
}

/// A stored row back into a config: it must be one, with the config id of its row.
fn read_config(
    shared: &Shared,
    task_id: &[u8],
    config_id: &[u8],
    text: &str,
) -> Result<PushConfig, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        location: format!(
            "{} push config table {} row (task {:?}, config {:?})",
            shared.describe,
            shared.sql.push.table,
            String::from_utf8_lossy(task_id),
            String::from_utf8_lossy(config_id)
        ),
        reason,
    };
    let config = PushConfig::from_json(text).map_err(|e| corrupt(e.to_string()))?;
    if config.id().as_bytes() != config_id {
        return Err(corrupt(format!(
            "the row holds the config {:?}",
            config.id()
        )));
    }
    Ok(config)
}
