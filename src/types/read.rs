//! Reading JSON into a wire type with serde, the one way the crate's readers share (client
//! frames, the history they carry, hook answers): a refusal is a [`ReadError`] that names the
//! field's path (`messages[2].content`), made from the one serde reports.

use std::fmt;

use serde::de::Visitor;
use serde::{Deserialize, Deserializer};

/// Why a value was refused: where (a field's path in it, such as `messages[2].content`; empty
/// for the value as a whole) and what is wrong. Its text is what the reader is told (a client
/// frame's `bad_frame` message, a hook answer's refusal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadError {
    path: String,
    problem: Problem,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    /// The field at the path is missing.
    Missing,
    /// The field at the path is there but wrong: `field "{path}" {what}`.
    Field(String),
    /// A rule about the frame or several fields, said in full.
    Rule(String),
}

impl ReadError {
    /// About the frame as a whole, or a rule over several fields; `message` is said as it is.
    pub(crate) fn rule(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            problem: Problem::Rule(message.into()),
        }
    }

    /// The field at `path` is wrong: `what` follows its name (`must not be empty`).
    pub(crate) fn field(path: impl Into<String>, what: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            problem: Problem::Field(what.into()),
        }
    }

    /// The field at `path` is missing.
    pub(crate) fn missing(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            problem: Problem::Missing,
        }
    }

    /// The field's path in the frame; empty for the frame as a whole.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// The same error for a value read on its own that sits at `prefix` in the frame.
    pub(crate) fn within(mut self, prefix: &str) -> Self {
        self.path = join(prefix, &self.path);
        self
    }

    /// The error serde reported, with its path, in the words of the protocol.
    pub(crate) fn from_serde(error: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = match error.path().to_string() {
            root if root == "." => String::new(),
            path => path,
        };
        let message = error.inner().to_string();
        match SerdeProblem::of(&message) {
            SerdeProblem::Missing(name) => Self::missing(join(&path, name)),
            SerdeProblem::Expected(what) => Self::field(path, format!("must be {what}")),
            SerdeProblem::Variant { got, expected } => {
                Self::field(path, format!("must be {expected}, got \"{got}\""))
            }
            SerdeProblem::Other => Self::field(path, message),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            Problem::Missing => write!(f, "missing field \"{}\"", self.path),
            Problem::Field(what) if self.path.is_empty() => f.write_str(what),
            Problem::Field(what) => write!(f, "field \"{}\" {what}", self.path),
            Problem::Rule(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ReadError {}

/// `name` under `parent` (`messages[0]` + `role` → `messages[0].role`).
fn join(parent: &str, name: &str) -> String {
    match (parent, name) {
        ("", name) => name.to_string(),
        (parent, "") => parent.to_string(),
        (parent, name) if name.starts_with('[') => format!("{parent}{name}"),
        (parent, name) => format!("{parent}.{name}"),
    }
}

/// What serde's message says, in the shapes its `de::Error` methods write
/// (`invalid type: …, expected …`, `missing field `…``, `unknown variant `…`, expected …`);
/// `frames/tests.rs` holds these shapes to serde's own words.
enum SerdeProblem<'a> {
    Missing(&'a str),
    /// What was expected, in JSON's words (`a string`, `true or false`, `an array`).
    Expected(String),
    Variant {
        got: &'a str,
        expected: String,
    },
    Other,
}

impl<'a> SerdeProblem<'a> {
    fn of(message: &'a str) -> Self {
        if let Some(name) = message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            return SerdeProblem::Missing(name);
        }
        if let Some((got, expected)) = message
            .strip_prefix("unknown variant `")
            .and_then(|rest| rest.split_once("`, expected "))
        {
            return SerdeProblem::Variant {
                got,
                expected: expected.replace('`', "\""),
            };
        }
        let expected = ["invalid type: ", "invalid value: "]
            .iter()
            .find_map(|prefix| message.strip_prefix(prefix))
            .and_then(|rest| rest.rsplit_once(", expected "))
            .map(|(_, expected)| expected);
        match expected {
            Some(expected) => SerdeProblem::Expected(json_words(expected)),
            None => SerdeProblem::Other,
        }
    }
}

/// What serde's visitors expect (`a boolean`, `a sequence`, `u64`, `struct X`), in the words of
/// JSON.
fn json_words(expected: &str) -> String {
    let words = match expected {
        "a boolean" => "true or false",
        "a sequence" => "an array",
        "variant identifier" | "a borrowed string" => "a string",
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number",
        "a map" => "an object",
        struct_name if struct_name.starts_with("struct ") => "an object",
        other => other,
    };
    words.to_string()
}

/// `from` read as `T`; an error names the path of the field that did not fit. `from` is a
/// [`Value`] (its strings are moved, not copied) or a `&Value`.
pub(crate) fn read<'de, T, D>(from: D) -> Result<T, ReadError>
where
    T: Deserialize<'de>,
    D: Deserializer<'de, Error = serde_json::Error>,
{
    serde_path_to_error::deserialize(from).map_err(ReadError::from_serde)
}

/// serde reads a struct from a JSON array too (its fields in order); a frame's objects are JSON
/// objects. A wire struct derives its reader as an inherent `Self::deserialize`
/// (`#[serde(remote = "Self")]`, serde's way to add to a derived impl) and this macro makes it
/// the type's `Deserialize`, given a deserializer that asks for a map.
macro_rules! read_as_object {
    ($($wire:ty),+ $(,)?) => {$(
        impl<'de> serde::Deserialize<'de> for $wire {
            fn deserialize<D: serde::Deserializer<'de>>(from: D) -> Result<Self, D::Error> {
                <$wire>::deserialize($crate::types::read::AsMap(from))
            }
        }
    )+};
}
pub(crate) use read_as_object;

/// A deserializer that reads whatever is asked of it as a map (see [`read_as_object`]).
pub(crate) struct AsMap<D>(pub(crate) D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for AsMap<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}
