"""The worker scheduler: the only component that touches the Docker socket. So far its verification
core: config, the persistent nonce store, the dispatch check and the peer-certificate check."""

from seepient.scheduler.config import SchedulerConfig, SchedulerConfigError, load_scheduler_config
from seepient.scheduler.nonces import NonceStore, NonceStoreError
from seepient.scheduler.peer import PeerRefused, authorize_peer
from seepient.scheduler.verify import DispatchRefused, RefusalReason, VerifiedDispatch, verify_dispatch

__all__ = [
    "DispatchRefused",
    "NonceStore",
    "NonceStoreError",
    "PeerRefused",
    "RefusalReason",
    "SchedulerConfig",
    "SchedulerConfigError",
    "VerifiedDispatch",
    "authorize_peer",
    "load_scheduler_config",
    "verify_dispatch",
]
