//! Settings declared once, read from flags, environment variables and a
//! TOML file: the mechanism of the long-running commands (`adcp-sig
//! gateway`; `adcp-sig relay` to come).
//!
//! Precedence, for every setting: its flag, else its environment
//! variable, else the TOML file of `--config`, else the library's
//! default. Each setting is declared once, as one field of the command's
//! clap [`Args`](clap::Args) struct, which also derives
//! [`Serialize`]:
//!
//! - `#[arg(long, env = "ADCP_…")]` names the flag and its variable; clap
//!   reads both (the flag winning) and parses the value with the field's
//!   type, so a bad value is a usage error naming the flag. A field is
//!   `Option<T>`, a `Vec<T>` (repeatable, `value_delimiter = ','` for the
//!   variable) or a `bool` switch.
//! - The field's name is the setting's TOML key: the name of a field of
//!   the library's configuration type, which reads the TOML file
//!   (`#[serde(default, deny_unknown_fields)]`, with the defaults in its
//!   `Default`) and derives `Serialize` too.
//! - [`overlay`] lays the fields that were given over the configuration
//!   read from the file (or the default one) through serde: both are
//!   serialized, the keys of the given fields replaced, the result
//!   deserialized. Nothing is mapped by hand, and a key the
//!   configuration does not know is an error. A field was given unless it
//!   serializes to `null` (an absent `Option`), `false` (an absent switch)
//!   or `[]` (an absent list): clap's values when neither the flag nor the
//!   variable is set. A list given replaces the file's; it is never merged.
//!
//! What is not a setting of the TOML file is `#[serde(skip)]` and set by
//! the command itself after the overlay: `--config`, secrets (read from
//! the environment or a file only, never a flag or a TOML key), switches
//! with no TOML key and test-only flags. Fields the configuration type does
//! not serialize (its secrets) are not carried through the overlay.
//!
//! # Declaring a new command's settings
//!
//! A relay with its own `ADCP_RELAY_*` variables and a `RelayConfig` in
//! its library, reading `relay.toml`:
//!
//! ```
//! use adcp_sig::settings::{overlay, SettingsError};
//! use serde::{Deserialize, Serialize};
//! use std::net::SocketAddr;
//! use std::path::PathBuf;
//!
//! /// The library's settings: the TOML keys and their defaults.
//! #[derive(Debug, Serialize, Deserialize)]
//! #[serde(default, deny_unknown_fields)]
//! struct RelayConfig {
//!     listen: SocketAddr,
//!     outbox: String,
//!     destinations: Vec<String>,
//!     max_attempts: u32,
//! }
//!
//! impl Default for RelayConfig {
//!     fn default() -> Self {
//!         Self {
//!             listen: SocketAddr::from(([127, 0, 0, 1], 8791)),
//!             outbox: "sqlite:adcp-relay.sqlite".into(),
//!             destinations: Vec::new(),
//!             max_attempts: 10,
//!         }
//!     }
//! }
//!
//! /// `adcp-sig relay`: each setting once, its flag, variable and TOML key.
//! #[derive(Debug, Clone, Default, clap::Args, Serialize)]
//! struct RelayArgs {
//!     /// TOML file with the same settings.
//!     #[arg(long, env = "ADCP_RELAY_CONFIG")]
//!     #[serde(skip)]
//!     config: Option<PathBuf>,
//!     /// Address to listen on [default: 127.0.0.1:8791].
//!     #[arg(long, env = "ADCP_RELAY_LISTEN")]
//!     listen: Option<SocketAddr>,
//!     /// The outbox store.
//!     #[arg(long, env = "ADCP_RELAY_OUTBOX")]
//!     outbox: Option<String>,
//!     /// A destination (repeatable; comma-separated in the environment).
//!     #[arg(long = "destination", env = "ADCP_RELAY_DESTINATIONS", value_delimiter = ',')]
//!     destinations: Vec<String>,
//!     /// Attempts before a delivery is given up [default: 10].
//!     #[arg(long, env = "ADCP_RELAY_MAX_ATTEMPTS")]
//!     max_attempts: Option<u32>,
//! }
//!
//! fn resolve(args: &RelayArgs, file: Option<RelayConfig>) -> Result<RelayConfig, SettingsError> {
//!     // In the relay: `RelayConfig::from_toml_file(path)?` when `args.config` is set.
//!     overlay(&file.unwrap_or_default(), args)
//! }
//!
//! let file = RelayConfig { max_attempts: 3, outbox: "postgres://db/relay".into(), ..RelayConfig::default() };
//! let args = RelayArgs { outbox: Some("sqlite:x.sqlite".into()), ..RelayArgs::default() };
//! let config = resolve(&args, Some(file))?;
//! assert_eq!(config.outbox, "sqlite:x.sqlite"); // the flag (or ADCP_RELAY_OUTBOX) wins
//! assert_eq!(config.max_attempts, 3); // then the file
//! assert_eq!(config.listen.port(), 8791); // then the default
//! # Ok::<(), SettingsError>(())
//! ```

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// Why [`overlay`] cannot lay the flags over the configuration.
#[derive(Debug)]
#[non_exhaustive]
pub enum SettingsError {
    /// A flag's value (or its variable's) that the configuration type
    /// refuses.
    Invalid {
        /// The flag, `--name` (the TOML key if the field has no flag).
        flag: String,
        /// Its environment variable, if it has one.
        env: Option<String>,
        /// The configuration type's message.
        message: String,
    },
    /// The flags or the configuration do not serialize to a table of
    /// settings (a path that is not UTF-8), or the configuration refuses
    /// their combination.
    Serde(serde_json::Error),
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // A message naming its flag already is kept as it is.
            Self::Invalid { flag, message, .. } if message.contains(flag.as_str()) => f.write_str(message),
            Self::Invalid {
                flag,
                env: Some(env),
                message,
            } => write!(f, "{flag} (or {env}): {message}"),
            Self::Invalid {
                flag,
                env: None,
                message,
            } => write!(f, "{flag}: {message}"),
            Self::Serde(e) => write!(f, "settings: {e}"),
        }
    }
}

