//! The contract suite against the in-memory reference stores.

use adcp_store::testing as contract;
use adcp_store::{IdempotencyConfig, MemoryIdempotencyStore};
use adcp_verify::{MemoryReplayStore, ReplayLimits};
use async_trait::async_trait;
use std::sync::Arc;

struct Memory;

#[async_trait]
impl contract::Backend for Memory {
    type Replay = MemoryReplayStore;
    type Idem = MemoryIdempotencyStore;

    async fn new() -> Self {
        Memory
    }

    async fn replay(&self, limits: ReplayLimits) -> Arc<MemoryReplayStore> {
        Arc::new(MemoryReplayStore::new(limits))
    }

    async fn idem(&self, config: IdempotencyConfig) -> Arc<MemoryIdempotencyStore> {
        Arc::new(MemoryIdempotencyStore::new(config).unwrap())
    }

    async fn cleanup(&self) {}
}

contract::contract_tests!(Memory);

#[test]
fn config_refuses_a_window_under_24_hours() {
    use adcp_store::ConfigError;
    assert_eq!(
        IdempotencyConfig::new(86_399, 60, 10),
        Err(ConfigError::WindowTooShort { window_secs: 86_399 })
    );
    assert!(matches!(
        IdempotencyConfig::new(86_400, 0, 10),
        Err(ConfigError::InvalidLease { .. })
    ));
    assert!(matches!(
        IdempotencyConfig::new(86_400, 86_401, 10),
        Err(ConfigError::InvalidLease { .. })
    ));
    let short = IdempotencyConfig {
        window_secs: 3_600,
        ..IdempotencyConfig::default()
    };
    assert!(MemoryIdempotencyStore::new(short).is_err());
}
