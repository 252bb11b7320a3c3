//! The relay API's OpenAPI 3.1 document, served at `/openapi.json` and
//! checked against the router by the tests.

use serde_json::{json, Value};

fn error_response(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

/// The document.
#[must_use]
pub fn openapi_document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "adcp-sig relay",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Durable, signed AdCP webhook delivery for sellers in any language. Every refusal is {\"error\": code, \"message\": text} and enqueues nothing."
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error", "message"],
                    "properties": {"error": {"type": "string"}, "message": {"type": "string"}}
                },
                "Destination": {
                    "type": "object",
                    "required": ["url"],
                    "additionalProperties": false,
                    "properties": {
                        "url": {"type": "string", "format": "uri"},
                        "operation_id": {"type": "string"},
                        "token": {"type": "string"},
                        "coalescing_opt_in_seconds": {"type": "integer", "minimum": 0, "maximum": 86400, "description": "The longest coalescing window the buyer opted into for this destination (above a type's default only with it)."},
                        "authentication": {
                            "type": ["object", "null"],
                            "description": "Deprecated legacy scheme: {\"schemes\": [\"HMAC-SHA256\"|\"Bearer\"], \"credentials\": …}"
                        }
                    }
                },
                "EventRequest": {
                    "type": "object",
                    "required": ["payload"],
                    "additionalProperties": false,
                    "description": "One of destination and channel.",
                    "properties": {
                        "destination": {"$ref": "#/components/schemas/Destination"},
                        "channel": {"type": "string", "description": "A registered channel: its registration is the destination, and a paused, unactivated or closed channel refuses the event (409)."},
                        "notification_type": {"type": "string", "description": "The payload's own type (top level, or result.notification_type); absent only for payloads without one."},
                        "payload": {"type": "object", "description": "The webhook body; idempotency_key is generated when absent."},
                        "principal": {"type": "string"},
                        "resources": {"type": "array", "items": {"type": "string"}, "maxItems": 64},
                        "coalescing_key": {"type": "string"},
                        "coalescing_window_seconds": {"type": "integer", "minimum": 0, "maximum": 86400},
                        "signing_scope": {"type": "string"}
                    }
                },
                "Enqueued": {
                    "type": "object",
                    "required": ["id", "idempotency_key"],
                    "properties": {"id": {"type": "string"}, "idempotency_key": {"type": "string"}}
                },
                "ChannelRequest": {
                    "type": "object",
                    "required": ["kind", "registration"],
                    "properties": {
                        "kind": {"enum": ["push_notification_config", "reporting_webhook", "account", "agent"]},
                        "media_buy_id": {"type": "string", "description": "For push_notification_config and reporting_webhook."},
                        "account_id": {"type": "string", "description": "For account subscribers."},
                        "owner": {"type": "string", "description": "For agent subscribers: the principal that owns the subscriber."},
                        "registration": {"type": "object", "description": "As the buyer registered it: a push_notification_config, a reporting_webhook, or a notification_configs[] entry (subscriber_id, url, event_types, active, authentication)."}
                    }
                },
                "Channel": {
                    "type": "object",
                    "required": ["id", "kind", "state", "proven", "registration"],
                    "properties": {
                        "id": {"type": "string"},
                        "kind": {"type": "string"},
                        "state": {"enum": ["active", "pending_activation", "paused", "closed"]},
                        "proven": {"type": "boolean", "description": "An activation challenge succeeded for exactly this registration."},
                        "registration": {"type": "object", "description": "Without authentication.credentials (write-only)."},
                        "rebuilt": {"type": "integer", "description": "Events never attempted, rebuilt for the new registration by this call."}
                    }
                },
                "ReportingRequest": {
                    "type": "object",
                    "required": ["reporting_webhook", "reporting_capabilities", "start_time", "end_time"],
                    "properties": {
                        "reporting_webhook": {"type": "object", "description": "core/reporting-webhook.json, as the buyer registered it."},
                        "reporting_capabilities": {"type": "array", "items": {"type": "object"}, "description": "The reporting_capabilities of the buy's products (one timezone; the frequency offered by each)."},
                        "start_time": {"type": "string", "format": "date-time"},
                        "end_time": {"type": "string", "format": "date-time"},
                        "principal": {"type": "string"},
                        "signing_scope": {"type": "string"}
                    }
                },
                "ReportingStream": {
                    "type": "object",
                    "required": ["media_buy_id", "operation_id", "sequence_number", "closed"],
                    "properties": {
                        "media_buy_id": {"type": "string"},
                        "operation_id": {"type": "string"},
                        "sequence_number": {"type": "integer", "description": "The last one sent (0: none yet)."},
                        "next_period_start": {"type": "string", "format": "date-time"},
                        "next_check_at": {"type": ["string", "null"], "format": "date-time"},
                        "ended": {"type": ["object", "null"]},
                        "closed": {"type": "boolean"}
                    }
                },
                "Event": {
                    "type": "object",
                    "required": ["id", "idempotency_key", "state", "attempts"],
                    "properties": {
                        "id": {"type": "string"},
                        "idempotency_key": {"type": "string"},
                        "state": {"enum": ["pending", "in_flight", "delivered", "refused", "expired", "superseded"]},
                        "attempts": {"type": "integer", "minimum": 0},
                        "reason": {"type": ["string", "null"]}
                    }
                }
            }
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/events": {
                "post": {
                    "summary": "Enqueue one event for one destination",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EventRequest"}}}},
                    "responses": {
                        "202": {"description": "Enqueued (or the same key and payload again)", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Enqueued"}}}},
                        "400": error_response("Malformed JSON, bad destination, refused destination, unknown or mismatched notification type, invalid payload"),
                        "401": error_response("API token missing or wrong"),
                        "404": error_response("No such channel"),
                        "409": error_response("The idempotency_key is bound to another payload, or the channel is paused, not activated or closed"),
                        "413": error_response("Body over the limit"),
                        "415": error_response("Not application/json"),
                        "503": error_response("The store is unavailable; nothing was enqueued")
                    }
                }
            },
            "/v1/events/{id}": {
                "get": {
                    "summary": "One event",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "The event", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}}},
                        "404": error_response("No such event"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/events/{id}/redrive": {
                "post": {
                    "summary": "Send a refused or expired event again, inside its horizon",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "Pending again", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Event"}}}},
                        "404": error_response("No such event"),
                        "409": error_response("Not refused or expired, or past its horizon"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/activity": {
                "get": {
                    "summary": "webhook_activity records, newest first",
                    "parameters": [
                        {"name": "url", "in": "query", "schema": {"type": "string"}},
                        {"name": "principal", "in": "query", "schema": {"type": "string"}},
                        {"name": "resource", "in": "query", "schema": {"type": "string"}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}}
                    ],
                    "responses": {
                        "200": {"description": "{\"webhook_activity\": [core/webhook-activity-record.json …]}"},
                        "400": error_response("Neither url nor principal, or a limit outside 1-200"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/channels": {
                "put": {
                    "summary": "Register or update a channel; an update rebuilds its events never attempted",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ChannelRequest"}}}},
                    "responses": {
                        "200": {"description": "The channel", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "400": error_response("Malformed request, unusable registration, refused destination"),
                        "401": error_response("API token missing or wrong"),
                        "409": error_response("The channel is closed"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/channels/{id}": {
                "get": {
                    "summary": "One channel",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "The channel", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "404": error_response("No such channel"),
                        "503": error_response("The store is unavailable")
                    }
                },
                "delete": {
                    "summary": "Close the channel: its held events go out now, later ones are refused",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "Closed", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "404": error_response("No such channel"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/channels/{id}/pause": {
                "post": {
                    "summary": "Pause: pending events are withdrawn, new ones refused (nothing is kept for later)",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "Paused", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "404": error_response("No such channel"),
                        "409": error_response("The channel is closed"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/channels/{id}/resume": {
                "post": {
                    "summary": "Resume: the URL is checked again; a subscriber needs a fresh activation unless one proved exactly its registration",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "Active, or pending_activation", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "400": error_response("The URL no longer passes the destination checks"),
                        "404": error_response("No such channel"),
                        "409": error_response("The channel is closed"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/channels/{id}/activate": {
                "post": {
                    "summary": "Run an account or agent subscriber's activation challenge",
                    "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "The channel and {\"activation\": {\"outcome\", \"activated\"}}", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Channel"}}}},
                        "400": error_response("Not a subscriber, or a registration the challenge refuses"),
                        "404": error_response("No such channel"),
                        "409": error_response("The channel is closed"),
                        "501": error_response("The relay was started without the seller's agent URL"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/buys/{media_buy_id}/terminate": {
                "post": {
                    "summary": "Close the buy's push_notification_config channel (held impairments go out first); its reporting_webhook channel closes with its final report",
                    "parameters": [{"name": "media_buy_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "{\"closed\": [Channel …], \"awaiting_final\": [channel id …]}"},
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/reporting/{media_buy_id}": {
                "put": {
                    "summary": "Register (or update) a buy's reporting_webhook stream; the relay asks its reporting source for the numbers",
                    "parameters": [{"name": "media_buy_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReportingRequest"}}}},
                    "responses": {
                        "200": {"description": "The stream", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReportingStream"}}}},
                        "400": error_response("Malformed request; products disagreeing on the timezone or not offering the frequency; a refused destination"),
                        "401": error_response("API token missing or wrong"),
                        "409": error_response("The stream sent its final report"),
                        "501": error_response("The relay runs no reporting source"),
                        "503": error_response("The store is unavailable")
                    }
                },
                "get": {
                    "summary": "Where a buy's reporting stream stands",
                    "parameters": [{"name": "media_buy_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "responses": {
                        "200": {"description": "The stream", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReportingStream"}}}},
                        "404": error_response("No stream for this buy"),
                        "501": error_response("The relay runs no reporting source"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/v1/reporting/{media_buy_id}/end": {
                "post": {
                    "summary": "The buy reached completed, canceled or rejected: the final report follows once its data is closed",
                    "parameters": [{"name": "media_buy_id", "in": "path", "required": true, "schema": {"type": "string"}}],
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["status", "at"], "properties": {"status": {"enum": ["completed", "canceled", "rejected"]}, "at": {"type": "string", "format": "date-time"}}}}}},
                    "responses": {
                        "200": {"description": "The stream", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReportingStream"}}}},
                        "400": error_response("Malformed request"),
                        "404": error_response("No stream for this buy"),
                        "501": error_response("The relay runs no reporting source"),
                        "503": error_response("The store is unavailable")
                    }
                }
            },
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {"description": "text/plain"}}}},
            "/healthz": {"get": {"summary": "Whether the store answers", "security": [], "responses": {"200": {"description": "ok"}, "503": error_response("The store is unavailable")}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI 3.1"}}}}
        }
    })
}
