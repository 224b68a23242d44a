"""Pure codecs of the bookie protocol (v2 binary and v3 protobuf), entry format and digests."""
