//! Linear memories, tables and core instances are capped per instance, not per memory: a
//! component cannot multiply the memory cap by declaring many memories, nor take the host's
//! memory with thousands of tables or instances. The fixtures are store components written in
//! the component text format, each a minimal valid store (`get` answers "none") with the
//! shape under test.

use std::time::Duration;
use toolnexus::wasm::{CacheDir, ComponentSource, WasmTaskStore};
use toolnexus::wasm::{Sandboxed, SandboxedDir};
use toolnexus::{Limit, StoreError, TaskStore};

const PAGE: usize = 64 << 10;

/// The shape of a fixture: a first memory of `first` pages, then `extra` more memories of
/// `pages` pages each, `tables` tables of `table_elements` elements each, instantiated
/// `instances` times; its `get` first grows each extra memory by `grow` pages and each table by
/// `table_grow` elements, and traps if one of them cannot grow.
#[derive(Clone, Copy)]
struct Shape {
    first: u32,
    extra: u32,
    pages: u32,
    tables: u32,
    table_elements: u32,
    instances: u32,
    grow: u32,
    table_grow: u32,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            first: 1,
            extra: 0,
            pages: 1,
            tables: 0,
            table_elements: 1,
            instances: 1,
            grow: 0,
            table_grow: 0,
        }
    }
}

/// A store component of `shape`.
fn component(shape: Shape) -> Vec<u8> {
    let Shape {
        first,
        extra,
        pages,
        tables,
        table_elements,
        instances,
        grow,
        table_grow,
    } = shape;
    let memories: String = (0..extra).map(|_| format!("(memory {pages})")).collect();
    let tables_text: String = (0..tables)
        .map(|_| format!("(table {table_elements} funcref)"))
        .collect();
    let mut grows: String = (1..=extra)
        .map(|m| {
            format!(
                "(if (i32.eq (memory.grow {m} (i32.const {grow})) (i32.const -1)) (then unreachable))"
            )
        })
        .collect();
    if table_grow > 0 {
        grows.extend((0..tables).map(|t| {
            format!(
                "(if (i32.eq (table.grow {t} (ref.null func) (i32.const {table_grow})) (i32.const -1)) (then unreachable))"
            )
        }));
    }
    let spare: String = (1..instances)
        .map(|_| "(core instance (instantiate $m))".to_owned())
        .collect();
    let text = format!(
        r#"(component
  (core module $m
    (memory (export "memory") {first})
    {memories}
    {tables_text}
    (global $next (mut i32) (i32.const 1024))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $p i32)
      (local.set $p (global.get $next))
      (global.set $next (i32.add (global.get $next) (local.get 3)))
      (local.get $p))
    (func (export "get") (param i32 i32) (result i32)
      {grows}
      (i64.store (i32.const 0) (i64.const 0))
      (i64.store (i32.const 8) (i64.const 0))
      (i32.const 0))
    (func (export "save") (param i32 i32 i32 i64) (result i32)
      (i64.store (i32.const 0) (i64.const 0))
      (i64.store (i32.const 8) (i64.const 1))
      (i32.const 0)))
  (core instance $i (instantiate $m))
  {spare}
  (type $version-conflict (record (field "current" (option u64)) (field "message" string)))
  (type $store-error (variant (case "invalid-input" string) (case "corrupt" string) (case "io" string) (case "conflict" $version-conflict) (case "outcome-unknown" string) (case "other" string)))
  (type $stored-task (record (field "task" string) (field "version" u64)))
  (type $condition (variant (case "any") (case "absent") (case "version" u64)))
  (func $get (param "id" string) (result (result (option $stored-task) (error $store-error)))
    (canon lift (core func $i "get") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (func $save (param "task" string) (param "condition" $condition) (result (result u64 (error $store-error)))
    (canon lift (core func $i "save") (memory (core memory $i "memory")) (realloc (core func $i "realloc"))))
  (instance $store
    (export "version-conflict" (type $version-conflict))
    (export "store-error" (type $store-error))
    (export "stored-task" (type $stored-task))
    (export "condition" (type $condition))
    (export "get" (func $get))
    (export "save" (func $save)))
  (export "toolnexus:task-store/store@0.4.0" (instance $store)))"#
    );
    wat::parse_str(text).expect("the fixture is valid WAT")
}

