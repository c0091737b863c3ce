//! What is wrong with one field of a hook's spec (its `timeout`, its `matcher`), for the hook
//! file readers of every dialect, which add where.

/// A hook spec field that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum HookSpecError {
    /// A `timeout` out of range in the dialect's unit.
    #[error("timeout {value} must be a number of {unit} between 0 and {most}")]
    Timeout {
        value: f64,
        unit: &'static str,
        most: u32,
    },
    /// A `matcher` that is not a valid regex (the regex error, on one line).
    #[error("matcher is not a valid regex: {0}")]
    Matcher(String),
}
