#!/usr/bin/env python3
"""Split a delimited protobuf stream (varint length, then message, repeated;
the Chakra .et framing) into one file per frame: OUTDIR/000000.bin, ...

Frame 0 is the GlobalMetadata, the rest are Nodes. Also writes
OUTDIR/nodes.stream: every node frame as field 1 of one message
(`message NodeStream { repeated ChakraProtoMsg.Node node = 1; }`), so one
protoc call decodes all nodes instead of one call per node. Prints the
frame count.
Exits 1 on a truncated length or frame, or on a 0-byte frame (Chakra's
Python tools read a 0-byte record as end of file, silently dropping the
rest of the trace).

usage: split_delimited.py FILE OUTDIR
"""
import os
import sys


def frames(data):
    pos = 0
    while pos < len(data):
        start, length, shift = pos, 0, 0
        while True:
            if pos == len(data):
                raise ValueError(f"truncated frame length at byte {start}")
            if shift > 28:
                raise ValueError(f"frame length varint too long at byte {start}")
            b = data[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if length == 0:
            raise ValueError(f"0-byte record at byte {start}")
        if length > len(data) - pos:
            raise ValueError(f"truncated frame at byte {start}: length {length}, "
                             f"{len(data) - pos} bytes left")
        yield data[pos:pos + length]
        pos += length


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, outdir = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        data = f.read()
    os.makedirs(outdir, exist_ok=True)
    count = 0
    stream = bytearray()
    try:
        for frame in frames(data):
            with open(os.path.join(outdir, f"{count:06d}.bin"), "wb") as out:
                out.write(frame)
            if count > 0:
                stream += b"\x0a" + varint(len(frame)) + frame
            count += 1
    except ValueError as e:
        print(f"{path}: {e}", file=sys.stderr)
        sys.exit(1)
    if count == 0:
        print(f"{path}: empty file", file=sys.stderr)
        sys.exit(1)
    with open(os.path.join(outdir, "nodes.stream"), "wb") as out:
        out.write(stream)
    print(count)


if __name__ == "__main__":
    main()
