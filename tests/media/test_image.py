"""wisp.Image and galleries: accepted layouts and dtypes, PIL images, files, modes, errors."""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image as PILImage

import wisp
from wisp.errors import UsageError, ValueLimitError
from wisp.media._image import MAX_GALLERY, convert_mode

from .conftest import Gate, logged, read_back

RNG = np.random.default_rng(7)
RGB = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)


def _pixels(r: wisp.Run, value: dict[str, Any]) -> np.ndarray:
    assert r.dir is not None
    with PILImage.open(os.path.join(r.dir, value["path"])) as img:
        img.load()
        a = np.asarray(img)
    return a if a.ndim == 3 else a[:, :, None]


def _store(r: wisp.Run, image: wisp.Image) -> tuple[dict[str, Any], np.ndarray]:
    r.log({"img": image})
    value = logged(r, "img")
    return value, _pixels(r, value)


LAYOUTS = [
    ("np-HW", RGB[:, :, 0], RGB[:, :, :1]),
    ("np-HW1", RGB[:, :, :1], RGB[:, :, :1]),
    ("np-HWC3", RGB, RGB),
    ("np-HWC4", np.dstack([RGB, RGB[:, :, :1]]), np.dstack([RGB, RGB[:, :, :1]])),
    ("np-CHW3", RGB.transpose(2, 0, 1), RGB),
    ("np-CHW1", RGB[:, :, :1].transpose(2, 0, 1), RGB[:, :, :1]),
    (
        "np-CHW4",
        np.dstack([RGB, RGB[:, :, :1]]).transpose(2, 0, 1),
        np.dstack([RGB, RGB[:, :, :1]]),
    ),
    ("np-noncontiguous", RGB[:, ::-1], RGB[:, ::-1]),
    ("torch-CHW3", torch.from_numpy(RGB.transpose(2, 0, 1).copy()), RGB),
    ("torch-HWC3", torch.from_numpy(RGB.copy()), RGB),
    ("torch-HW", torch.from_numpy(RGB[:, :, 1].copy()), RGB[:, :, 1:2]),
    ("torch-CHW-view", torch.from_numpy(RGB.copy()).permute(2, 0, 1), RGB),
]


@pytest.mark.parametrize(("name", "data", "want"), LAYOUTS, ids=[n for n, *_ in LAYOUTS])
def test_uint8_layouts(run: wisp.Run, name: str, data: Any, want: np.ndarray) -> None:
    """HW, HWC and CHW uint8 arrays (numpy and torch) are stored pixel-exact as PNG."""
    value, pixels = _store(run, wisp.Image(data))
    assert value["path"].startswith("media/") and value["path"].endswith(".png")
    assert (value["width"], value["height"]) == (7, 5)
    np.testing.assert_array_equal(pixels, want)


def test_ambiguous_shape_numpy_is_hwc_torch_is_chw(run: wisp.Run) -> None:
    """A (3, 4, 3) numpy array is read as HWC, the same shape as a torch tensor as CHW."""
    a = RNG.integers(0, 256, (3, 4, 3), dtype=np.uint8)
    run.log({"np": wisp.Image(a), "pt": wisp.Image(torch.from_numpy(a))})
    data = read_back(run)
    np_value = data.scalars("np")[1][0]
    pt_value = data.scalars("pt")[1][0]
    assert (np_value["width"], np_value["height"]) == (4, 3)
    assert (pt_value["width"], pt_value["height"]) == (3, 4)
    np.testing.assert_array_equal(_pixels(run, np_value), a)
    np.testing.assert_array_equal(_pixels(run, pt_value), a.transpose(1, 2, 0))


FLOATS = [
    ("np-float16", lambda a: a.astype(np.float16)),
    ("np-float32", lambda a: a.astype(np.float32)),
    ("np-float64", lambda a: a.astype(np.float64)),
    ("torch-float32", lambda a: torch.from_numpy(a.astype(np.float32))),
    ("torch-float16", lambda a: torch.from_numpy(a.astype(np.float32)).half()),
    ("torch-bfloat16", lambda a: torch.from_numpy(a.astype(np.float32)).bfloat16()),
]


