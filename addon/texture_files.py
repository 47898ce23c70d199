"""Data textures as files, without Blender or an imaging library: OpenEXR (uncompressed scanlines, half or
float32 channels) and PNG (8-bit RGBA), both written from numpy arrays, so the add-on ships no image package.

Both writers take an image as an (H, W, 4) RGBA array whose row 0 is the top row of the picture (the first
scanline in the file), which is where Unreal's texture lookups put v = 0. Values are written as they are: no
colour transform, no gamma (the PNG carries no gAMA/sRGB chunk: the engine must import it as linear data).

OpenEXR layout (the file format's published structure): magic 20000630, version 2 (single-part scanline), a
header of typed attributes (channels, compression NONE, dataWindow, displayWindow, lineOrder INCREASING_Y,
pixelAspectRatio, screenWindowCenter, screenWindowWidth), a table of one 64-bit file offset per scanline, then
per scanline its y, its byte count and each channel's W values, channels in alphabetical order (A, B, G, R).
Half channels hold the float16 bit patterns unchanged, so an integer packed into a half's bits (Pivot Painter
2's "Int as float") reaches the file bit-exact, subnormals included.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

_EXR_MAGIC = 20000630
_EXR_HALF, _EXR_FLOAT = 1, 2
_CHANNELS = ("A", "B", "G", "R")  # the file's alphabetical order
_RGBA_INDEX = {"R": 0, "G": 1, "B": 2, "A": 3}


def _attribute(name: str, kind: str, value: bytes) -> bytes:
    return name.encode() + b"\0" + kind.encode() + b"\0" + struct.pack("<i", len(value)) + value


def _exr_header(width: int, height: int, pixel_type: int) -> bytes:
    channels = b"".join(c.encode() + b"\0" + struct.pack("<iB3xii", pixel_type, 0, 1, 1) for c in _CHANNELS)
    window = struct.pack("<iiii", 0, 0, width - 1, height - 1)
    return b"".join(
        (
            struct.pack("<ii", _EXR_MAGIC, 2),
            _attribute("channels", "chlist", channels + b"\0"),
            _attribute("compression", "compression", b"\0"),
            _attribute("dataWindow", "box2i", window),
            _attribute("displayWindow", "box2i", window),
            _attribute("lineOrder", "lineOrder", b"\0"),
            _attribute("pixelAspectRatio", "float", struct.pack("<f", 1.0)),
            _attribute("screenWindowCenter", "v2f", struct.pack("<ff", 0.0, 0.0)),
            _attribute("screenWindowWidth", "float", struct.pack("<f", 1.0)),
            b"\0",
        )
    )


def write_exr(path, rgba: np.ndarray) -> Path:
    """Write ``rgba`` (H, W, 4), float16 (half channels) or float32 (float channels), as an uncompressed
    scanline OpenEXR file with channels R, G, B, A; row 0 is the top scanline. Returns the path."""
    rgba = np.asarray(rgba)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype not in (np.float16, np.float32):
        raise ValueError(f"write_exr needs an (H, W, 4) float16 or float32 array, got {rgba.shape} {rgba.dtype}")
    height, width = rgba.shape[:2]
    pixel_type = _EXR_HALF if rgba.dtype == np.float16 else _EXR_FLOAT
    header = _exr_header(width, height, pixel_type)
    # one block per scanline: y, byte count, then the channels' rows in file order
    planes = rgba[:, :, [_RGBA_INDEX[c] for c in _CHANNELS]].transpose(0, 2, 1).astype(rgba.dtype.newbyteorder("<"))
    line_bytes = planes[0].nbytes
    block = np.empty((height, 8 + line_bytes), np.uint8)
    block[:, :4] = np.arange(height, dtype="<i4").view(np.uint8).reshape(height, 4)
    block[:, 4:8] = np.frombuffer(struct.pack("<i", line_bytes), np.uint8)
    block[:, 8:] = np.ascontiguousarray(planes).view(np.uint8).reshape(height, line_bytes)
    first = len(header) + 8 * height
    offsets = (first + np.arange(height, dtype=np.int64) * (8 + line_bytes)).astype("<u8")
    path = Path(path)
    path.write_bytes(header + offsets.tobytes() + block.tobytes())
    return path


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, rgba: np.ndarray) -> Path:
    """Write ``rgba`` (H, W, 4) uint8 as an 8-bit RGBA PNG (filter type 0 on every row, zlib level 9); row 0
    is the top row. Returns the path."""
    rgba = np.asarray(rgba)
    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
        raise ValueError(f"write_png needs an (H, W, 4) uint8 array, got {rgba.shape} {rgba.dtype}")
    height, width = rgba.shape[:2]
    rows = np.concatenate((np.zeros((height, 1), np.uint8), rgba.reshape(height, 4 * width)), axis=1)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8-bit, colour type 6 (RGBA)
    data = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr)
    data += _png_chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)) + _png_chunk(b"IEND", b"")
    path = Path(path)
    path.write_bytes(data)
    return path
