//! The echo agent suite (`toolnexus_conformance::agent_suite`) against the agents that must pass
//! it, each served over real HTTP: the native `EchoAgent` (the reference), the Rust echo
//! component (`guest/agent-echo`, embedded in the host as `wasm:echo`), and the echo agent
//! written in JavaScript (`js/agent/`, componentize-js), loaded by the wasm host from a `wasm:`
//! agent selector as `tnstore serve --agent` loads it.
//!
//! The JavaScript agent needs Node.js 20+ and npm to build (`toolnexus_conformance::node`):
//! without them its tests print a skip message and pass, unless `TOOLNEXUS_REQUIRE_NODE=1`.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;
use toolnexus::wasm::agent::agent_from_selector;
use toolnexus_a2a::{Agent, EchoAgent};
use toolnexus_conformance::agent_suite::{
    ECHO_SUITE_DELAY, echo_agent_suite, echo_agent_suite_without_delay,
};
use toolnexus_conformance::node::{js, run};

/// The agent a `wasm:` agent selector names, built off the async workers (compiling blocks).
async fn wasm_agent(selector: String) -> Arc<dyn Agent> {
    let agent = tokio::task::spawn_blocking(move || {
        agent_from_selector(&selector)
            .unwrap_or_else(|e| panic!("{selector} does not load as an agent: {e}"))
    })
    .await
    .unwrap();
    Arc::new(agent)
}

/// The JavaScript echo agent with `delay-ms`, its compiled form cached beside the JavaScript
/// store's; `None` (skipped) without Node.js.
async fn js_agent(delay: Duration) -> Option<Arc<dyn Agent>> {
    let js = tokio::task::spawn_blocking(js).await.unwrap()?;
    let selector = format!(
        "wasm:{}?delay-ms={}&cache={}",
        js.agent_wasm.display(),
        delay.as_millis(),
        js.cache.display()
    );
    Some(wasm_agent(selector).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_native_echo_agent_passes_the_suite() {
    echo_agent_suite(Arc::new(EchoAgent {
        delay: ECHO_SUITE_DELAY,
    }))
    .await;
    echo_agent_suite_without_delay(Arc::new(EchoAgent {
        delay: Duration::ZERO,
    }))
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rust_echo_component_passes_the_suite() {
    let delay_ms = ECHO_SUITE_DELAY.as_millis();
    echo_agent_suite(wasm_agent(format!("wasm:echo?delay-ms={delay_ms}")).await).await;
    echo_agent_suite_without_delay(wasm_agent("wasm:echo".into()).await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_javascript_echo_agent_passes_the_suite() {
    let Some(agent) = js_agent(ECHO_SUITE_DELAY).await else {
        return;
    };
    echo_agent_suite(agent).await;
    let Some(agent) = js_agent(Duration::ZERO).await else {
        return;
    };
    echo_agent_suite_without_delay(agent).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_javascript_echo_agent_refuses_a_bad_delay() {
    let Some(js) = tokio::task::spawn_blocking(js).await.unwrap() else {
        return;
    };
    let selector = format!(
        "wasm:{}?delay-ms=soon&cache={}",
        js.agent_wasm.display(),
        js.cache.display()
    );
    let loaded = tokio::task::spawn_blocking(move || agent_from_selector(&selector))
        .await
        .unwrap();
    let Err(err) = loaded else {
        panic!("a delay that is no number is refused at start");
    };
    let message = err.to_string();
    assert!(
        message.contains("delay-ms must be a whole number of milliseconds, not \"soon\""),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_javascript_echo_agent_passes_its_node_unit_tests() {
    let Some(js) = tokio::task::spawn_blocking(js).await.unwrap() else {
        return;
    };
    // The component tests find the agent where the harness built it (`<target>/js/agent/`).
    let target = js
        .agent_wasm
        .ancestors()
        .nth(3)
        .expect("<target>/js/agent/<file>");
    let mut node = Command::new(&js.node);
    node.current_dir(&js.js_dir)
        .env("CARGO_TARGET_DIR", target)
        .args(["--test", "agent/test/"]);
    let out = tokio::task::spawn_blocking(move || run(&mut node))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("# fail 0"), "{out}");
    assert!(!out.contains("# pass 0\n"), "{out}");
}
