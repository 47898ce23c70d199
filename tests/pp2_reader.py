"""An independent reader of Unreal Pivot Painter 2 textures for the tests: the files read with OpenEXR's bindings
and Pillow, decoded with PP2's own formulas (its material functions ms_PivotPainter2_UnpackIntegerAsFloat and
ms_PivotPainter2_CalculateMeshElementIndex), nothing taken from the add-on's code."""

import numpy as np


def read_exr(path):
    """The RGBA pixels (H, W, 4) of an EXR file, as stored (float16 or float32), row 0 on top."""
    import OpenEXR  # noqa: PLC0415 (a test dependency: imported where a test reads a file)

    with OpenEXR.File(str(path)) as f:
        return np.array(f.channels()["RGBA"].pixels)


def read_png(path):
    """The RGBA pixels (H, W, 4) of an 8-bit PNG as floats 0..255."""
    from PIL import Image  # noqa: PLC0415

    with Image.open(path) as im:
        assert im.mode == "RGBA"
        return np.asarray(im).astype(float)


def unpack_integer_as_float(value):
    """UnpackIntegerAsFloat on the sampled float32: rebuild the half's bits from the float32's sign, exponent and
    mantissa, less 1024."""
    bits = np.asarray(value, np.float32).view(np.uint32).astype(np.int64)
    sign = (bits >> 16) & 0x8000
    exponent = (((bits >> 23) & 0xFF) - 127 + 15) << 10
    mantissa = (bits >> 13) & 0x3FF
    return (sign | exponent | mantissa) - 1024


def element_texels(uv, width, height):
    """CalculateMeshElementIndex on Blender UVs (v flipped by the FBX and glTF exporters): each vertex's element and
    its texel (row, column) as Unreal samples it."""
    u, v = uv[:, 0], 1.0 - uv[:, 1]
    col, row = np.floor(u * width).astype(int), np.floor(v * height).astype(int)
    return col + row * width, row, col


def to_metres(rgb_unreal):
    """Unreal's left-handed cm → the object's right-handed m (y flipped back)."""
    return rgb_unreal * np.array([1.0, -1.0, 1.0]) / 100.0
