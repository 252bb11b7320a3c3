//! The lossy normalizer with every rule on, and site-rules parsing: no
//! panics, and normalization is idempotent on everything it accepts.
#![no_main]
#![forbid(unsafe_code)]

use adcp_canon::normalize::{DirectoryIndex, Glob, NormalizeOptions, Normalizer, ParamFilter, SiteRules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    // The same bytes as a rules file, in both formats.
    let _ = SiteRules::from_json_str(s);
    let _ = SiteRules::from_toml_str(s);
    let _ = Glob::new(s).map(|g| g.matches(s));

    let options = NormalizeOptions {
        trailing_slash: true,
        directory_index: DirectoryIndex::Default,
        case_insensitive_paths: true,
        www_alias: true,
        sort_query: true,
        param_filter: ParamFilter::Remove(vec![Glob::new("utm_*").expect("valid glob")]),
        drop_empty_params: true,
        drop_empty_query: true,
        ..NormalizeOptions::default()
    };
    let normalizer = Normalizer::new(options);
    if let Ok(once) = normalizer.normalize(s) {
        let twice = normalizer.normalize(&once).expect("normalized output must be accepted");
        assert_eq!(once, twice, "not idempotent");
    }
});
