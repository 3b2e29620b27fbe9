//! Secrets at rest: a config's `token` and `authentication.credentials`, sealed with the
//! operator's key before the store sees them, opened again for Get, List and deliveries.
//!
//! A sealed value is `sealed:v2:<base64 of nonce ‖ ciphertext ‖ tag>`, XChaCha20-Poly1305 with a
//! random 24-byte nonce per seal. Its associated data binds it to where it may go and where it
//! is kept: the namespace, the Task id, the config id, the webhook URL, the protocol version,
//! the authentication scheme and the member. Someone who can write the store but has no key
//! can so neither point a config with secrets at another URL, nor move it to another
//! namespace or Task, nor copy a value into another config (or from `token` to
//! `credentials`): the value no longer opens, Get answers an error, and no delivery sends it.
//!
//! `sealed:v1:` values (from before the URL and namespace were bound) are refused: nothing
//! tells whether their config's URL was changed since, and opening them for a changed URL
//! would send the secret there. Their configs are to be created again.
//!
//! Without a key values are kept as given, except that a value that would read as a stored
//! form (`sealed:` or `plain:` at its start) is kept as `plain:` + the value, so that opening
//! it gives it back exactly.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde_json::{Map, Value};
use std::fmt;
use std::path::Path;

const SEALED_V2: &str = "sealed:v2:";
/// The form that bound only the Task id, config id and member: refused (see the module docs).
const SEALED_V1: &str = "sealed:v1:";
const SEALED: &str = "sealed:";
const PLAIN: &str = "plain:";
const NONCE_BYTES: usize = 24;
const KEY_BYTES: usize = 32;

/// The operator's key: 32 bytes.
#[derive(Clone)]
pub struct SealKey(XChaCha20Poly1305);

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey(..)")
    }
}

impl SealKey {
    /// A key from its 32 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<SealKey, String> {
        if bytes.len() != KEY_BYTES {
            return Err(format!(
                "a key is {KEY_BYTES} bytes, this one is {}",
                bytes.len()
            ));
        }
        XChaCha20Poly1305::new_from_slice(bytes)
            .map(SealKey)
            .map_err(|_| format!("a key is {KEY_BYTES} bytes"))
    }

    /// A key from its text: 64 hex digits or base64 of 32 bytes, surrounding whitespace
    /// ignored (what `openssl rand -hex 32` or `openssl rand -base64 32` writes).
    pub fn from_text(text: &str) -> Result<SealKey, String> {
        let text = text.trim();
        let bytes = if text.len() == 2 * KEY_BYTES && text.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..KEY_BYTES)
                .map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|e| e.to_string())?
        } else {
            STANDARD.decode(text).map_err(|_| {
                format!(
                    "expected {KEY_BYTES} random bytes as 64 hex digits or as base64 \
                     (e.g. from `openssl rand -hex 32`)"
                )
            })?
        };
        SealKey::from_bytes(&bytes).map_err(|e| {
            format!("expected {KEY_BYTES} random bytes as 64 hex digits or as base64: {e}")
        })
    }

    /// The key in `path` (see [`from_text`](Self::from_text)); the error names the file.
    pub fn from_file(path: &Path) -> Result<SealKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
        SealKey::from_text(&text).map_err(|e| format!("key file {}: {e}", path.display()))
    }

    fn seal(&self, plain: &str, aad: &[u8]) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_BYTES];
        getrandom::fill(&mut nonce).map_err(|e| format!("no random nonce: {e}"))?;
        let sealed = self
            .0
            .encrypt(
                &XNonce::from(nonce),
                Payload {
                    msg: plain.as_bytes(),
                    aad,
                },
            )
            .map_err(|_| "encryption failed".to_owned())?;
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        Ok(format!("{SEALED_V2}{}", STANDARD.encode(bytes)))
    }

    fn open(&self, encoded: &str, aad: &[u8]) -> Result<String, String> {
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| "its sealed form is not base64".to_owned())?;
        if bytes.len() < NONCE_BYTES + 16 {
            return Err("its sealed form is too short".into());
        }
        let (nonce, sealed) = bytes.split_at(NONCE_BYTES);
        let nonce = XNonce::try_from(nonce).map_err(|_| "bad nonce".to_owned())?;
        let plain = self
            .0
            .decrypt(&nonce, Payload { msg: sealed, aad })
            .map_err(|_| {
                "it does not open with this server's key (sealed with another key, or altered: \
                 its config's URL, namespace, Task, id, version or scheme changed since)"
                    .to_owned()
            })?;
        String::from_utf8(plain).map_err(|_| "it opened to bytes that are not UTF-8".to_owned())
    }
}

