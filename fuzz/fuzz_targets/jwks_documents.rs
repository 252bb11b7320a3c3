//! Key-discovery document parsing (`adcp-jwks`): brand.json, JWKS,
//! revocation lists (plain and JWS), `get_adcp_capabilities`, adagents.json
//! and the PSL matcher. Checks more than "no panic": every parser enforces
//! its cap, an accepted JWKS has unique `kid`s, a JWS list is never taken
//! as signed without a key, and eTLD+1 answers are suffixes of the
//! canonical host.
#![no_main]
#![forbid(unsafe_code)]

use adcp_jwks::adagents::AdagentsJson;
use adcp_jwks::{parse_jwks, BrandJson, DocumentError, RevocationList, MAX_JWKS_BYTES};
use adcp_jwks::Capabilities;
use adcp_jwks::psl;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(BrandJson::Document(doc)) = BrandJson::parse(data) {
        for agent in &doc.agents {
            // Byte-equal lookup of a published URL finds an entry (or
            // reports the duplicates).
            let _ = doc.agent(&agent.url);
            let _ = agent.jwks_url();
        }
    }
    match parse_jwks(data) {
        Ok((value, _jwks)) => {
            assert!(data.len() <= MAX_JWKS_BYTES);
            let mut kids = std::collections::HashSet::new();
            for key in value["keys"].as_array().into_iter().flatten() {
                if let Some(kid) = key.get("kid").and_then(|k| k.as_str()) {
                    assert!(kids.insert(kid.to_owned()), "duplicate kid accepted");
                }
            }
        }
        Err(DocumentError::TooLarge { limit }) => assert!(data.len() > limit),
        Err(_) => {}
    }
    let _ = RevocationList::parse(data);
    if let Ok(list) = RevocationList::parse_signed(data, |_| None, true) {
        // Without any key, nothing can be verified as signed.
        assert!(!list.signed);
    }
    let _ = Capabilities::parse(data);
    let _ = AdagentsJson::parse(data, 64 * 1024);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some(domain) = psl::registrable_domain(text) {
            let canon = psl::canonical_host(text).expect("a registrable domain implies a canonical host");
            assert!(canon.ends_with(&domain));
        }
    }
});
