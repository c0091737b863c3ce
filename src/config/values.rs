//! How one value is read and checked: seconds, booleans, lists, minimums.

use std::time::Duration;

use super::ConfigError;

/// `value` must be at least `min`.
pub(super) fn at_least(setting: &'static str, value: usize, min: usize) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::TooSmall { setting, min });
    }
    Ok(())
}

/// `a, b,,c` → `["a", "b", "c"]`.
pub(super) fn comma_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect()
}

pub(super) fn boolean(setting: &'static str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::Invalid {
            setting,
            expected: "true or false",
            value: value.to_string(),
        }),
    }
}

pub(super) fn seconds(setting: &'static str, value: f64) -> Result<Duration, ConfigError> {
    if !value.is_finite() || value <= 0.0 || value > 86_400.0 * 365.0 {
        return Err(ConfigError::NotSeconds { setting, value });
    }
    Ok(Duration::from_secs_f64(value))
}
