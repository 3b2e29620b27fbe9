//! Both protocol versions and both bindings: one task seen through each, the 0.3 HTTP+JSON
//! binding, and the agent card (both versions, cacheable by tag and date).

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn one_task_in_both_versions_and_both_bindings() {
    let server = start(ServerConfig::default()).await;
    // 1.0 JSON-RPC: blocking by default, wrapped, 1.0 spellings, no kinds.
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": message_v1("hello")}),
        )
        .await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(task["history"][0]["role"], "ROLE_USER");
    assert_eq!(task["history"][0]["parts"][0], json!({"text": "hello"}));
    assert_eq!(task["artifacts"][0]["parts"][0], json!({"text": "hello"}));
    assert!(task.get("kind").is_none() && task["history"][0].get("kind").is_none());
    let id = task["id"].as_str().unwrap();
    // The same Task through 0.3: kinds and 0.3 spellings.
    let old = server.rpc("", "tasks/get", json!({"id": id})).await;
    assert_eq!(old["result"]["kind"], "task", "{old}");
    assert_eq!(old["result"]["status"]["state"], "completed");
    assert_eq!(old["result"]["history"][0]["role"], "user");
    assert_eq!(
        old["result"]["artifacts"][0]["parts"][0],
        json!({"kind": "text", "text": "hello"})
    );
    // Stored once, in the 0.3 form.
    let stored = server.stores.get("").get(id).await.unwrap().unwrap();
    assert_eq!(stored.get("kind"), Some(&json!("task")));
    // HTTP+JSON: the same Task; historyLength 0 drops the history.
    let (status, rest) = server
        .rest("GET", &format!("/tasks/{id}?historyLength=0"), None)
        .await;
    assert_eq!(status, 200, "{rest}");
    assert_eq!(rest["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(rest.get("history").is_none(), "{rest}");
    // And on the 0.3 HTTP+JSON prefix too.
    let (status, _) = server.rest("GET", &format!("/v1/tasks/{id}"), None).await;
    assert_eq!(status, 200);
    // A 0.3 send waits for the outcome unless `blocking: false`, as the official SDKs do.
    let old_send = server
        .rpc(
            "",
            "message/send",
            json!({"message": {"role": "user", "messageId": "m03",
            "parts": [{"kind": "text", "text": "0.3"}]}}),
        )
        .await;
    assert_eq!(
        old_send["result"]["status"]["state"], "completed",
        "{old_send}"
    );
    // The version may come as a query parameter too.
    let (_, by_query) = server
        .rest("GET", &format!("/v1/tasks/{id}?A2A-Version=1.0"), None)
        .await;
    assert_eq!(
        by_query["status"]["state"], "TASK_STATE_COMPLETED",
        "{by_query}"
    );
    // Unknown fields of a message are not stored; protobuf field names are understood.
    let sent = server
        .rpc(
            "1.0",
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "message_id": "m-snake",
            "tckUnknownField": "x", "parts": [{"text": "y"}]}}),
        )
        .await;
    let history = &sent["result"]["task"]["history"][0];
    assert_eq!(history["messageId"], "m-snake", "{sent}");
    assert!(history.get("tckUnknownField").is_none(), "{sent}");
    // An unknown version is refused with -32009.
    let refused = server.rpc("2.0", "GetTask", json!({"id": id})).await;
    assert_eq!(refused["error"]["code"], -32009, "{refused}");
    assert_eq!(
        refused["error"]["data"][0]["reason"],
        "VERSION_NOT_SUPPORTED"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_card_speaks_both_versions() {
    let server = start(ServerConfig::default()).await;
    let card: Value = server
        .client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let interfaces = card["supportedInterfaces"].as_array().unwrap();
    let offered: Vec<(String, String)> = interfaces
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap().into(),
                i["protocolVersion"].as_str().unwrap().into(),
            )
        })
        .collect();
    for want in [("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3")] {
        assert!(offered.contains(&(want.0.into(), want.1.into())), "{card}");
    }
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(
        card["url"],
        format!("{}/", server.base),
        "the 0.3 field stays"
    );
    assert!(card.get("securitySchemes").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agent_card_is_cacheable_by_tag_and_by_date() {
    let server = start(ServerConfig::default()).await;
    let url = format!("{}/.well-known/agent-card.json", server.base);
    let fetch = |headers: Vec<(&'static str, String)>| {
        let mut request = server.client.get(&url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        async move { request.send().await.unwrap() }
    };
    let header = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .to_str()
            .unwrap()
            .to_owned()
    };

    let first = fetch(vec![]).await;
    assert_eq!(first.status(), 200);
    let tag = header(&first, "etag");
    let modified = header(&first, "last-modified");
    assert!(header(&first, "cache-control").contains("max-age="));
    assert_eq!(header(&first, "vary"), "a2a-version");
    let made = httpdate::parse_http_date(&modified).expect("an HTTP date");

    // The pure 1.0 card is another entity, with its own tag.
    let v1 = fetch(vec![("A2A-Version", "1.0".into())]).await;
    assert_ne!(header(&v1, "etag"), tag);
    let v1_card: Value = v1.json().await.unwrap();
    assert!(v1_card.get("url").is_none(), "{v1_card}");

    // By tag: the current one is 304 with no body, another is the card.
    let same = fetch(vec![("If-None-Match", tag.clone())]).await;
    assert_eq!(same.status(), 304);
    assert_eq!(header(&same, "etag"), tag);
    assert!(same.bytes().await.unwrap().is_empty());
    let other = fetch(vec![("If-None-Match", "\"0000\"".into())]).await;
    assert_eq!(other.status(), 200);

    // By date: not modified since it was made; modified since a day before; a date that does
    // not parse is ignored; a tag that does not match wins over a date that would.
    let since = |t: std::time::SystemTime| httpdate::fmt_http_date(t);
    let day = Duration::from_secs(86_400);
    for (headers, status) in [
        (vec![("If-Modified-Since", modified.clone())], 304),
        (vec![("If-Modified-Since", since(made + day))], 304),
        (vec![("If-Modified-Since", since(made - day))], 200),
        (vec![("If-Modified-Since", "yesterday".into())], 200),
        (
            vec![
                ("If-None-Match", "\"0000\"".into()),
                ("If-Modified-Since", modified.clone()),
            ],
            200,
        ),
    ] {
        let response = fetch(headers.clone()).await;
        assert_eq!(response.status(), status, "{headers:?}");
        assert_eq!(header(&response, "last-modified"), modified);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_0_3_http_json_binding_speaks_0_3_protobuf_json() {
    let server = start(slow(2000)).await;
    // As the official 0.3 client sends it: snake_case proto field names, `request`, `content`.
    let response = server
        .client
        .post(format!("{}/v1/message:send", server.base))
        .json(
            &json!({"request": {"message_id": "m-03", "role": "ROLE_USER",
            "content": [{"text": "old rest"}]}}),
        )
        .send()
        .await
        .unwrap();
    let sent: Value = response.json().await.unwrap();
    let task = &sent["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_SUBMITTED",
        "0.3 does not block: {sent}"
    );
    assert_eq!(
        task["history"][0]["content"][0]["text"], "old rest",
        "{sent}"
    );
    assert!(task["history"][0].get("parts").is_none());
    let id = task["id"].as_str().unwrap();
    let canceled: Value = server
        .client
        .post(format!("{}/v1/tasks/{id}:cancel", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELLED",
        "{canceled}"
    );
    let missing = server
        .client
        .get(format!("{}/v1/tasks/nope", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(body["type"], "TaskNotFoundError", "{body}");
}