/// The secret members of a stored config: (path, name for errors).
fn secret_paths() -> [(&'static [&'static str], &'static str); 2] {
    [
        (&["token"], "token"),
        (
            &["authentication", "credentials"],
            "authentication.credentials",
        ),
    ]
}

fn member_mut<'a>(config: &'a mut Map<String, Value>, path: &[&str]) -> Option<&'a mut String> {
    let (last, parents) = path.split_last()?;
    let mut map = config;
    for parent in parents {
        map = map.get_mut(*parent)?.as_object_mut()?;
    }
    match map.get_mut(*last)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Where a config is kept: its namespace (`None`: the root store) and Task.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub namespace: Option<&'a str>,
    pub task_id: &'a str,
}

/// What binds a sealed value to where it may go and where it is kept: every member of the
/// config but the secrets (`taskId`, `id`, `url`, `protocolVersion`, the scheme), the
/// namespace and Task it is kept under, and the member itself.
/// Each part is length-prefixed and absent parts are told from empty ones, so no two places
/// share associated data.
fn associated_data(place: Place<'_>, config: &Map<String, Value>, member: &str) -> Vec<u8> {
    let text = |name: &str| config.get(name).and_then(Value::as_str);
    let scheme = config
        .get("authentication")
        .and_then(Value::as_object)
        .and_then(|auth| auth.get("scheme"))
        .and_then(Value::as_str);
    let mut aad = b"toolnexus push secret v2".to_vec();
    for part in [
        place.namespace,
        Some(place.task_id),
        text("taskId"),
        text("id"),
        text("url"),
        text("protocolVersion"),
        scheme,
        Some(member),
    ] {
        match part {
            None => aad.push(0),
            Some(part) => {
                aad.push(1);
                aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
                aad.extend_from_slice(part.as_bytes());
            }
        }
    }
    aad
}

/// The config with its secrets in their stored form: sealed with `key` for `place`, else kept
/// (escaped when they would read as a stored form).
pub fn seal_config(
    key: Option<&SealKey>,
    place: Place<'_>,
    mut config: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    for (path, name) in secret_paths() {
        let aad = associated_data(place, &config, name);
        let Some(value) = member_mut(&mut config, path) else {
            continue;
        };
        *value = match key {
            Some(key) => key.seal(value, &aad)?,
            None if value.starts_with(SEALED) || value.starts_with(PLAIN) => {
                format!("{PLAIN}{value}")
            }
            None => continue,
        };
    }
    Ok(config)
}

