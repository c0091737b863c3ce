//! [`Quotas`]: the quotas of a server, asked once per chat. A chat is admitted for its person and
//! its tenant ([`Quotas::admit`]); while it runs its [`Ticket`] renews its leases, and when it
//! ends the ticket adds the tokens it used (its hooks' model calls included) and gives the
//! leases back.
//!
//! The counters live in the shared state when one is configured. When it cannot be reached,
//! a chat is counted in this process instead (a `warn` line when that starts and an `info`
//! line when it ends, `hookwire_shared_state_errors_total` at each failure), or refused with
//! `unavailable` when the operator chose to fail closed.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{Clock, Limits, MemoryStore, RedisStore, Refused, Store, StoreError, Subject, LEASE};
use crate::types::Person;

/// The limits of one tenant's people and of the tenant, where they differ from the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantLimits {
    pub per_user: Option<Limits>,
    pub per_tenant: Option<Limits>,
}

/// Why a chat was not admitted.
#[derive(Debug, thiserror::Error)]
pub enum Denied {
    /// A limit is spent.
    #[error(transparent)]
    Spent(#[from] Refused),
    /// The shared state cannot be reached and the operator chose to fail closed.
    #[error(transparent)]
    Unavailable(#[from] StoreError),
}

/// The quotas of a server: the limits, and where they are counted.
pub struct Quotas {
    per_user: Limits,
    per_tenant: Limits,
    tenants: BTreeMap<String, TenantLimits>,
    shared: Option<RedisStore>,
    memory: MemoryStore,
    fail_closed: bool,
    /// Whether the last question to the shared state failed (the warning is logged once per
    /// outage, not once per chat).
    degraded: AtomicBool,
}

/// Which store admitted a chat: its leases and tokens go back there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    Shared,
    Memory,
    /// No limit applies: nothing to count.
    Nowhere,
}

impl Quotas {
    /// Quotas counted in this process.
    pub fn new(per_user: Limits, per_tenant: Limits) -> Quotas {
        Quotas {
            per_user,
            per_tenant,
            tenants: BTreeMap::new(),
            shared: None,
            memory: MemoryStore::new(),
            fail_closed: false,
            degraded: AtomicBool::new(false),
        }
    }

    /// Counted in `store`, the shared state; with `fail_closed`, a chat is refused while it
    /// cannot be reached (else counted here meanwhile).
    pub fn shared(mut self, store: RedisStore, fail_closed: bool) -> Quotas {
        self.shared = Some(store);
        self.fail_closed = fail_closed;
        self
    }

    /// The overrides of the tenant `name`.
    pub fn tenant(mut self, name: impl Into<String>, limits: TenantLimits) -> Quotas {
        self.tenants.insert(name.into(), limits);
        self
    }

    /// The subjects a chat of `person` counts for: the person, and their tenant; only those
    /// with a limit.
    fn subjects(&self, person: &Person) -> Vec<Subject> {
        let overrides = person
            .tenant
            .as_deref()
            .and_then(|tenant| self.tenants.get(tenant));
        let per_user = overrides.and_then(|o| o.per_user).unwrap_or(self.per_user);
        let mut subjects = Vec::with_capacity(2);
        if !per_user.is_unlimited() {
            subjects.push(Subject::user(&person.id, per_user));
        }
        if let Some(tenant) = &person.tenant {
            let per_tenant = overrides
                .and_then(|o| o.per_tenant)
                .unwrap_or(self.per_tenant);
            if !per_tenant.is_unlimited() {
                subjects.push(Subject::tenant(tenant, per_tenant));
            }
        }
        subjects
    }

