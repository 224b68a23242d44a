"""Invalid GC settings refuse start-up with a message naming the keys (BookKeeper's validation rules)."""

from __future__ import annotations

import pytest
from bookie.config import BookieConfig, ConfigError


@pytest.mark.parametrize(("values", "named"), [
    ({"minorCompactionThreshold": 0.9, "majorCompactionThreshold": 0.8}, "minorCompactionThreshold"),
    ({"majorCompactionThreshold": 1.5}, "majorCompactionThreshold"),
    ({"minorCompactionThreshold": -0.1}, "minorCompactionThreshold"),
    ({"minorCompactionInterval": 90000}, "minorCompactionInterval"),
    ({"gcWaitTime": 7200000}, "gcWaitTime"),
    ({"majorCompactionWindow": "3am"}, "majorCompactionWindow"),
    ({"gcDiskPressureRatio": 1.5}, "gcDiskPressureRatio"),
    ({"gcEntryLogForcedDestroyIntervalMs": -1}, "gcEntryLogForcedDestroyIntervalMs"),
])
def test_invalid_gc_settings_name_the_keys(values: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError) as err:
        BookieConfig.from_mapping(values, "bookie.conf")
    assert named in str(err.value)


def test_valid_gc_settings_accepted() -> None:
    conf = BookieConfig.from_mapping({"majorCompactionWindow": "01:00-05:00", "gcDiskPressureRatio": 0.85,
                                      "gcEntryLogDeletionPauseMs": 50})
    assert conf.major_compaction_window == "01:00-05:00"
