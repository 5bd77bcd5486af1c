#!/usr/bin/env python3
"""Damages the zstd frame of the first plane of a compressed OIW4 file in place, leaving the
header and directory valid (so only decoding can tell), for the hostile battery (oiw4.sh).

  zframe.py FILE size        the frame declares one byte more or less than the plane holds
  zframe.py FILE truncate    the frame's final block is not marked last: the frame is cut short
"""
import struct
import sys

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
    f.seek(0)
    f.write(data)
