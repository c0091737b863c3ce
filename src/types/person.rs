//! The person a chat is for (docs/protocol.md §20): who signed in, as the server learned it from
//! the token, never from the client's frames.

/// Who asked: `id` from the token's user claim (`sub` by default), `tenant` from its tenant
/// claim when tenants are configured, `roles` from its roles claim. Hooks get it as `user`.
#[derive(
    Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Person {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<String>,
}

impl Person {
    /// The holder of the static `auth_token` (or of an open server): one user for quotas.
    pub fn token_holder() -> Person {
        Person {
            id: "token".into(),
            ..Person::default()
        }
    }
}
