//! Why a webhook body is refused before dispatch: one stable code and one
//! fixed human text per reason. Neither ever echoes the input, so the
//! receiver can put both in a 400 body as they are.

/// Why [`WebhookPayload::classify`](super::WebhookPayload::classify)
/// refused a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// Not a JSON object, a delivery-report `result` posted bare, or a
    /// known kind without one of its required members (the code the
    /// receiver-envelope vectors use).
    #[error("body is not a webhook envelope")]
    MissingEnvelopeFields,
    /// An `idempotency_key` absent or not of the schemas' shape
    /// (`^[A-Za-z0-9_.:-]{16,255}$`, and not one repeated character).
    #[error("webhook payload has no valid idempotency_key")]
    MissingIdempotencyKey,
    /// A task envelope whose top-level `status` is not a task status.
    #[error("webhook envelope status is not a task status")]
    InvalidEnvelopeStatus,
    /// A member the model types is present with the wrong JSON type or
    /// outside its schema's bounds.
    #[error("webhook payload member has the wrong type or shape")]
    InvalidPayloadMember,
    /// An activation challenge whose `challenge` value is not 32–255
    /// characters of `[A-Za-z0-9_.:-]`, or whose `scope` is unknown.
    #[error("webhook challenge is malformed")]
    InvalidChallenge,
    /// A known kind that the registration's channel never carries.
    #[error("payload kind is not delivered on this registration channel")]
    UnexpectedPayloadKind,
    /// No known kind, and no valid `idempotency_key` to accept it as a
    /// generic payload (or generic payloads are not accepted).
    #[error("payload kind is not recognized")]
    UnknownPayloadKind,
}

impl PayloadError {
    /// Every error, in declaration order.
    pub const ALL: [Self; 7] = [
        Self::MissingEnvelopeFields,
        Self::MissingIdempotencyKey,
        Self::InvalidEnvelopeStatus,
        Self::InvalidPayloadMember,
        Self::InvalidChallenge,
        Self::UnexpectedPayloadKind,
        Self::UnknownPayloadKind,
    ];

    /// The stable code (`missing_envelope_fields`, `missing_idempotency_key`
    /// and `invalid_envelope_status` are the receiver-envelope vectors'
    /// codes, and agree with [`crate::envelope::EnvelopeError::code`]).
    #[must_use]
    pub const fn code(self) -> &'static str {
        match self {
            Self::MissingEnvelopeFields => "missing_envelope_fields",
            Self::MissingIdempotencyKey => "missing_idempotency_key",
            Self::InvalidEnvelopeStatus => "invalid_envelope_status",
            Self::InvalidPayloadMember => "invalid_payload_member",
            Self::InvalidChallenge => "invalid_challenge",
            Self::UnexpectedPayloadKind => "unexpected_payload_kind",
            Self::UnknownPayloadKind => "unknown_payload_kind",
        }
    }

    /// A fixed human-readable text for the code (never the input).
    #[must_use]
    pub const fn message(self) -> &'static str {
        match self {
            Self::MissingEnvelopeFields => {
                "the body is not a complete webhook payload: a required member is missing (a delivery report must be sent inside the task envelope's result)"
            }
            Self::MissingIdempotencyKey => {
                "the payload has no idempotency_key of 16 to 255 characters from [A-Za-z0-9_.:-]"
            }
            Self::InvalidEnvelopeStatus => "the task envelope's top-level status is not a task status",
            Self::InvalidPayloadMember => "a payload member has the wrong JSON type or is outside its schema's bounds",
            Self::InvalidChallenge => "the challenge value must be 32 to 255 characters from [A-Za-z0-9_.:-]",
            Self::UnexpectedPayloadKind => "this payload kind is not delivered on the registration channel of this endpoint",
            Self::UnknownPayloadKind => "the payload kind is not recognized",
        }
    }
}
