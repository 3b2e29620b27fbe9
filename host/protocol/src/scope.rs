//! Which store a request reaches: its [`Scope`] (tenant and owner) names a namespace, and the
//! host's [`Stores`] gives the namespace's store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolnexus_core::{InMemoryTaskStore, StoreError, TaskStore};

/// Who is asking, and in which tenant: together they pick the store namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The tenant (a declared one; see [`ServiceConfig::tenants`](crate::ServiceConfig::tenants)).
    pub tenant: Option<String>,
    /// The authenticated owner, when the server authenticates.
    pub owner: Option<String>,
}

impl Scope {
    /// The namespace of this scope: `None` for the root store, else `t.<tenant>`,
    /// `o.<owner>` or `t.<tenant>/o.<owner>`.
    pub fn namespace(&self) -> Option<String> {
        match (&self.tenant, &self.owner) {
            (None, None) => None,
            (Some(t), None) => Some(format!("t.{t}")),
            (None, Some(o)) => Some(format!("o.{o}")),
            (Some(t), Some(o)) => Some(format!("t.{t}/o.{o}")),
        }
    }
}

/// Where the stores of the namespaces come from.
#[async_trait::async_trait]
pub trait Stores: Send + Sync {
    /// The store of `namespace` (`None`: the root store).
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError>;
}

/// One store and no namespaces: a scope with a tenant or an owner is refused.
pub struct SingleStore(pub Arc<dyn TaskStore>);

#[async_trait::async_trait]
impl Stores for SingleStore {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        match namespace {
            None => Ok(Arc::clone(&self.0)),
            Some(_) => Err(StoreError::Unsupported {
                store: "this server's store".into(),
                operation: "namespaces (tenants or owners)",
            }),
        }
    }
}

/// A store and its namespace (the key prefix of save listeners and locks).
#[derive(Clone)]
pub(crate) struct At {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) ns: String,
}

impl At {
    pub(crate) fn key(&self, id: &str) -> String {
        format!("{}\u{0}{id}", self.ns)
    }

    /// The namespace as [`Scope::namespace`] gave it (`None`: the root store).
    pub(crate) fn namespace(&self) -> Option<&str> {
        (!self.ns.is_empty()).then_some(self.ns.as_str())
    }
}

/// A memory store per namespace, the root included, each made at its first use: for a server
/// whose Tasks need not outlive it, and for tests.
#[derive(Default)]
pub struct MemoryStores(Mutex<HashMap<String, Arc<InMemoryTaskStore>>>);

#[async_trait::async_trait]
impl Stores for MemoryStores {
    async fn store(&self, namespace: Option<&str>) -> Result<Arc<dyn TaskStore>, StoreError> {
        let mut stores = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let store = stores
            .entry(namespace.unwrap_or("").to_owned())
            .or_default();
        Ok(Arc::clone(store) as Arc<dyn TaskStore>)
    }
}
