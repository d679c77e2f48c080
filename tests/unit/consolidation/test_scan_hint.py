"""Where a consolidation scan starts: everything first, then narrow windows, a wide one regularly.

A 10-minute window at every cycle made each cycle of a sustained import re-read every
observation of the last 10 minutes (~27,000 at 45 a second); a late commit must still be found.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from uniko_memory.consolidation.load import (
    NARROW_SLACK,
    SCAN_SLACK,
    WIDE_EVERY,
    scan_hint,
    set_scan_hint,
)

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class _Store:
    """Any object a weak reference can point at stands in for the store here."""


def test_the_first_scan_reads_everything_then_windows_narrow_and_widen_again() -> None:
    store = _Store()
    first = scan_hint(store, "a", T0)
    assert first.since is None and first.wide
    set_scan_hint(store, "a", T0, first)
    t1 = T0 + timedelta(seconds=20)
    narrow = scan_hint(store, "a", t1)
    assert narrow == type(narrow)(T0 - NARROW_SLACK, False)
    set_scan_hint(store, "a", t1, narrow)
    t2 = T0 + WIDE_EVERY
    wide = scan_hint(store, "a", t2)
    # WIDE_EVERY after the last wide scan: back SCAN_SLACK from the latest complete scan.
    assert wide.wide and wide.since == t1 - SCAN_SLACK
    set_scan_hint(store, "a", t2, wide)
    assert not scan_hint(store, "a", t2 + timedelta(seconds=5)).wide
    assert scan_hint(store, "other", t2).since is None  # per agent


def test_a_commit_up_to_ten_minutes_late_is_inside_the_next_wide_window() -> None:
    store = _Store()
    hint = scan_hint(store, "a", T0)
    set_scan_hint(store, "a", T0, hint)
    now = T0
    # Cycles every 7 seconds for an hour; an observation created at `made` commits 10 minutes
    # later, just after a narrow scan: some scan from its commit on must reach back to `made`.
    made = T0 + timedelta(minutes=17, seconds=3)
    committed = made + SCAN_SLACK - WIDE_EVERY
    found_by = None
    while now < T0 + timedelta(hours=1):
        now += timedelta(seconds=7)
        hint = scan_hint(store, "a", now)
        if found_by is None and now >= committed and hint.since is not None and hint.since <= made:
            found_by = now
        set_scan_hint(store, "a", now, hint)
    assert found_by is not None and found_by - committed <= WIDE_EVERY


def test_most_scans_are_narrow_in_a_steady_stream_of_cycles() -> None:
    store = _Store()
    now = T0
    kinds = []
    for _ in range(600):  # a cycle every 5 seconds for 50 minutes
        hint = scan_hint(store, "a", now)
        kinds.append(hint.wide)
        set_scan_hint(store, "a", now, hint)
        now += timedelta(seconds=5)
    assert sum(kinds) == 10  # the first (full) scan and one every WIDE_EVERY
