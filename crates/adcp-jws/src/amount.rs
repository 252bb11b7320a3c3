//! Exact decimal amounts and the governance phases.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A non-negative decimal amount, compared exactly (never through floats).
///
/// Held normalized: integer digits without leading zeros, fraction digits
/// without trailing zeros, so `10.50`, `10.5` and `1.05e1` are one value.
/// [`Display`](fmt::Display) writes that normal form, which is also what
/// `JSON.stringify` writes for the values a currency amount takes.
///
/// ```
/// use adcp_jws::Amount;
/// let ceiling: Amount = "1".parse()?;
/// assert!("1.01".parse::<Amount>()? > ceiling);
/// assert_eq!("10.50".parse::<Amount>()?, "1.05e1".parse::<Amount>()?);
/// # Ok::<(), adcp_jws::AmountError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Amount {
    int: String,
    frac: String,
}

/// The text is not a non-negative decimal number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmountError(String);

impl fmt::Display for AmountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a non-negative decimal amount: {:?}", self.0)
    }
}

impl std::error::Error for AmountError {}

/// Longest accepted amount text, and longest normal form: an exponent may
/// not spell a value whose normal form would be longer (`2e64`), so that
/// every accepted amount's normal form parses back to it.
const MAX_TEXT: usize = 64;
const MAX_EXPONENT: i64 = 64;

impl FromStr for Amount {
    type Err = AmountError;

    /// Parses JSON-number syntax without a sign (`0`, `12.50`, `1e3`,
    /// `2.5E-1`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || AmountError(s.chars().take(MAX_TEXT).collect());
        if s.is_empty() || s.len() > MAX_TEXT {
            return Err(err());
        }
        let (mantissa, exponent) = match s.find(['e', 'E']) {
            Some(i) => {
                let e = &s[i + 1..];
                let e = e.strip_prefix('+').unwrap_or(e);
                let exp: i64 = e.parse().map_err(|_| err())?;
                if exp.abs() > MAX_EXPONENT {
                    return Err(err());
                }
                (&s[..i], exp)
            }
            None => (s, 0),
        };
        let (int, frac) = match mantissa.split_once('.') {
            Some((i, f)) if !f.is_empty() => (i, f),
            Some(_) => return Err(err()),
            None => (mantissa, ""),
        };
        if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        // All digits, and the position of the decimal point in them.
        let digits = format!("{int}{frac}");
        let point = i64::try_from(int.len()).map_err(|_| err())? + exponent;
        let (int, frac) = if point <= 0 {
            let zeros = usize::try_from(-point).map_err(|_| err())?;
            (String::new(), format!("{}{digits}", "0".repeat(zeros)))
        } else {
            let p = usize::try_from(point).map_err(|_| err())?;
            if p >= digits.len() {
                (format!("{digits}{}", "0".repeat(p - digits.len())), String::new())
            } else {
                (digits[..p].to_owned(), digits[p..].to_owned())
            }
        };
        let amount = Self {
            int: int.trim_start_matches('0').to_owned(),
            frac: frac.trim_end_matches('0').to_owned(),
        };
        if amount.normal_len() > MAX_TEXT {
            return Err(err());
        }
        Ok(amount)
    }
}

impl Amount {
    /// The length of the [`Display`](fmt::Display) form.
    fn normal_len(&self) -> usize {
        let frac = if self.frac.is_empty() { 0 } else { 1 + self.frac.len() };
        self.int.len().max(1) + frac
    }

    /// Zero.
    #[must_use]
    pub fn zero() -> Self {
        Self {
            int: String::new(),
            frac: String::new(),
        }
    }

    /// The amount of a JSON number (`None` for a negative or non-finite
    /// one). Integers are exact; a fraction is read from the shortest text
    /// that round-trips its binary value, which is the text the sender
    /// wrote for any amount of up to 15 significant digits.
    #[must_use]
    pub fn from_json(n: &serde_json::Number) -> Option<Self> {
        if let Some(u) = n.as_u64() {
            return u.to_string().parse().ok();
        }
        if n.as_i64().is_some() {
            return None;
        }
        let f = n.as_f64()?;
        if !f.is_finite() || f < 0.0 {
            return None;
        }
        n.to_string().parse().ok()
    }
}