@pytest.mark.parametrize(("name", "make"), FLOATS, ids=[n for n, _ in FLOATS])
def test_float_images_scale_from_unit_range(run: wisp.Run, name: str, make: Any) -> None:
    """Float images in [0, 1] map to 0..255, of every float dtype."""
    levels = np.array([[0.0, 0.25, 0.5], [0.75, 1.0, 0.5]])
    _, pixels = _store(run, wisp.Image(make(levels)))
    np.testing.assert_allclose(pixels[:, :, 0], np.round(levels * 255), atol=1)


def test_float_out_of_range_and_nan_are_clipped(run: wisp.Run) -> None:
    """Floats in [0, 1] scale to 0-255 (below 0 and NaN become 0, inf 255)."""
    _, pixels = _store(run, wisp.Image(np.array([[-3.0, 0.5, np.nan, np.inf]])))
    assert pixels[0, :, 0].tolist() == [0, 128, 0, 255]


def test_floats_above_one_are_read_as_0_to_255(run: wisp.Run) -> None:
    """Floats whose largest value exceeds 1 are 0-255 values, as wandb reads them (clipped)."""
    _, pixels = _store(run, wisp.Image(np.array([[-3.0, 7.0, 128.4, 300.0, np.nan]])))
    assert pixels[0, :, 0].tolist() == [0, 7, 128, 255, 0]


def test_integer_images_are_clipped_to_0_255(run: wisp.Run) -> None:
    """int32, uint16 and int64 (torch) arrays are stored clipped to 0-255."""
    a = np.array([[-5, 0, 200, 1000]], dtype=np.int32)
    sources = {
        "i32": a,
        "u16": a.clip(0).astype(np.uint16),
        "pt": torch.from_numpy(a.astype(np.int64)),
    }
    run.log({k: wisp.Image(v) for k, v in sources.items()})
    data = read_back(run)
    for key in sources:
        pixels = _pixels(run, data.scalars(key)[1][0])
        assert pixels[0, :, 0].tolist() == [0, 0, 200, 255], key


def test_bool_images(run: wisp.Run) -> None:
    """Bool arrays (numpy and torch) are stored as black and white."""
    mask = np.array([[True, False], [False, True]])
    run.log({"np": wisp.Image(mask), "pt": wisp.Image(torch.from_numpy(mask))})
    data = read_back(run)
    for key in ("np", "pt"):
        pixels = _pixels(run, data.scalars(key)[1][0])
        assert pixels[:, :, 0].tolist() == [[255, 0], [0, 255]]


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "LA", "P", "1", "I;16", "I", "F", "CMYK"])
def test_pil_images(run: wisp.Run, mode: str) -> None:
    """PIL images of common modes are stored with the pixels PIL itself converts them to."""
    src = PILImage.fromarray(RGB).convert(mode)
    value, pixels = _store(run, wisp.Image(src))
    assert (value["width"], value["height"]) == (7, 5)
    if mode in ("RGB", "RGBA", "L", "LA"):
        want = np.asarray(src)
    elif mode in ("1", "I", "I;16", "F"):
        want = np.asarray(src.convert("L"))
    else:
        want = np.asarray(src.convert("RGB"))
    np.testing.assert_array_equal(pixels, want if want.ndim == 3 else want[:, :, None])


def test_pil_image_changed_after_log_keeps_logged_pixels(run: wisp.Run) -> None:
    """Drawing on a PIL image after log() leaves the logged image as it was."""
    gate = Gate()
    img = PILImage.fromarray(RGB)
    run.log({"gate": gate})
    run.log({"img": wisp.Image(img)})
    img.paste((0, 0, 0), (0, 0, 7, 5))
    gate.open()
    np.testing.assert_array_equal(_pixels(run, logged(run, "img")), RGB)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_array_changed_after_log_keeps_logged_pixels(run: wisp.Run, kind: str) -> None:
    """An in-place change to the array right after log() does not reach the stored image."""
    gate = Gate()
    a = RGB.copy()
    data = torch.from_numpy(a.copy()).permute(2, 0, 1) if kind == "torch" else a
    run.log({"gate": gate})
    run.log({"img": wisp.Image(data)})
    data[...] = 0
    gate.open()
    np.testing.assert_array_equal(_pixels(run, logged(run, "img")), RGB)


