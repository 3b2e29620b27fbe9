//! `store-user`: a component that imports the task store (`toolnexus:task-store/store` and
//! `catalog`, the current contract) the way an agent's own component would, and exports `run(case)`, which
//! checks one behaviour of the contract through those imports and answers `err` with what went
//! wrong. The host test runs every case against every backend it serves the imports from.
//!
//! Each case uses ids of its own (`<case>-…`), so the cases can share one store in any order.
//! One more case, `limits`, checks the host's caps on what the imports take and give (a Task
//! over 16 MiB, a page over 16 MiB); the host test runs it on the memory backend only.

// The host serves the store imports at the current contract (`host/wasm/src/embed/`).
wit_bindgen::generate!({
    path: "../../wit",
    inline: "
        package toolnexus:store-user;

        world store-user {
            import toolnexus:task-store/store@0.4.0;
            import toolnexus:task-store/catalog@0.4.0;
            /// Checks one behaviour (`CASES` in the source) through the imports.
            export run: func(case: string) -> result<_, string>;
        }
    ",
    world: "toolnexus:store-user/store-user",
    generate_all,
});

use toolnexus::task_store::catalog::{self, ListQuery};
use toolnexus::task_store::store::{self, Condition, StoreError};

/// The cases `run` knows.
pub const CASES: [&str; 7] = [
    "miss",
    "round-trip",
    "upsert",
    "versions",
    "list",
    "delete",
    "invalid",
];

struct StoreUser;

impl Guest for StoreUser {
    fn run(case: String) -> Result<(), String> {
        match case.as_str() {
            "miss" => miss(),
            "round-trip" => round_trip(),
            "upsert" => upsert(),
            "versions" => versions(),
            "list" => list(),
            "delete" => delete(),
            "invalid" => invalid(),
            // Not in `CASES`: its Tasks are large, so the host test runs it on one backend.
            "limits" => limits(),
            other => Err(format!("no case {other:?}; cases: {CASES:?}")),
        }
    }
}

export!(StoreUser);

fn task(id: &str, marker: &str) -> String {
    format!(
        r#"{{"id":"{id}","contextId":"store-user","status":{{"state":"working"}},"marker":"{marker}","big":123456789012345678901234567890}}"#
    )
}

fn get(id: &str) -> Result<Option<store::StoredTask>, String> {
    store::get(id).map_err(|e| format!("get({id}) failed: {e:?}"))
}

fn save(text: &str, condition: Condition) -> Result<u64, String> {
    store::save(text, condition).map_err(|e| format!("save({text}) failed: {e:?}"))
}