impl Ord for Amount {
    fn cmp(&self, other: &Self) -> Ordering {
        self.int
            .len()
            .cmp(&other.int.len())
            .then_with(|| self.int.cmp(&other.int))
            .then_with(|| self.frac.cmp(&other.frac))
    }
}

impl PartialOrd for Amount {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let int = if self.int.is_empty() { "0" } else { &self.int };
        if self.frac.is_empty() {
            f.write_str(int)
        } else {
            write!(f, "{int}.{}", self.frac)
        }
    }
}

/// A signed `authorized_commitment` ceiling, or the commitment a service
/// computed for the operation it is about to perform.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Commitment {
    /// The amount (exact decimal).
    pub amount: Amount,
    /// The ISO 4217 currency code, compared byte for byte.
    pub currency: String,
}

/// The authorization stage a token is for (the `phase` claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// A buyer-supplied token on an inbound governed request.
    Intent,
    /// The execution token before committing a create.
    Purchase,
    /// The execution token before committing an update.
    Modification,
    /// The execution token for a delivery check.
    Delivery,
}

impl Phase {
    /// The claim value.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Intent => "intent",
            Self::Purchase => "purchase",
            Self::Modification => "modification",
            Self::Delivery => "delivery",
        }
    }

    /// Whether this is an execution phase (`purchase`, `modification`,
    /// `delivery`): 30-day `exp` cap, fresh revocation list required.
    #[must_use]
    pub const fn is_execution(self) -> bool {
        !matches!(self, Self::Intent)
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "intent" => Ok(Self::Intent),
            "purchase" => Ok(Self::Purchase),
            "modification" => Ok(Self::Modification),
            "delivery" => Ok(Self::Delivery),
            other => Err(format!("unknown phase {other:?}")),
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn a(s: &str) -> Amount {
        s.parse().unwrap()
    }

    #[test]
    fn normal_form_and_order() {
        assert_eq!(a("0").to_string(), "0");
        assert_eq!(a("000.000").to_string(), "0");
        assert_eq!(a("10.50").to_string(), "10.5");
        assert_eq!(a("1e3").to_string(), "1000");
        assert_eq!(a("25E-3").to_string(), "0.025");
        assert!(a("1.01") > a("1"));
        assert!(a("0.01") > a("0"));
        assert!(a("350") < a("500"));
        assert!(a("99.999") < a("100"));
        assert_eq!(a("0.1").cmp(&a("0.10")), Ordering::Equal);
        for bad in ["", "-1", "1.", ".5", "1e", "a", "1e999", "+1"] {
            assert!(bad.parse::<Amount>().is_err(), "{bad}");
        }
    }

    /// Fuzz finding: `2e64` spelled a 65-digit normal form, longer than any
    /// accepted text, so its normal form did not parse back.
    #[test]
    fn every_accepted_amount_is_a_fixed_point_of_its_normal_form() {
        for text in ["2e64", "1e64", "9.5e63", "1e-64", "0.5e-63", "12345678901234567890e44"] {
            if let Ok(amount) = text.parse::<Amount>() {
                assert_eq!(amount.to_string().parse::<Amount>().ok(), Some(amount), "{text}");
            }
        }
        assert!("2e64".parse::<Amount>().is_err());
        assert_eq!(a("2e63").to_string().len(), 64);
        assert!("1e-64".parse::<Amount>().is_err(), "0. and 64 fraction digits");
        assert_eq!(a("1e-62").to_string().len(), 64);
    }

    #[test]
    fn from_json_numbers() {
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).unwrap();
        assert_eq!(Amount::from_json(&n("1.01")), Some(a("1.01")));
        assert_eq!(Amount::from_json(&n("0.1")), Some(a("0.1")));
        assert_eq!(Amount::from_json(&n("7")), Some(a("7")));
        assert_eq!(Amount::from_json(&n("-1")), None);
        assert_eq!(Amount::from_json(&n("-0.5")), None);
    }
}