@pytest.mark.parametrize(("fmt", "suffix"), [("PNG", ".png"), ("JPEG", ".jpg"), ("GIF", ".gif")])
def test_files_are_stored_as_they_are(run: wisp.Run, tmp_path: Any, fmt: str, suffix: str) -> None:
    """PNG, JPEG and GIF files are copied byte for byte, with their size read from the file."""
    path = tmp_path / f"in{suffix}"
    PILImage.fromarray(RGB).save(path, format=fmt)
    value = _store(run, wisp.Image(path))[0]
    assert value["path"].endswith(suffix)
    assert (value["width"], value["height"]) == (7, 5)
    assert run.dir is not None
    with open(os.path.join(run.dir, value["path"]), "rb") as f:
        assert f.read() == path.read_bytes()


def test_other_file_formats_become_png(run: wisp.Run, tmp_path: Any) -> None:
    """A BMP file is decoded and stored as PNG."""
    path = tmp_path / "in.bmp"
    PILImage.fromarray(RGB).save(path)
    value, pixels = _store(run, wisp.Image(str(path)))
    assert value["path"].endswith(".png")
    np.testing.assert_array_equal(pixels, RGB)


def test_mode_converts_a_file(run: wisp.Run, tmp_path: Any) -> None:
    """mode= applies to files too: an RGB PNG logged with mode="L" is stored grey."""
    path = tmp_path / "in.png"
    PILImage.fromarray(RGB).save(path)
    _, pixels = _store(run, wisp.Image(path, mode="L"))
    np.testing.assert_array_equal(pixels[:, :, 0], np.asarray(PILImage.fromarray(RGB).convert("L")))


@pytest.mark.parametrize(
    ("src", "mode", "channels"),
    [
        ("RGB", "L", 1),
        ("RGB", "LA", 2),
        ("RGB", "RGBA", 4),
        ("L", "RGB", 3),
        ("L", "RGBA", 4),
        ("RGBA", "RGB", 3),
        ("RGBA", "L", 1),
        ("LA", "RGB", 3),
        ("RGBA", "LA", 2),
    ],
)
def test_mode_conversion_matches_pil(src: str, mode: str, channels: int) -> None:
    """convert_mode gives the same pixels as PIL's Image.convert."""
    img = PILImage.fromarray(np.dstack([RGB, RGB[:, :, :1]]), "RGBA").convert(src)
    a = np.asarray(img)
    got = convert_mode(a if a.ndim == 3 else a[:, :, None], channels)
    want = np.asarray(img.convert(mode))
    np.testing.assert_array_equal(got, want if want.ndim == 3 else want[:, :, None])


def test_identical_images_are_stored_once(run: wisp.Run) -> None:
    """Two Images of the same pixels (from numpy and torch) share one media file."""
    run.log(
        {"a": wisp.Image(RGB), "b": wisp.Image(torch.from_numpy(RGB.transpose(2, 0, 1).copy()))}
    )
    run.log({"a": wisp.Image(RGB.copy())})
    data = read_back(run)
    paths = {v["path"] for k in ("a", "b") for v in data.scalars(k)[1]}
    assert len(paths) == 1
    assert run.dir is not None
    assert os.listdir(os.path.join(run.dir, "media")) == [paths.pop().removeprefix("media/")]


def test_caption_is_stored(run: wisp.Run) -> None:
    """The caption goes into the stored value (null when not given)."""
    run.log({"a": wisp.Image(RGB, caption="a cat"), "b": wisp.Image(RGB)})
    data = read_back(run)
    assert data.scalars("a")[1][0]["caption"] == "a cat"
    assert data.scalars("b")[1][0]["caption"] is None