impl std::error::Error for SettingsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Invalid { .. } => None,
            Self::Serde(e) => Some(e),
        }
    }
}

/// `config` with every field of `flags` that was given in place of its
/// own: the flags (and their variables, which clap read into them) over
/// whatever `config` came from. See the [module](self) for the rules.
///
/// # Errors
///
/// [`SettingsError::Invalid`] naming the flag whose value `C` refuses (or
/// which `C` has no key for: a declaration error);
/// [`SettingsError::Serde`] when either side is not a table of settings.
pub fn overlay<A, C>(config: &C, flags: &A) -> Result<C, SettingsError>
where
    A: clap::Args + Serialize,
    C: Serialize + DeserializeOwned,
{
    let base = table(config)?;
    let given: Vec<(String, Value)> = table(flags)?.into_iter().filter(|(_, value)| given(value)).collect();
    let mut merged = base.clone();
    merged.extend(given.iter().cloned());
    serde_json::from_value(Value::Object(merged)).map_err(|error| blame::<A, C>(&base, &given, error))
}

/// Whether a flag's serialized value was given (see the [module](self)).
fn given(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::Array(items) => !items.is_empty(),
        _ => true,
    }
}

/// `value`'s fields, by key.
fn table(value: &impl Serialize) -> Result<Map<String, Value>, SettingsError> {
    match serde_json::to_value(value).map_err(SettingsError::Serde)? {
        Value::Object(fields) => Ok(fields),
        _ => Err(SettingsError::Serde(serde::ser::Error::custom(
            "settings serialize to a table of fields",
        ))),
    }
}

