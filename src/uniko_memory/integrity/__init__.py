"""Runtime integrity: every read path keeps forgotten, invalidated and out-of-scope memories out
(``audit``), one probe per ``ReadPath``."""

from __future__ import annotations

from .audit import AUDIT_VIEWER, PROBES, AuditConfig, AuditReport, CheckResult, Finding, audit, probe_for
from .paths import FORGOTTEN, INVALIDATED, OUT_OF_SCOPE, PROBE_FAILURE, ReadPath

__all__ = [
    "AUDIT_VIEWER",
    "FORGOTTEN",
    "INVALIDATED",
    "OUT_OF_SCOPE",
    "PROBES",
    "PROBE_FAILURE",
    "AuditConfig",
    "AuditReport",
    "CheckResult",
    "Finding",
    "ReadPath",
    "audit",
    "probe_for",
]
