//! `adcp-sig normalize`: lossy URL normalization for deduplication.

use crate::cli::NormalizeArgs;
use crate::exit::Exit;
use adcp_canon::normalize::{
    DirectoryIndex, Glob, NormalizeError, NormalizeOptions, Normalizer, ParamFilter, SiteRules,
};
use serde::Serialize;
use std::io::Write;

/// `--json` line for a normalized URL.
#[derive(Serialize)]
struct Normalized<'a> {
    input: &'a str,
    normalized: &'a str,
}

/// `--json` line for a rejected URL.
#[derive(Serialize)]
struct Rejected<'a> {
    input: &'a str,
    error: &'static str,
    message: String,
}

pub fn run(args: &NormalizeArgs) -> Exit {
    let normalizer = match build(args) {
        Ok(n) => n,
        Err(message) => {
            eprintln!("adcp-sig: {message}");
            return Exit::Usage;
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut exit = Exit::Ok;
    for input in &args.urls {
        let result = normalizer.normalize(input);
        if result.is_err() {
            exit = Exit::Rejected;
        }
        let written = match (&result, args.json) {
            (Ok(normalized), true) => json_line(&mut out, &Normalized { input, normalized }),
            (Err(e), true) => json_line(
                &mut out,
                &Rejected {
                    input,
                    error: error_code(e),
                    message: e.to_string(),
                },
            ),
            (Ok(normalized), false) => writeln!(out, "{normalized}"),
            (Err(e), false) => {
                eprintln!("adcp-sig: rejected {input:?}: {}: {e}", error_code(e));
                Ok(())
            }
        };
        if written.is_err() {
            return Exit::Usage;
        }
    }
    exit
}

fn json_line(out: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let line = serde_json::to_string(value).map_err(std::io::Error::other)?;
    writeln!(out, "{line}")
}

/// A stable identifier per failure class, for scripts.
fn error_code(e: &NormalizeError) -> &'static str {
    match e {
        NormalizeError::InputTooLong { .. } => "url_too_long",
        NormalizeError::Canonicalize(_) => "url_malformed",
        _ => "normalization_failed",
    }
}

fn build(args: &NormalizeArgs) -> Result<Normalizer, String> {
    let mut options = NormalizeOptions {
        sort_query: args.sort_query,
        www_alias: args.www_alias,
        drop_empty_query: args.drop_empty_query,
        ..NormalizeOptions::default()
    };
    if args.directory_index {
        options.directory_index = DirectoryIndex::Default;
    }
    if !args.remove_param.is_empty() {
        let globs = args
            .remove_param
            .iter()
            .map(|g| Glob::new(g).map_err(|e| format!("--remove-param {g:?}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        options.param_filter = ParamFilter::Remove(globs);
    }
    let rules = match &args.rules {
        Some(path) => SiteRules::load(path).map_err(|e| format!("--rules {}: {e}", path.display()))?,
        None => SiteRules::default(),
    };
    Ok(Normalizer::with_site_rules(options, rules))
}