/// The config with its secrets as the client gave them, read from the store at `place`.
/// `Err` names the member that cannot be opened and why: sealed with another key, or for
/// another place, URL, version or scheme (see [`associated_data`]), or in the refused v1 form.
pub fn open_config(
    key: Option<&SealKey>,
    place: Place<'_>,
    mut config: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    for (path, name) in secret_paths() {
        let aad = associated_data(place, &config, name);
        let Some(value) = member_mut(&mut config, path) else {
            continue;
        };
        if let Some(plain) = value.strip_prefix(PLAIN) {
            *value = plain.to_owned();
        } else if let Some(encoded) = value.strip_prefix(SEALED_V2) {
            let key = key.ok_or_else(|| {
                format!(
                    "push config {name} is sealed, and this server has no key to open it \
                     (start it with the --push-key-file it was sealed with)"
                )
            })?;
            *value = key
                .open(encoded, &aad)
                .map_err(|why| format!("push config {name} cannot be opened: {why}"))?;
        } else if value.starts_with(SEALED_V1) {
            return Err(format!(
                "push config {name} cannot be opened: it is sealed in the v1 form, which does \
                 not bind the webhook URL or namespace, so it is no longer opened; the config \
                 is to be created again (a create with its id replaces it)"
            ));
        } else if value.starts_with(SEALED) {
            return Err(format!(
                "push config {name} is sealed in a form this server does not know"
            ));
        }
    }
    Ok(config)
}

