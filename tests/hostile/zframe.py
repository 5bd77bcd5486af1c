#!/usr/bin/env python3
"""Damages the zstd frame of the first plane of a compressed OIW4 file in place, leaving the
header and directory valid (the plane's XXH3 and the header checksum are recomputed through
libxxhash, so only decoding can tell), for the hostile battery (oiw4.sh).

  zframe.py FILE size        the frame declares one byte more or less than the plane holds
  zframe.py FILE truncate    the frame's final block is not marked last: the frame is cut short
"""
import ctypes
import struct
import sys

_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_64bits.restype = ctypes.c_uint64
_xxh.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3(b):
    return _xxh.XXH3_64bits(bytes(b), len(b))


def reseal(data, off):
    """Rewrites the XXH3 of the zstd plane at `off` in its directory entry (u32 codec=1, u32 0,
    u64 offset, u64 size, u64 xxh3) and the header checksum (header [0, 56) + directory)."""
    dir_size = struct.unpack_from("<Q", data, 24)[0]
    entry = data.find(struct.pack("<IIQ", 1, 0, off), 64, 64 + dir_size)
    if entry < 0:
        sys.exit("zframe.py: the first plane's directory entry was not found")
    size = struct.unpack_from("<Q", data, entry + 16)[0]
    struct.pack_into("<Q", data, entry + 24, xxh3(data[off:off + size]))
    struct.pack_into("<Q", data, 56, xxh3(data[0:56] + data[64:64 + dir_size]))


path, mode = sys.argv[1], sys.argv[2]
with open(path, "r+b") as f:
    data = bytearray(f.read())
    off = struct.unpack_from("<Q", data, 32)[0]  # data_offset: the first plane
    if struct.unpack_from("<I", data, off)[0] != 0xFD2FB528:
        sys.exit("zframe.py: the first plane is not a zstd frame")
    fhd = data[off + 4]
    single, fcs_flag, did_flag = (fhd >> 5) & 1, fhd >> 6, fhd & 3
    pos = off + 5 + (0 if single else 1) + (0, 1, 2, 4)[did_flag]
    fcs_size = (1 if single else 0, 2, 4, 8)[fcs_flag]
    if mode == "size":
        if fcs_size == 0:
            sys.exit("zframe.py: the frame has no content size")
        data[pos] ^= 1
    elif mode == "truncate":
        k = pos + fcs_size
        while True:
            hdr = data[k] | data[k + 1] << 8 | data[k + 2] << 16
            if hdr & 1:
                data[k] &= 0xFE
                break
            k += 3 + (1 if (hdr >> 1) & 3 == 1 else hdr >> 3)
    else:
        sys.exit("zframe.py: unknown mode " + mode)
    reseal(data, off)
    f.seek(0)
    f.write(data)
