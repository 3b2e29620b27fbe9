//! Reference example 3 and every selector form of `resolve_store`.

use serde_json::json;
use std::any::Any;
use std::fs;
use std::sync::Arc;
use toolnexus::StoreError;
use toolnexus::wasm::FILE_STORE_COMPONENT;
use toolnexus::wasm::WasmTaskStore;
use toolnexus::{FileTaskStore, InMemoryTaskStore, TaskStore, resolve_store};
use toolnexus_conformance::{state, task};

fn is<T: 'static>(store: &Arc<dyn TaskStore>) -> bool {
    (&**store as &dyn Any).downcast_ref::<T>().is_some()
}

#[tokio::test]
async fn none_and_memory_give_an_in_memory_store() {
    assert!(is::<InMemoryTaskStore>(
        &resolve_store(None::<&str>).unwrap()
    ));
    let mem = resolve_store("memory").unwrap();
    assert!(is::<InMemoryTaskStore>(&mem));
    mem.save(&task(json!({"id": "x", "status": {"state": "submitted"}})))
        .await
        .unwrap();
    assert_eq!(state(&mem.get("x").await.unwrap().unwrap()), "submitted");
    // Each resolve is a new store.
    assert!(
        resolve_store("memory")
            .unwrap()
            .get("x")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn file_selector_gives_a_file_store_and_creates_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested/tasks");
    let store = resolve_store(format!("file:{}", dir.display())).unwrap();
    assert!(is::<FileTaskStore>(&store));
    assert!(dir.is_dir());
    store.save(&task(json!({"id": "f"}))).await.unwrap();
    assert!(dir.join("f.json").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn wasm_selector_loads_a_component_file_with_its_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let component = tmp.path().join("store.wasm");
    fs::write(&component, FILE_STORE_COMPONENT).unwrap();
    let dir = tmp.path().join("granted");
    let store = resolve_store(format!(
        "wasm:{}?dir={}",
        component.display(),
        dir.display()
    ))
    .unwrap();
    assert!(is::<WasmTaskStore>(&store));
    store
        .save(&task(json!({"id": "w", "status": {"state": "working"}})))
        .await
        .unwrap();
    assert!(
        dir.join("w.json").is_file(),
        "the component wrote into the granted directory"
    );
    // The same directory through the native store sees the same Task.
    let native = resolve_store(format!("file:{}", dir.display())).unwrap();
    assert_eq!(state(&native.get("w").await.unwrap().unwrap()), "working");
}

#[tokio::test(flavor = "multi_thread")]
async fn wasm_builtin_names_the_embedded_file_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = resolve_store(format!("wasm:builtin?dir={}", tmp.path().display())).unwrap();
    assert!(is::<WasmTaskStore>(&store));
    store.save(&task(json!({"id": "b"}))).await.unwrap();
    assert!(tmp.path().join("b.json").is_file());
}

#[tokio::test(flavor = "multi_thread")]
async fn wasm_without_dir_uses_the_default_data_dir() {
    // The default is relative to the current directory; the selector's component is absolute.
    let store = resolve_store("wasm:builtin").unwrap();
    let wasm = (&*store as &dyn Any)
        .downcast_ref::<WasmTaskStore>()
        .unwrap();
    let expected = std::env::current_dir()
        .unwrap()
        .join(toolnexus::DEFAULT_DATA_DIR);
    assert_eq!(wasm.dir(), expected.canonicalize().unwrap());
}

#[test]
fn an_already_built_store_passes_through_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let mine: Arc<dyn TaskStore> = Arc::new(FileTaskStore::new(tmp.path()).unwrap());
    let resolved = resolve_store(Arc::clone(&mine)).unwrap();
    assert!(Arc::ptr_eq(&mine, &resolved));
}

#[test]
fn unknown_selectors_are_loud_errors_quoting_the_selector() {
    for selector in [
        "nats://not-a-real-scheme",
        "redis:whatever",
        "",
        "Memory",
        "memory ",
        "files:/x",
        "s3://b",
    ] {
        let err = resolve_store(selector)
            .err()
            .unwrap_or_else(|| panic!("{selector:?} resolved"));
        let msg = err.to_string();
        assert!(
            matches!(err, StoreError::UnknownSelector(_)),
            "{selector:?}: {msg}"
        );
        assert!(msg.starts_with("Unknown A2A store"), "{msg}");
        assert!(
            msg.contains(&format!("{selector:?}")),
            "{msg} must quote {selector:?}"
        );
    }
}

/// A mistyped scheme still carries the password it was given: the error never shows it.
#[test]
fn an_unknown_selector_never_shows_a_password() {
    for (selector, shown) in [
        (
            "postgress://app:s3cret@db:5432/agents",
            "postgress://app:***@db:5432/agents",
        ),
        (
            "pg://db/agents?password=s3cret",
            "pg://db/agents?password=***",
        ),
    ] {
        let err = resolve_store(selector).err().expect("unknown scheme");
        let msg = err.to_string();
        assert!(matches!(err, StoreError::UnknownSelector(_)), "{msg}");
        assert!(!msg.contains("s3cret"), "{msg}");
        assert!(msg.contains(&format!("{shown:?}")), "{msg}");
    }
}

