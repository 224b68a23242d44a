"""Streams over ledgers: append/read/tail with stable positions, time and size retention
(RocketMQ-style), key compaction (Kafka-style). See ``stream``, ``retention``, ``cleaner``, ``compaction``."""

from bookie.streams.metadata import Conflict, NoSuchStream, Segment, StreamError, StreamExists, StreamMetadata
from bookie.streams.policies import DEFAULTS, Policies
from bookie.streams.records import Record
from bookie.streams.stream import RecordTooLarge, StreamReader, Streams, StreamTruncated, StreamWriter, WriterFenced

__all__ = ["DEFAULTS", "Conflict", "NoSuchStream", "Policies", "Record", "RecordTooLarge", "Segment", "StreamError",
           "StreamExists", "StreamMetadata", "StreamReader", "StreamTruncated", "StreamWriter", "Streams",
           "WriterFenced"]