def test_gallery(run: wisp.Run) -> None:
    """A list of Images logs as one "images" value holding each image in order."""
    run.log({"g": [wisp.Image(RGB, caption="0"), wisp.Image(RGB[:, :, 0], caption="1")]})
    value = logged(run, "g")
    assert value["_type"] == "images"
    assert [item["caption"] for item in value["items"]] == ["0", "1"]
    assert all(item["_type"] == "image" for item in value["items"])


def test_gallery_refuses_other_media(run: wisp.Run) -> None:
    """A list mixing Images and other media is refused, naming the key and the item."""
    with pytest.raises(UsageError, match=r"'g'.*item 1 is Histogram"):
        run.log({"g": [wisp.Image(RGB), wisp.Histogram([1.0])]})


def test_gallery_size_limit(run: wisp.Run) -> None:
    """A gallery holds at most MAX_GALLERY images."""
    one = wisp.Image(np.zeros((1, 1), dtype=np.uint8))
    with pytest.raises(UsageError, match=f"at most {MAX_GALLERY}"):
        run.log({"g": [one] * (MAX_GALLERY + 1)})


def test_size_limit_names_the_key(make_run: Any) -> None:
    """An image whose pixels exceed max_value_bytes is refused at log(), naming the key."""
    r = make_run(max_value_bytes=1000)
    with pytest.raises(ValueLimitError, match=r"'big'.*3,072 bytes.*max_value_bytes"):
        r.log({"big": wisp.Image(np.zeros((32, 32, 3), dtype=np.uint8))})
    r.log({"small": wisp.Image(np.zeros((16, 16, 3), dtype=np.uint8))})
    with pytest.raises(ValueLimitError, match="'g'"):
        r.log({"g": [wisp.Image(np.zeros((32, 32), dtype=np.uint8))]})


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (np.zeros((2, 5, 5, 3), dtype=np.uint8), "shape"),
        (np.zeros((5, 5, 2), dtype=np.uint8), "shape"),
        (np.zeros((5, 5, 5), dtype=np.uint8), "shape"),
        (np.zeros(5, dtype=np.uint8), "shape"),
        (np.zeros((0, 5), dtype=np.uint8), "no pixels"),
        (np.zeros((5, 5), dtype=np.complex64), "dtype complex64"),
        (np.array([["a"]]), "dtype"),
        (torch.zeros((4, 5, 5, 3)), "shape"),
        ([[0, 1], [1, 0]], "type list"),
        (b"\x89PNG", "type bytes"),
        (12, "type int"),
    ],
)
def test_rejected_data(data: Any, match: str) -> None:
    """Arrays of the wrong shape or dtype and other objects are refused with a clear error."""
    with pytest.raises(UsageError, match=match):
        wisp.Image(data)


def test_rejected_arguments(tmp_path: Any) -> None:
    """Bad captions and modes, missing files, directories and nested Images are refused."""
    with pytest.raises(UsageError, match="caption"):
        wisp.Image(RGB, caption=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="mode"):
        wisp.Image(RGB, mode="CMYK")
    with pytest.raises(UsageError, match="no such image file"):
        wisp.Image(tmp_path / "missing.png")
    with pytest.raises(UsageError, match="not a file"):
        wisp.Image(tmp_path)
    with pytest.raises(UsageError, match=r"already a wisp\.Image"):
        wisp.Image(wisp.Image(RGB))  # type: ignore[arg-type]


def test_file_image_without_pillow_has_install_hint(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Pillow, an Image of a file fails at once with a pip install hint."""
    path = tmp_path / "in.png"
    PILImage.fromarray(RGB).save(path)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match="pip install Pillow"):
        wisp.Image(path)


def test_arrays_need_no_pillow(run: wisp.Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """Array images are encoded by wisp's own PNG writer, so Pillow is not needed for them."""
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    run.log({"img": wisp.Image(RGB)})
    value = logged(run, "img")
    monkeypatch.undo()
    np.testing.assert_array_equal(_pixels(run, value), RGB)