fn build(bytes: Vec<u8>) -> Result<WasmTaskStore, StoreError> {
    let tmp = tempfile::tempdir().unwrap();
    WasmTaskStore::builder(ComponentSource::Bytes {
        name: "memories.wasm".into(),
        bytes: bytes.into(),
    })
    .cache(CacheDir::Off)
    .dir(tmp.path())
    .timeout(Duration::from_secs(10))
    .memory_limit(64 << 20)
    .build()
}

fn load_error(bytes: Vec<u8>) -> String {
    match build(bytes) {
        Ok(_) => panic!("the component loaded"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_with_a_few_memories_within_the_cap_works() {
    // 4 × 8 MiB, growing each by 4 MiB in `get`: 48 MiB in all, under 64 MiB.
    let store = build(component(Shape {
        extra: 4,
        pages: 128,
        grow: 64,
        ..Shape::default()
    }))
    .unwrap();
    assert_eq!(store.get("x").await.unwrap(), None);
}

#[test]
fn memories_that_together_pass_the_cap_are_refused_at_load() {
    // Four memories of 20 MiB: each under the 64 MiB cap, 80 MiB together.
    let msg = load_error(component(Shape {
        extra: 4,
        pages: (20 << 20) / PAGE as u32,
        ..Shape::default()
    }));
    assert!(msg.contains("memory limit of 67108864 bytes"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn memories_grown_together_past_the_cap_fail_the_call_with_the_memory_limit() {
    // Three memories of 1 page, each grown by 24 MiB in `get`: the third growth passes 64 MiB.
    let store = build(component(Shape {
        extra: 3,
        grow: (24 << 20) / PAGE as u32,
        ..Shape::default()
    }))
    .unwrap();
    let err = store.get("x").await.unwrap_err();
    assert!(
        toolnexus_conformance::is_limit(&err, Limit::Memory(64 << 20)),
        "{err}"
    );
}

#[test]
fn too_many_memories_tables_or_instances_are_refused_at_load() {
    for (what, bytes) in [
        (
            "memories",
            component(Shape {
                extra: 16,
                ..Shape::default()
            }),
        ),
        (
            "tables",
            component(Shape {
                tables: 65,
                ..Shape::default()
            }),
        ),
        (
            "instances",
            component(Shape {
                instances: 65,
                ..Shape::default()
            }),
        ),
    ] {
        let msg = load_error(bytes);
        assert!(msg.contains("instantiation failed"), "{what}: {msg}");
    }
}

/// What the host spends on one table element: a pointer.
const ELEMENT: usize = std::mem::size_of::<usize>();

#[test]
fn tables_that_together_pass_the_memory_cap_are_refused_at_load() {
    // 16 tables of 1 Mi elements: 128 MiB of host memory, each table under the 1 Mi element
    // cap, twice the 64 MiB memory cap together.
    let msg = load_error(component(Shape {
        tables: 16,
        table_elements: 1 << 20,
        ..Shape::default()
    }));
    assert!(msg.contains("memory limit of 67108864 bytes"), "{msg}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tables_grown_past_the_memory_cap_fail_the_call_with_the_memory_limit() {
    // 16 tables of one element, each grown by 768 Ki elements (6 MiB) in `get`: 96 MiB in
    // all, past the 64 MiB cap from the eleventh table on.
    let store = build(component(Shape {
        tables: 16,
        table_grow: 768 << 10,
        ..Shape::default()
    }))
    .unwrap();
    let err = store.get("x").await.unwrap_err();
    assert!(
        toolnexus_conformance::is_limit(&err, Limit::Memory(64 << 20)),
        "{err}"
    );
    // A store whose tables and memories fit the cap together works.
    let fits = build(component(Shape {
        tables: 4,
        table_grow: (4 << 20) / ELEMENT as u32,
        extra: 1,
        grow: (16 << 20) / PAGE as u32,
        ..Shape::default()
    }))
    .unwrap();
    assert_eq!(fits.get("x").await.unwrap(), None);
}
