"""Fast raster drawing for views redrawn many times a second (the explorer's belief views).

* :class:`NearestImage`: a matplotlib ``AxesImage`` whose nearest-neighbour rendering on a
  raster canvas (Agg at magnification 1) is a numpy gather of the coloured cells at the output
  pixels' centres, instead of matplotlib's general resampler (which resamples in floating point
  and normalises the whole output, at the output's size). Every other case (vector
  output, a magnification, an alpha, a rotated or skewed transform) is matplotlib's own
  ``make_image``; the pixels it draws are those of ``AxesImage`` with ``interpolation="nearest"``
  (the tests compare them).
* :func:`nearest_imshow`: ``Axes.imshow`` (auto aspect, nearest) with a :class:`NearestImage`.
* :func:`png_bytes`: an RGB(A) array as PNG bytes with no row filter and zlib level 1 (Pillow
  tries five row filters per row), for images that are sent once and shown.

Exports :class:`NearestImage`, :func:`nearest_imshow` and :func:`png_bytes`.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from matplotlib.image import AxesImage
from matplotlib.transforms import Affine2D, Bbox, IdentityTransform, TransformedBbox

__all__ = ["NearestImage", "nearest_imshow", "png_bytes"]


class NearestImage(AxesImage):
    """An ``AxesImage`` drawn by nearest-neighbour gathering on raster canvases (module doc)."""

    def make_image(self, renderer, magnification=1.0, unsampled=False):
        trans = self.get_transform()
        fast = (
            not unsampled
            and magnification == 1.0
            and self.get_alpha() is None
            and self.get_interpolation() in ("nearest", "none")
            and trans.is_affine
        )
        if fast:
            matrix = trans.get_affine().get_matrix()
            fast = matrix[0, 1] == 0 and matrix[1, 0] == 0  # axis-aligned
        if not fast:
            return super().make_image(renderer, magnification, unsampled)
        a = self._A
        x1, x2, y1, y2 = self.get_extent()
        in_bbox = Bbox(np.array([[x1, y1], [x2, y2]]))
        if self.get_clip_on():
            clip = self.get_clip_box() or self.axes.bbox
        else:
            clip = self.get_figure(root=True).bbox
        clipped = Bbox.intersection(TransformedBbox(in_bbox, trans), clip)
        if clipped is None:
            return None, 0, 0, None
        e = clipped.extents  # matplotlib's rounding to whole output pixels
        x0 = np.floor(e[0] + 0.5)
        y0 = np.ceil(e[1] - 0.5 - 1e-8)
        width = int(np.floor(e[2] + 0.5 + 1e-8) - x0)
        height = int(np.ceil(e[3] - 0.5) - y0)
        if width <= 0 or height <= 0:
            return None, 0, 0, None
        rows, cols = a.shape[:2]
        t0 = Affine2D().translate(0, -rows).scale(1, -1) if self.origin == "upper" else None
        to_cells = (IdentityTransform() if t0 is None else t0) + (
            Affine2D()
            .scale(in_bbox.width / cols, in_bbox.height / rows)
            .translate(in_bbox.x0, in_bbox.y0)
            + trans
            + Affine2D().translate(-x0, -y0)
        )
        inverse = to_cells.inverted()
        xs = inverse.transform(np.column_stack([np.arange(width) + 0.5, np.full(width, 0.5)]))
        ys = inverse.transform(np.column_stack([np.full(height, 0.5), np.arange(height) + 0.5]))
        col = np.clip(np.floor(xs[:, 0]).astype(np.intp), 0, cols - 1)
        row = np.clip(np.floor(ys[:, 1]).astype(np.intp), 0, rows - 1)
        colours = np.ascontiguousarray(self.to_rgba(a, bytes=True, norm=a.ndim == 2))
        packed = colours.view(np.uint32)[..., 0]  # one RGBA pixel per element: gather fast
        pixels = packed.take(row, axis=0).take(col, axis=1)
        return pixels.view(np.uint8).reshape(height, width, 4), x0, y0, to_cells


def nearest_imshow(ax, data, *, extent, cmap=None, norm=None, vmin=None, vmax=None):
    """``ax.imshow(data, aspect="auto", interpolation="nearest", ...)`` as a NearestImage."""
    image = NearestImage(ax, cmap=cmap, norm=norm, interpolation="nearest", extent=extent)
    image.set_data(data)  # clipped to the axes' box (no clip path: a plain, quick blend)
    if vmin is not None or vmax is not None:
        image.set_clim(vmin, vmax)
    elif norm is None or not norm.scaled():
        image.autoscale_None()
    ax.set_aspect("auto")
    image.set_extent(image.get_extent())
    ax.add_image(image)
    return image


def png_bytes(pixels: np.ndarray, level: int = 1) -> bytes:
    """``(H, W, 3 or 4)`` uint8 pixels as a PNG (8-bit RGB or RGBA, no row filter); ``level``:
    zlib's (0: stored, no compression, the fastest; 1: the fastest that compresses)."""
    height, width, channels = np.shape(pixels)
    if channels not in (3, 4):
        raise ValueError(f"png_bytes needs RGB or RGBA pixels, got {channels} channels")
    rows = np.empty((height, 1 + width * channels), dtype=np.uint8)
    rows[:, 0] = 0  # each row's filter: none
    rows[:, 1:].reshape(height, width, channels)[...] = pixels  # one copy, strided or not

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    colour_type = 2 if channels == 3 else 6
    header = struct.pack(">IIBBBBB", width, height, 8, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, level))
        + chunk(b"IEND", b"")
    )
