//! Tenants and owners: declared tenants are separate, undeclared ones refused, and owners see
//! only their own tasks.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn tenants_are_separate_and_undeclared_ones_refused() {
    let server = start(ServerConfig {
        service: ServiceConfig {
            tenants: ["acme".to_owned(), "beta".to_owned()].into(),
            ..Default::default()
        },
        ..Default::default()
    })
    .await;
    let (status, sent) = server
        .rest(
            "POST",
            "/acme/message:send",
            Some(json!({"message": message_v1("for acme")})),
        )
        .await;
    assert_eq!(status, 200, "{sent}");
    let id = sent["task"]["id"].as_str().unwrap();
    assert_eq!(
        server
            .rest("GET", &format!("/acme/tasks/{id}"), None)
            .await
            .0,
        200
    );
    assert_eq!(
        server
            .rest("GET", &format!("/beta/tasks/{id}"), None)
            .await
            .0,
        404
    );
    assert_eq!(
        server.rest("GET", &format!("/tasks/{id}"), None).await.0,
        404
    );
    let (_, beta) = server.rest("GET", "/beta/tasks", None).await;
    assert_eq!(beta["tasks"], json!([]), "{beta}");
    // JSON-RPC names the tenant in its params.
    let got = server
        .rpc("1.0", "GetTask", json!({"id": id, "tenant": "acme"}))
        .await;
    assert_eq!(got["result"]["id"], id, "{got}");
    let got = server
        .rpc("1.0", "GetTask", json!({"id": id, "tenant": "beta"}))
        .await;
    assert_eq!(got["error"]["code"], -32001, "{got}");
    // Stored in the tenant's namespace only.
    assert!(server.stores.get("t.acme").get(id).await.unwrap().is_some());
    assert!(server.stores.get("").get(id).await.unwrap().is_none());
    let (status, refused) = server.rest("GET", "/other/tasks", None).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tenant")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn owners_see_only_their_own_tasks() {
    let tokens =
        Tokens::parse("alice alice-token-0123456789\nbob bob-token-0123456789ab\n").unwrap();
    let server = start(ServerConfig {
        tokens: Some(Arc::new(tokens)),
        ..Default::default()
    })
    .await;
    let alice = Some("alice-token-0123456789");
    let bob = Some("bob-token-0123456789ab");
    let (status, anonymous) = server
        .rpc_as(
            "1.0",
            None,
            "SendMessage",
            json!({"message": message_v1("x")}),
        )
        .await;
    assert_eq!(status, 401, "{anonymous}");
    assert!(
        anonymous["error"]["message"]
            .as_str()
            .unwrap()
            .contains("bearer token")
    );
    let (status, _) = server
        .rpc_as(
            "1.0",
            Some("wrong-token-0123456789"),
            "ListTasks",
            json!({}),
        )
        .await;
    assert_eq!(status, 401);
    let (_, sent) = server
        .rpc_as(
            "1.0",
            alice,
            "SendMessage",
            json!({"message": message_v1("mine")}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (_, got) = server
        .rpc_as("1.0", alice, "GetTask", json!({"id": id}))
        .await;
    assert_eq!(got["result"]["id"], id.as_str());
    let (_, stolen) = server
        .rpc_as("1.0", bob, "GetTask", json!({"id": id}))
        .await;
    assert_eq!(stolen["error"]["code"], -32001, "{stolen}");
    let (_, cancel) = server
        .rpc_as("1.0", bob, "CancelTask", json!({"id": id}))
        .await;
    assert_eq!(cancel["error"]["code"], -32001, "{cancel}");
    let (_, listed) = server.rpc_as("1.0", bob, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"], json!([]), "{listed}");
    let (_, listed) = server.rpc_as("1.0", alice, "ListTasks", json!({})).await;
    assert_eq!(listed["result"]["tasks"].as_array().unwrap().len(), 1);
    // The card is public and declares the scheme.
    let card: Value = server
        .client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert!(
        server
            .stores
            .get("o.alice")
            .get(&id)
            .await
            .unwrap()
            .is_some()
    );
}
