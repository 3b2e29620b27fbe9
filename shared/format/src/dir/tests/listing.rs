//! Listing: pages newest first, deletes, and a corrupt file reported by the listing.

use super::*;

fn ids(page: &TextPage) -> Vec<&str> {
    page.tasks.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn list_pages_newest_first_and_delete_removes() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(&dir);
    for i in [3, 1, 2, 5, 4] {
        s.save_text(&format!(
            r#"{{"id":"t{i}","contextId":"c{}","status":{{"state":"working","timestamp":"2025-01-0{i}T00:00:00Z"}}}}"#,
            i % 2
        ))
        .unwrap();
    }
    s.save_text(r#"{"id":"t0"}"#).unwrap();
    fs::write(dir.path().join(".tmp-x"), "{").unwrap();
    let q = ListQuery {
        page_size: 2,
        ..Default::default()
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t5", "t4"]);
    assert_eq!(page.total_size, 6);
    let q = ListQuery {
        page_token: page.next_page_token,
        ..q
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t3", "t2"]);
    let q = ListQuery {
        page_token: page.next_page_token,
        ..q
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t1", "t0"], "no timestamp comes last");
    assert_eq!(page.next_page_token, None);
    let q = ListQuery {
        context_id: Some("c0".into()),
        ..Default::default()
    };
    let page = s.list_texts(&q).unwrap();
    assert_eq!(ids(&page), ["t4", "t2"]);
    assert_eq!((page.next_page_token, page.total_size), (None, 2));
    let q = ListQuery {
        status_timestamp_after: Some(
            crate::query::Timestamp::parse("2025-01-04T00:00:00Z").unwrap(),
        ),
        ..Default::default()
    };
    assert_eq!(ids(&s.list_texts(&q).unwrap()), ["t5", "t4"]);
    let bad = ListQuery {
        page_token: Some("garbage".into()),
        ..Default::default()
    };
    assert!(matches!(s.list_texts(&bad), Err(DirError::InvalidQuery(_))));
    assert!(s.delete("t2").unwrap());
    assert!(!s.delete("t2").unwrap());
    assert_eq!(s.get_text("t2").unwrap(), None);
}

#[test]
fn list_reports_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("bad.json"), "{").unwrap();
    let err = store(&dir).list_texts(&ListQuery::default()).unwrap_err();
    assert!(
        matches!(err, DirError::Corrupt { .. }) && err.to_string().contains("bad.json"),
        "{err}"
    );
}