    /// Admits a chat of `person`, or says which limit refused it (or that the shared state
    /// cannot be reached, when failing closed).
    pub async fn admit(self: &Arc<Self>, person: &Person) -> Result<Ticket, Denied> {
        let subjects = self.subjects(person);
        // The lease's own name: chat ids are the clients' and need not be unique.
        let lease = uuid::Uuid::new_v4().simple().to_string();
        let chat = lease.as_str();
        let ticket = |counted| Ticket {
            quotas: self.clone(),
            lease: Arc::from(lease.as_str()),
            subjects: Arc::from(subjects.as_slice()),
            counted,
        };
        if subjects.is_empty() {
            return Ok(ticket(Counted::Nowhere));
        }
        let now = Clock::now();
        if let Some(shared) = &self.shared {
            match shared.admit(chat, &subjects, now).await {
                Ok(answer) => {
                    self.reached();
                    answer?;
                    return Ok(ticket(Counted::Shared));
                }
                Err(error) => {
                    self.unreachable("admit", &error);
                    if self.fail_closed {
                        return Err(Denied::Unavailable(error));
                    }
                }
            }
        }
        self.memory
            .admit(chat, &subjects, now)
            .await
            .map_err(Denied::Unavailable)??;
        Ok(ticket(Counted::Memory))
    }

    fn store(&self, counted: Counted) -> Option<&dyn Store> {
        match counted {
            Counted::Shared => self.shared.as_ref().map(|s| s as &dyn Store),
            Counted::Memory => Some(&self.memory),
            Counted::Nowhere => None,
        }
    }

    /// The shared state answered: an outage, if there was one, is over.
    fn reached(&self) {
        if self.degraded.swap(false, Ordering::Relaxed) {
            tracing::info!("the shared state answers again; quotas are counted there");
        }
    }

    fn unreachable(&self, operation: &'static str, error: &StoreError) {
        metrics::counter!("hookwire_shared_state_errors_total", "operation" => operation)
            .increment(1);
        if !self.degraded.swap(true, Ordering::Relaxed) {
            if self.fail_closed {
                tracing::warn!(%error, "chats are refused until the shared state answers (shared_state_fail_closed)");
            } else {
                tracing::warn!(%error, "quotas are counted in this replica's memory until the shared state answers, so replicas no longer share them");
            }
        } else {
            tracing::debug!(%error, operation, "the shared state still does not answer");
        }
    }
}

/// An admitted chat's place in the quotas: renew it while the chat runs, finish it when it
/// ends. Clones name the same place (one renews while another waits to finish).
#[derive(Clone)]
pub struct Ticket {
    quotas: Arc<Quotas>,
    /// The name of its lease among the subjects' running chats.
    lease: Arc<str>,
    subjects: Arc<[Subject]>,
    counted: Counted,
}

/// How often a running chat renews its leases: well within their life.
const RENEW_EVERY: std::time::Duration = std::time::Duration::from_secs(LEASE.as_secs() / 3);

impl Ticket {
    /// Whether there is anything to renew or add.
    pub fn counts(&self) -> bool {
        self.counted != Counted::Nowhere
    }

    /// Renews the chat's leases every [`RENEW_EVERY`], for as long as it is polled (run it
    /// beside the chat; it never ends on its own).
    pub async fn keep_alive(&self) -> std::convert::Infallible {
        let Some(store) = self.quotas.store(self.counted) else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(RENEW_EVERY).await;
            if let Err(error) = store.renew(&self.lease, &self.subjects, Clock::now()).await {
                self.quotas.unreachable("renew", &error);
            }
        }
    }

    /// [`Ticket::finish`] in a task of its own, for a chat that was dropped rather than ended
    /// (its client went away): its place is free at once, not when its lease lapses.
    pub fn finish_later(self, tokens: u64) {
        if !self.counts() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(self.finish(tokens));
        }
    }

    /// The chat ended having used `tokens`: they are counted for today, and its leases given
    /// back.
    pub async fn finish(self, tokens: u64) {
        let Some(store) = self.quotas.store(self.counted) else {
            return;
        };
        let finished = store
            .finish(&self.lease, &self.subjects, tokens, Clock::now())
            .await;
        if let Err(error) = finished {
            self.quotas.unreachable("finish", &error);
        }
    }
}
