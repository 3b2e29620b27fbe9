//! Hostile JSON through every reader: generated documents (lone surrogates, bad escapes, deep
//! nesting, invalid UTF-8, byte-order marks, duplicate and odd ids, huge numbers, trailing
//! bytes) placed where a Task file goes, then read by the native file store and the file-store
//! component (`get` and `list`), and given to `Task::from_json_text` (what a PostgreSQL row or
//! a component answer goes through). Whatever the bytes, no reader panics, all of them agree,
//! and a Task that is returned is whole: every accessor works on it.

use proptest::prelude::*;
use serde_json::Value;
use std::sync::OnceLock;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{FileTaskStore, ListQuery, StoreError, Task, TaskStore};

/// Pieces a hostile writer puts in a Task file.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(r#""\ud800""#.to_owned()),
        Just(r#""\udc00\ud800""#.to_owned()),
        Just(r#""\ud83d\ude00""#.to_owned()),
        Just(r#""\x""#.to_owned()),
        Just(r#""\u12""#.to_owned()),
        Just("\"\u{0}\"".to_owned()),
        Just("\"\t\"".to_owned()),
        Just("1e999999".to_owned()),
        Just("-0".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        Just("NaN".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
        (1usize..200).prop_map(|n| format!("{}0{}", "[".repeat(n), "]".repeat(n))),
        (1usize..200).prop_map(|n| format!("{}1{}", "[".repeat(n), "]".repeat(n - 1))),
        "[a-z\\\\\"{}\\[\\]:,0-9 ]{0,12}",
    ]
}

/// A document: mostly Task-shaped, with hostile members, ids and framing.
fn document() -> impl Strategy<Value = Vec<u8>> {
    let id = prop_oneof![
        Just(r#""t""#.to_owned()),
        Just(r#""t""#.to_owned()),
        Just(r#""\u0074""#.to_owned()),
        Just(r#""other""#.to_owned()),
        Just("7".to_owned()),
        Just("null".to_owned()),
        Just(r#""t\ud800""#.to_owned()),
    ];
    let members = prop::collection::vec(("[a-z]{1,3}", fragment()), 0..4);
    let framing = prop_oneof![
        Just((Vec::new(), Vec::new())),
        Just((Vec::new(), Vec::new())),
        Just((b"\xef\xbb\xbf".to_vec(), Vec::new())),
        Just((Vec::new(), b"\n".to_vec())),
        Just((Vec::new(), b" x".to_vec())),
        Just((Vec::new(), b"\xff".to_vec())),
        Just((Vec::new(), b"{}".to_vec())),
    ];
    (id, members, prop::bool::ANY, framing).prop_map(|(id, members, id_again, (pre, post))| {
        let mut body = format!("{{\"id\":{id}");
        for (key, value) in members {
            body.push_str(&format!(",\"{key}\":{value}"));
        }
        if id_again {
            body.push_str(r#","id":"t""#);
        }
        body.push('}');
        let mut bytes = pre;
        bytes.extend_from_slice(body.as_bytes());
        bytes.extend_from_slice(&post);
        bytes
    })
}

/// What a reader made of the document: the Task's text, `None` for a miss, or an error.
fn outcome(result: Result<Option<Task>, StoreError>) -> Result<Option<Value>, String> {
    match result {
        Ok(Some(task)) => {
            // Construction guaranteed validity: every accessor works.
            assert_eq!(task.id(), "t");
            let map = task.as_map().clone();
            let value = task.clone().into_value();
            assert_eq!(Value::Object(map), value);
            let again = Task::from_json(&task.to_json()).expect("a Task's own JSON reads back");
            assert_eq!(again, task);
            Ok(Some(value))
        }
        Ok(None) => Ok(None),
        Err(e) => {
            assert!(
                matches!(e, StoreError::Corrupt { .. }),
                "a bad file is corrupt, not {e:?}"
            );
            Err("corrupt".into())
        }
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn no_reader_panics_and_all_agree(bytes in document()) {
        runtime().block_on(async {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::write(tmp.path().join("t.json"), &bytes).unwrap();
            let native = FileTaskStore::new(tmp.path()).unwrap();
            let component = WasmTaskStore::file_store(tmp.path()).unwrap();

            // The text constructor decides what is a Task with id "t".
            let text = String::from_utf8(bytes.clone());
            let expected = match text.map(Task::from_json_text) {
                Ok(Ok(task)) if task.id() == "t" => Ok(Some(task.into_value())),
                _ => Err("corrupt".to_owned()),
            };

            let from_native = outcome(native.get("t").await);
            let from_component = outcome(component.get("t").await);
            assert_eq!(&from_native, &expected, "native get of {:?}", String::from_utf8_lossy(&bytes));
            assert_eq!(&from_component, &expected, "component get of {:?}", String::from_utf8_lossy(&bytes));

            for (name, store) in [("native", &native as &dyn TaskStore), ("component", &component)] {
                match (store.list(&ListQuery::default()).await, &expected) {
                    (Ok(page), Ok(Some(value))) => {
                        assert_eq!(page.tasks.len(), 1, "{name}");
                        assert_eq!(&page.tasks[0].clone().into_value(), value, "{name}");
                    }
                    (Err(e), Err(_)) => {
                        assert!(matches!(e, StoreError::Corrupt { .. }), "{name}: {e:?}");
                    }
                    (got, want) => panic!(
                        "{name} list of {:?}: got {got:?}, expected {want:?}",
                        String::from_utf8_lossy(&bytes)
                    ),
                }
            }
        });
    }
}
