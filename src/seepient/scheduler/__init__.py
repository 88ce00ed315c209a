"""The worker scheduler: the only component that touches the Docker socket (verification, the aiohttp
service, the container launcher, the image builder) and the worker entrypoint that runs inside containers.

Names are imported lazily so ``python -m seepient.scheduler.worker`` inside a container loads only what a
task needs (no cryptography, no aiohttp, no Docker client).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

if TYPE_CHECKING:
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

_HOMES = {
    "SchedulerConfig": "seepient.scheduler.config",
    "SchedulerConfigError": "seepient.scheduler.config",
    "load_scheduler_config": "seepient.scheduler.config",
    "NonceStore": "seepient.scheduler.nonces",
    "NonceStoreError": "seepient.scheduler.nonces",
    "PeerRefused": "seepient.scheduler.peer",
    "authorize_peer": "seepient.scheduler.peer",
    "DispatchRefused": "seepient.scheduler.verify",
    "RefusalReason": "seepient.scheduler.verify",
    "VerifiedDispatch": "seepient.scheduler.verify",
    "verify_dispatch": "seepient.scheduler.verify",
}


__getattr__ = lazy_exports(__name__, _HOMES)