#[test]
fn malformed_known_selectors_say_what_is_wrong() {
    let cases = [
        ("file:", "no directory"),
        ("wasm:", "no component"),
        ("wasm:?dir=x", "no component"),
        ("wasm:builtin?dir=", "empty \"dir\""),
        ("wasm:builtin?colour=red", "unknown option \"colour\""),
        ("wasm:builtin?durability=fast", "full or relaxed"),
        ("wasm:builtin?dir", "no \"=value\""),
        ("wasm:builtin?instances=0", "positive integer"),
        ("wasm:builtin?memory-total=lots", "a size like 512MiB"),
        ("wasm:builtin?dir=a&dir=b", "twice"),
    ];
    for (selector, want) in cases {
        let err = resolve_store(selector)
            .err()
            .unwrap_or_else(|| panic!("{selector:?} resolved"));
        assert!(
            matches!(err, StoreError::InvalidSelector { .. }),
            "{selector:?}: {err}"
        );
        assert!(err.to_string().contains(want), "{selector:?}: {err}");
    }
}

fn load_error(bytes: Option<&[u8]>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.wasm");
    if let Some(bytes) = bytes {
        fs::write(&path, bytes).unwrap();
    }
    let selector = format!(
        "wasm:{}?dir={}",
        path.display(),
        tmp.path().join("d").display()
    );
    let err = resolve_store(selector)
        .err()
        .expect("a bad component must fail at resolve time");
    assert!(matches!(err, StoreError::Load { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("c.wasm"),
        "the error names the component: {msg}"
    );
    msg
}

#[test]
fn a_missing_component_fails_at_resolve_time() {
    assert!(load_error(None).contains("cannot read"));
}

#[test]
fn garbage_fails_at_resolve_time() {
    assert!(load_error(Some(b"definitely not wasm")).contains("not a WebAssembly file"));
}

#[test]
fn a_core_module_is_not_a_component() {
    // The smallest valid core module: magic and version 1.
    assert!(
        load_error(Some(b"\0asm\x01\0\0\0")).contains("core WebAssembly module, not a component")
    );
}

#[test]
fn a_component_of_another_world_is_refused() {
    // The smallest valid component: it exports nothing.
    assert!(
        load_error(Some(b"\0asm\x0d\0\x01\0"))
            .contains("not a component of the toolnexus:task-store world")
    );
}

#[test]
fn a_truncated_component_is_refused() {
    let half = &FILE_STORE_COMPONENT[..FILE_STORE_COMPONENT.len() / 2];
    assert!(load_error(Some(half)).contains("invalid component"));
}

fn wat_component(text: &str) -> Vec<u8> {
    wat::parse_str(text).expect("the fixture is valid WAT")
}

#[test]
fn an_incompatible_version_of_the_contract_is_named() {
    let bytes = wat_component(
        r#"(component
             (instance $store)
             (export "toolnexus:task-store/store@0.3.0" (instance $store)))"#,
    );
    let msg = load_error(Some(&bytes));
    assert!(msg.contains("toolnexus:task-store/store@0.3.0"), "{msg}");
    assert!(msg.contains("does not speak"), "{msg}");
    assert!(msg.contains("toolnexus:task-store/store@0.4.0"), "{msg}");
}

#[test]
fn a_component_that_needs_more_than_wasi_is_refused() {
    let bytes = wat_component(
        r#"(component
             (import "example:net/fetch@0.1.0" (instance (export "fetch" (func (param "url" string)))))
             (instance $store)
             (export "toolnexus:task-store/store@0.4.0" (instance $store)))"#,
    );
    let msg = load_error(Some(&bytes));
    assert!(
        msg.contains("needs imports this host does not grant"),
        "{msg}"
    );
}

#[test]
fn a_component_with_the_wrong_shape_of_store_is_refused() {
    // The right name, but no functions in it.
    let bytes = wat_component(
        r#"(component
             (instance $store)
             (export "toolnexus:task-store/store@0.4.0" (instance $store)))"#,
    );
    let msg = load_error(Some(&bytes));
    assert!(msg.contains("exports do not match"), "{msg}");
}

/// Compiling costs time and memory in proportion to a component's size: one larger than
/// `max-component` is refused before it is compiled (or read whole).
#[test]
fn a_component_larger_than_max_component_is_refused_before_compiling() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("big.wasm");
    fs::write(&path, FILE_STORE_COMPONENT).unwrap();
    let selector = |max: &str| {
        format!(
            "wasm:{}?dir={}&cache=off&max-component={max}",
            path.display(),
            tmp.path().join("d").display()
        )
    };
    let err = resolve_store(selector("100KiB"))
        .err()
        .expect("a component over the limit is refused");
    assert!(matches!(err, StoreError::Load { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("it is {} bytes", FILE_STORE_COMPONENT.len())),
        "{msg}"
    );
    assert!(msg.contains("more than the 102400 bytes"), "{msg}");
    assert!(resolve_store(selector("1MiB")).is_ok(), "within the limit");
}