#[cfg(test)]
#[path = "secrets_tampering_tests.rs"]
mod tampering_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HERE: Place<'static> = Place {
        namespace: Some("t.acme"),
        task_id: "t1",
    };

    fn key(byte: u8) -> SealKey {
        SealKey::from_bytes(&[byte; 32]).unwrap()
    }

    fn config() -> Map<String, Value> {
        let value = json!({
            "id": "c1", "taskId": "t1", "url": "https://example.com/hook",
            "token": "tok-123",
            "authentication": {"scheme": "Bearer", "credentials": "secret-456"},
            "protocolVersion": "1.0"
        });
        value.as_object().unwrap().clone()
    }

    #[test]
    fn sealed_values_hide_the_secrets_and_open_again() {
        let sealed = seal_config(Some(&key(7)), HERE, config()).unwrap();
        let text = Value::Object(sealed.clone()).to_string();
        assert!(
            !text.contains("tok-123") && !text.contains("secret-456"),
            "{text}"
        );
        assert!(sealed["token"].as_str().unwrap().starts_with("sealed:v2:"));
        assert_eq!(sealed["url"], "https://example.com/hook");
        assert_eq!(
            open_config(Some(&key(7)), HERE, sealed.clone()).unwrap(),
            config()
        );
        // A fresh nonce each time.
        let again = seal_config(Some(&key(7)), HERE, config()).unwrap();
        assert_ne!(again["token"], sealed["token"]);
    }

    #[test]
    fn a_wrong_or_missing_key_fails_naming_why() {
        let sealed = seal_config(Some(&key(7)), HERE, config()).unwrap();
        let wrong = open_config(Some(&key(8)), HERE, sealed.clone()).unwrap_err();
        assert!(
            wrong.contains("token") && wrong.contains("another key"),
            "{wrong}"
        );
        let none = open_config(None, HERE, sealed).unwrap_err();
        assert!(none.contains("no key"), "{none}");
    }

    #[test]
    fn sealed_values_are_bound_to_their_config_and_member() {
        let sealed = seal_config(Some(&key(7)), HERE, config()).unwrap();
        let mut moved = sealed.clone();
        moved.insert("id".into(), json!("c2"));
        assert!(open_config(Some(&key(7)), HERE, moved).is_err());
        let mut other_task = sealed.clone();
        other_task.insert("taskId".into(), json!("t2"));
        assert!(open_config(Some(&key(7)), HERE, other_task).is_err());
        let mut swapped = sealed.clone();
        swapped["authentication"]["credentials"] = sealed["token"].clone();
        let why = open_config(Some(&key(7)), HERE, swapped).unwrap_err();
        assert!(why.contains("authentication.credentials"), "{why}");
    }

    #[test]
    fn sealed_values_are_bound_to_where_they_may_go_and_where_they_are_kept() {
        let sealed = seal_config(Some(&key(7)), HERE, config()).unwrap();
        let changed = |member: &str, value: Value| {
            let mut config = sealed.clone();
            config.insert(member.into(), value);
            config
        };
        for (what, tampered) in [
            (
                "url",
                changed("url", json!("https://attacker.example/hook")),
            ),
            ("path", changed("url", json!("https://example.com/other"))),
            ("version", changed("protocolVersion", json!("0.3"))),
            (
                "scheme",
                changed(
                    "authentication",
                    json!({"scheme": "Basic", "credentials": sealed["authentication"]["credentials"]}),
                ),
            ),
        ] {
            let why = open_config(Some(&key(7)), HERE, tampered).unwrap_err();
            assert!(why.contains("cannot be opened"), "{what}: {why}");
        }
        for place in [
            Place {
                namespace: Some("t.other"),
                task_id: "t1",
            },
            Place {
                namespace: None,
                task_id: "t1",
            },
            Place {
                namespace: Some("t.acme"),
                task_id: "t2",
            },
        ] {
            let why = open_config(Some(&key(7)), place, sealed.clone()).unwrap_err();
            assert!(why.contains("token cannot be opened"), "{place:?}: {why}");
        }
        // The root store and an empty namespace name are different places.
        let root = Place {
            namespace: None,
            task_id: "t1",
        };
        let at_root = seal_config(Some(&key(7)), root, config()).unwrap();
        let empty = Place {
            namespace: Some(""),
            task_id: "t1",
        };
        assert!(open_config(Some(&key(7)), empty, at_root.clone()).is_err());
        assert_eq!(open_config(Some(&key(7)), root, at_root).unwrap(), config());
    }

    #[test]
    fn values_sealed_in_the_v1_form_are_refused_saying_what_to_do() {
        // A v1 value as the earlier code sealed it: associated data of Task, config, member.
        let mut aad = b"toolnexus push secret v1".to_vec();
        for part in ["t1", "c1", "token"] {
            aad.push(0);
            aad.extend_from_slice(&(part.len() as u64).to_be_bytes());
            aad.extend_from_slice(part.as_bytes());
        }
        let v2 = key(7).seal("tok-123", &aad).unwrap();
        let v1 = v2.replacen(SEALED_V2, SEALED_V1, 1);
        let mut stored = config();
        stored.insert("token".into(), json!(v1));
        let why = open_config(Some(&key(7)), HERE, stored).unwrap_err();
        assert!(
            why.contains("token") && why.contains("v1") && why.contains("created again"),
            "{why}"
        );
    }

    #[test]
    fn without_a_key_values_round_trip_exactly() {
        assert_eq!(seal_config(None, HERE, config()).unwrap(), config());
        let mut tricky = config();
        tricky.insert("token".into(), json!("sealed:v1:AAAA"));
        tricky["authentication"]["credentials"] = json!("plain:x");
        let stored = seal_config(None, HERE, tricky.clone()).unwrap();
        assert_eq!(stored["token"], "plain:sealed:v1:AAAA");
        assert_eq!(open_config(None, HERE, stored.clone()).unwrap(), tricky);
        // A key added later still opens what was stored without one.
        assert_eq!(open_config(Some(&key(1)), HERE, stored).unwrap(), tricky);
    }

    #[test]
    fn keys_are_read_as_hex_or_base64() {
        let hex = "00".repeat(31) + "ff";
        assert!(SealKey::from_text(&format!(" {hex}\n")).is_ok());
        let b64 = STANDARD.encode([9u8; 32]);
        assert!(SealKey::from_text(&b64).is_ok());
        for bad in ["", "abc", &"00".repeat(16), &STANDARD.encode([1u8; 16])] {
            let why = SealKey::from_text(bad).unwrap_err();
            assert!(why.contains("32 random bytes"), "{bad:?}: {why}");
        }
    }

    #[test]
    fn configs_without_secrets_are_untouched() {
        let bare = json!({"id": "c", "taskId": "t", "url": "https://e.com/"});
        let bare = bare.as_object().unwrap().clone();
        assert_eq!(
            seal_config(Some(&key(3)), HERE, bare.clone()).unwrap(),
            bare
        );
        assert_eq!(open_config(None, HERE, bare.clone()).unwrap(), bare);
    }
}
