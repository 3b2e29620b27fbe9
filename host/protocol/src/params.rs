//! Typed access to one request's parameters (a JSON-RPC `params` object, an HTTP+JSON body or
//! query), naming the refused field in every error.

use crate::error::A2aError;
use serde_json::{Map, Value};

/// Typed access to one request's parameters, naming the field in every refusal.
pub(crate) struct Params<'a> {
    pub(crate) map: &'a Map<String, Value>,
    pub(crate) prefix: &'a str,
}

impl Params<'_> {
    pub(crate) fn bad(&self, key: &str, what: &str) -> A2aError {
        A2aError::invalid_field(&format!("{}{key}", self.prefix), what)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn id(&self, key: &str) -> Result<String, A2aError> {
        match self.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            _ => Err(self.bad(key, "must be a non-empty string")),
        }
    }

    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<String>, A2aError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(self.bad(key, "must be a string")),
        }
    }

    pub(crate) fn opt_bool(&self, key: &str) -> Result<Option<bool>, A2aError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(self.bad(key, "must be true or false")),
        }
    }

    pub(crate) fn opt_int(&self, key: &str) -> Result<Option<i64>, A2aError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.bad(key, "must be an integer")),
        }
    }

    pub(crate) fn history_length(&self, key: &str) -> Result<Option<usize>, A2aError> {
        match self.opt_int(key)? {
            None => Ok(None),
            Some(n) => usize::try_from(n)
                .map(Some)
                .map_err(|_| self.bad(key, "must not be negative")),
        }
    }

    pub(crate) fn nested(&self, key: &str) -> Result<Option<Params<'_>>, A2aError> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Params {
                map,
                prefix: self.prefix,
            })),
            Some(_) => Err(self.bad(key, "must be an object")),
        }
    }
}
