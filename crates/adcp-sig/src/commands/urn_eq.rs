//! `adcp-sig urn-eq`: RFC 8141 URN-equivalence of two URNs.

use crate::cli::UrnEqArgs;
use crate::exit::Exit;
use adcp_canon::urn::Urn;
use serde_json::json;

pub fn run(args: &UrnEqArgs) -> Exit {
    let (a, b) = match (Urn::parse(&args.a), Urn::parse(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            for (input, result) in [(&args.a, a), (&args.b, b)] {
                if let Err(e) = result {
                    if args.json {
                        println!(
                            "{}",
                            json!({"input": input, "error": "urn_malformed", "message": e.to_string()})
                        );
                    } else {
                        eprintln!("adcp-sig: malformed URN {input:?}: {e}");
                    }
                }
            }
            return Exit::Usage;
        }
    };
    let equivalent = a.is_equivalent(&b);
    if args.json {
        println!(
            "{}",
            json!({
                "a": a.as_str(),
                "b": b.as_str(),
                "key_a": a.equivalence_key().as_str(),
                "key_b": b.equivalence_key().as_str(),
                "equivalent": equivalent,
            })
        );
    } else if equivalent {
        println!("equivalent\t{}", a.equivalence_key());
    } else {
        println!("not equivalent\t{}\t{}", a.equivalence_key(), b.equivalence_key());
    }
    if equivalent {
        Exit::Ok
    } else {
        Exit::Rejected
    }
}
