def append_records(
    buffer: bytearray, locations: list[tuple[int, int, int]], ledger_id: int, entry_ids: list[int],
    bodies: list[bytes] | list[bytes | memoryview], index: int, position: int, log_id: int, limit: int,
    first_position: int, flush_at: int, /,
) -> tuple[int, int]: ...