/// The error of the first given field that `C` refuses on its own, as its
/// flag's; `error` itself if only their combination is refused.
fn blame<A: clap::Args, C: DeserializeOwned>(
    base: &Map<String, Value>,
    given: &[(String, Value)],
    error: serde_json::Error,
) -> SettingsError {
    for (key, value) in given {
        let mut one = base.clone();
        one.insert(key.clone(), value.clone());
        if let Err(refused) = serde_json::from_value::<C>(Value::Object(one)) {
            let command = A::augment_args(clap::Command::new("settings"));
            let arg = command.get_arguments().find(|arg| arg.get_id() == key.as_str());
            return SettingsError::Invalid {
                flag: arg
                    .and_then(clap::Arg::get_long)
                    .map_or_else(|| key.clone(), |long| format!("--{long}")),
                env: arg
                    .and_then(clap::Arg::get_env)
                    .map(|env| env.to_string_lossy().into_owned()),
                message: refused.to_string(),
            };
        }
    }
    SettingsError::Serde(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use std::path::PathBuf;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct Config {
        name: String,
        count: u32,
        items: Vec<String>,
        on: bool,
        level: Level,
        path: Option<PathBuf>,
    }

    impl Default for Config {
        fn default() -> Self {
            Self {
                name: "default".into(),
                count: 1,
                items: vec!["d".into()],
                on: false,
                level: Level::Low,
                path: None,
            }
        }
    }

    #[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Level {
        Low,
        High,
    }

    #[derive(Debug, Clone, Default, clap::Args, Serialize)]
    struct Flags {
        #[arg(long, env = "ADCP_TEST_SETTINGS_CONFIG")]
        #[serde(skip)]
        config: Option<PathBuf>,
        #[arg(long, env = "ADCP_TEST_SETTINGS_NAME")]
        name: Option<String>,
        #[arg(long)]
        count: Option<u32>,
        #[arg(long = "item", value_delimiter = ',')]
        items: Vec<String>,
        #[arg(long)]
        on: bool,
        #[arg(long, env = "ADCP_TEST_SETTINGS_LEVEL")]
        level: Option<String>,
        #[arg(long)]
        path: Option<PathBuf>,
    }

    fn file() -> Config {
        Config {
            name: "file".into(),
            items: vec!["f1".into(), "f2".into()],
            on: true,
            ..Config::default()
        }
    }

    #[test]
    fn given_flags_win_over_the_file_which_wins_over_the_defaults() {
        let none = overlay(&file(), &Flags::default()).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(none, file(), "nothing given: the file's, and the defaults under it");
        let flags = Flags {
            name: Some("flag".into()),
            items: vec!["x".into()],
            level: Some("high".into()),
            path: Some(PathBuf::from("p")),
            ..Flags::default()
        };
        let config = overlay(&file(), &flags).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(
            config,
            Config {
                name: "flag".into(),
                count: 1,
                items: vec!["x".into()],
                on: true,
                level: Level::High,
                path: Some(PathBuf::from("p")),
            },
            "a list given replaces the file's; an absent switch keeps the file's true"
        );
        let over_defaults = overlay(&Config::default(), &flags).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(over_defaults.items, ["x"]);
        assert_eq!(over_defaults.count, 1);
    }

    #[test]
    fn a_refused_value_names_its_flag_and_variable() {
        let flags = Flags {
            name: Some("flag".into()),
            level: Some("medium".into()),
            ..Flags::default()
        };
        let e = overlay(&file(), &flags)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("--level (or ADCP_TEST_SETTINGS_LEVEL): unknown variant `medium`"),
            "{e}"
        );
    }

    #[test]
    fn a_flag_the_configuration_has_no_key_for_is_an_error() {
        #[derive(Debug, Clone, Default, clap::Args, Serialize)]
        struct Stray {
            #[arg(long = "colour")]
            color: Option<String>,
        }
        let stray = Stray {
            color: Some("red".into()),
        };
        match overlay(&Config::default(), &stray) {
            Err(SettingsError::Invalid {
                flag,
                env: None,
                message,
            }) => {
                assert_eq!(flag, "--colour");
                assert!(message.contains("unknown field `color`"), "{message}");
            }
            other => unreachable!("{other:?}"),
        }
        // Not given: not looked at.
        assert!(overlay(&Config::default(), &Stray::default()).is_ok());
    }
}
