"""The fast raster path of the belief views against matplotlib's own drawing and Pillow."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap, PowerNorm
from matplotlib.figure import Figure
from PIL import Image

from baglm_nb.analyses.raster import NearestImage, nearest_imshow, png_bytes

RNG = np.random.default_rng(7)
CASES = {
    "heatmap, rows flipped": (
        RNG.random((11, 566)),
        (0, 566, 10.5, -0.5),
        {"cmap": "Blues", "norm": PowerNorm(0.6, vmin=0.0, vmax=1.0)},
    ),
    "long heatmap, fewer columns than cells": (
        RNG.random((39, 2526)),
        (0, 5052, 38.5, -0.5),
        {"cmap": "Blues", "norm": PowerNorm(0.6, vmin=0.0, vmax=1.0)},
    ),
    "strip of states": (
        RNG.integers(0, 11, (1, 300)),
        (0, 300, 1.0, 0.0),
        {
            "cmap": ListedColormap(matplotlib.colormaps["tab20"].colors[:11]),
            "vmin": -0.5,
            "vmax": 10.5,
        },
    ),
}


def _draw(data, extent, kwargs, *, fast: bool, xlim=None, dpi=100) -> np.ndarray:
    figure = Figure(figsize=(7, 3), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_axes((0.12, 0.1, 0.73, 0.8))
    if fast:
        image = nearest_imshow(ax, data, extent=extent, **kwargs)
        assert isinstance(image, NearestImage)
    else:
        ax.imshow(data, aspect="auto", interpolation="nearest", extent=extent, **kwargs)
    if xlim is not None:
        ax.set_xlim(*xlim)
    figure.canvas.draw()
    return np.asarray(figure.canvas.buffer_rgba()).astype(int)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("xlim", [None, (100, 250)])
def test_nearest_image_draws_what_matplotlib_draws(case, xlim):
    """The same pixels as AxesImage with nearest interpolation (whole view and a zoomed one),
    up to the odd pixel on a cell boundary (rounding of the pixel centre)."""
    data, extent, kwargs = CASES[case]
    ours = _draw(data, extent, kwargs, fast=True, xlim=xlim)
    theirs = _draw(data, extent, kwargs, fast=False, xlim=xlim)
    differ = np.abs(ours - theirs).max(axis=2) > 0
    assert differ.mean() < 0.003, differ.mean()
    assert (np.abs(ours - 255).max(axis=2) > 0).mean() > 0.3  # it drew something


def test_nearest_image_falls_back_for_vector_output(tmp_path):
    """A PDF (magnification != 1) goes through matplotlib's own make_image."""
    data, extent, kwargs = CASES["heatmap, rows flipped"]
    figure = Figure(figsize=(4, 2))
    ax = figure.add_axes((0.1, 0.1, 0.8, 0.8))
    nearest_imshow(ax, data, extent=extent, **kwargs)
    figure.savefig(tmp_path / "x.pdf", dpi=150)
    assert (tmp_path / "x.pdf").stat().st_size > 1000


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize("level", [0, 1])
def test_png_bytes_decode_to_the_same_pixels(channels, level):
    pixels = RNG.integers(0, 256, (37, 53, channels), dtype=np.uint8)
    pixels[5:20] = 255  # some runs
    png = png_bytes(pixels[:, ::-1], level)  # a strided view is accepted
    decoded = np.asarray(Image.open(io.BytesIO(png)))
    np.testing.assert_array_equal(decoded, pixels[:, ::-1])
    with pytest.raises(ValueError, match="RGB or RGBA"):
        png_bytes(pixels[..., :2])