/// The stored Task must carry `marker` (compared as text: the host passes Task text through).
fn expect_marker(id: &str, marker: &str, version: u64) -> Result<(), String> {
    let stored = get(id)?.ok_or_else(|| format!("{id} is missing after a save"))?;
    let wanted = format!(r#""marker":"{marker}""#);
    if !stored.task.contains(&wanted) || !stored.task.contains(&format!(r#""id":"{id}""#)) {
        return Err(format!(
            "{id} came back as {}, not with {wanted}",
            stored.task
        ));
    }
    if !stored.task.contains("123456789012345678901234567890") {
        return Err(format!("{id} lost its big number: {}", stored.task));
    }
    if stored.version != version {
        return Err(format!(
            "{id} is at version {}, not {version}",
            stored.version
        ));
    }
    Ok(())
}

fn miss() -> Result<(), String> {
    match get("miss-nothing")? {
        None => Ok(()),
        Some(found) => Err(format!("a miss returned {}", found.task)),
    }
}

fn round_trip() -> Result<(), String> {
    let version = save(&task("round-trip-1", "a"), Condition::Any)?;
    if version != 1 {
        return Err(format!("the first save returned version {version}, not 1"));
    }
    expect_marker("round-trip-1", "a", 1)
}

fn upsert() -> Result<(), String> {
    save(&task("upsert-1", "first"), Condition::Any)?;
    let version = save(&task("upsert-1", "second"), Condition::Any)?;
    if version != 2 {
        return Err(format!("the second save returned version {version}, not 2"));
    }
    expect_marker("upsert-1", "second", 2)
}

fn versions() -> Result<(), String> {
    let id = "versions-1";
    let created = save(&task(id, "created"), Condition::Absent)?;
    if created != 1 {
        return Err(format!(
            "create-if-absent returned version {created}, not 1"
        ));
    }
    match store::save(&task(id, "again"), Condition::Absent) {
        Err(StoreError::Conflict(conflict)) if conflict.current == Some(1) => {}
        other => return Err(format!("a second create-if-absent answered {other:?}")),
    }
    let next = save(&task(id, "next"), Condition::Version(1))?;
    if next != 2 {
        return Err(format!("a save on version 1 returned {next}, not 2"));
    }
    match store::save(&task(id, "stale"), Condition::Version(1)) {
        Err(StoreError::Conflict(conflict)) if conflict.current == Some(2) => {}
        other => return Err(format!("a save on a stale version answered {other:?}")),
    }
    match store::save(&task("versions-none", "x"), Condition::Version(1)) {
        Err(StoreError::Conflict(conflict)) if conflict.current.is_none() => {}
        other => return Err(format!("a save on a version of nothing answered {other:?}")),
    }
    if get("versions-none")?.is_some() {
        return Err("a refused conditional save wrote its Task".into());
    }
    expect_marker(id, "next", 2)
}

fn list() -> Result<(), String> {
    for n in 0..3 {
        save(
            &task(&format!("list-{n}"), "listed").replace("store-user", "store-user-list"),
            Condition::Any,
        )?;
    }
    let mut seen = Vec::new();
    let mut page_token = None;
    let mut total = None;
    loop {
        let page = catalog::list(&ListQuery {
            context_id: Some("store-user-list".into()),
            state: None,
            status_timestamp_after: None,
            page_size: 2,
            page_token: page_token.take(),
        })
        .map_err(|e| format!("list failed: {e:?}"))?;
        total.get_or_insert(page.total_size);
        seen.extend(page.tasks);
        match page.next_page_token {
            Some(token) => page_token = Some(token),
            None => break,
        }
        if seen.len() > 10 {
            return Err("list does not end".into());
        }
    }
    if seen.len() != 3 || total != Some(3) {
        return Err(format!(
            "list saw {} Tasks (total {total:?}), not 3",
            seen.len()
        ));
    }
    for n in 0..3 {
        let id = format!(r#""id":"list-{n}""#);
        if !seen.iter().any(|text| text.contains(&id)) {
            return Err(format!("list missed list-{n}: {seen:?}"));
        }
    }
    match catalog::list(&ListQuery {
        context_id: None,
        state: None,
        status_timestamp_after: Some("yesterday".into()),
        page_size: 0,
        page_token: None,
    }) {
        Err(StoreError::InvalidInput(_)) => {}
        other => {
            return Err(format!(
                "a timestamp that is not RFC 3339 answered {other:?}"
            ));
        }
    }
    match catalog::list(&ListQuery {
        context_id: None,
        state: None,
        status_timestamp_after: None,
        page_size: 0,
        page_token: Some("not a token of this store".into()),
    }) {
        Err(StoreError::InvalidInput(_)) => Ok(()),
        other => Err(format!("a made-up page token answered {other:?}")),
    }
}

fn delete() -> Result<(), String> {
    save(&task("delete-1", "doomed"), Condition::Any)?;
    if !catalog::delete("delete-1").map_err(|e| format!("delete failed: {e:?}"))? {
        return Err("delete of a stored Task answered false".into());
    }
    if get("delete-1")?.is_some() {
        return Err("a deleted Task is still there".into());
    }
    if catalog::delete("delete-1").map_err(|e| format!("delete failed: {e:?}"))? {
        return Err("delete of a missing Task answered true".into());
    }
    let again = save(&task("delete-1", "reborn"), Condition::Any)?;
    if again != 1 {
        return Err(format!(
            "a Task saved after its delete is at version {again}, not 1"
        ));
    }
    Ok(())
}

fn invalid() -> Result<(), String> {
    for text in [
        "[1, 2]",
        r#"{"name": "no id"}"#,
        r#"{"id": ""}"#,
        r#"{"id": 7}"#,
        "{",
        "",
    ] {
        match store::save(text, Condition::Any) {
            Err(StoreError::InvalidInput(_)) => {}
            other => return Err(format!("save of {text:?} answered {other:?}")),
        }
    }
    match store::get("") {
        Err(StoreError::InvalidInput(_)) => {}
        other => return Err(format!("get of an empty id answered {other:?}")),
    }
    match catalog::delete("") {
        Err(StoreError::InvalidInput(_)) => Ok(()),
        other => Err(format!("delete of an empty id answered {other:?}")),
    }
}

/// A save of a Task over 16 MiB is refused; a listing whose Tasks together pass 16 MiB comes in
/// pages of at most 16 MiB that together hold every Task.
fn limits() -> Result<(), String> {
    const CAP: usize = 16 << 20;
    let big = task("limits-big", &"x".repeat(CAP));
    match store::save(&big, Condition::Any) {
        Err(StoreError::InvalidInput(why)) if why.contains("bytes a save takes") => {}
        other => return Err(format!("a save of {} bytes answered {other:?}", big.len())),
    }
    if get("limits-big")?.is_some() {
        return Err("the oversized Task was stored".into());
    }
    let pad = "y".repeat(6 << 20);
    for n in 0..3 {
        let text = task(&format!("limits-{n}"), &pad).replace("store-user", "store-user-limits");
        store::save(&text, Condition::Any).map_err(|e| format!("save of limits-{n}: {e:?}"))?;
    }
    let (mut seen, mut pages, mut page_token) = (0, 0, None);
    loop {
        let page = catalog::list(&ListQuery {
            context_id: Some("store-user-limits".into()),
            state: None,
            status_timestamp_after: None,
            page_size: 3,
            page_token: page_token.take(),
        })
        .map_err(|e| format!("list failed: {e:?}"))?;
        let bytes: usize = page.tasks.iter().map(String::len).sum();
        if bytes > CAP {
            return Err(format!("a page of {bytes} bytes came back"));
        }
        seen += page.tasks.len();
        pages += 1;
        match page.next_page_token {
            Some(token) if pages < 10 => page_token = Some(token),
            Some(_) => return Err("the listing does not end".into()),
            None => break,
        }
    }
    if seen != 3 || pages < 2 {
        return Err(format!("{seen} Tasks in {pages} pages, not 3 in 2 or more"));
    }
    Ok(())
}
