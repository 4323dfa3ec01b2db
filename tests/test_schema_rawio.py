
import pytest
from datasets import ClassLabel, Image, Value

from idc_toolkit.errors import BadImageError, RawFormatError
from idc_toolkit.building.rawio import check_image_bytes, read_json, sniff_image_format
from idc_toolkit.schema import ENTITY_FEATURES, MASK_FEATURES, add_columns, category_names, pair_features, validate_features

from conftest import image_bytes


def test_pair_features_core_and_category():
    f = pair_features(["add", "drop"], {"img0": Value("string")})
    assert list(f) == ["pair_id", "before", "after", "captions", "category", "img0"]
    assert f["before"] == Image() and f["category"] == ClassLabel(names=["add", "drop"])
    assert category_names(f) == ["add", "drop"]
    assert "category" not in pair_features(None)


def test_schema_rejects_clashes_and_bad_features():
    with pytest.raises(ValueError, match="clashes"):
        pair_features(None, {"captions": Value("string")})
    with pytest.raises(ValueError, match="duplicate"):
        pair_features(["a", "a"])
    bad = pair_features(None)
    bad["captions"] = Value("string")
    with pytest.raises(ValueError, match="captions"):
        validate_features(bad)


def test_later_passes_add_columns():
    f = add_columns(add_columns(pair_features(["x"]), MASK_FEATURES), ENTITY_FEATURES)
    validate_features(f)
    assert {"change_mask", "change_boxes", "entities", "entity_scores", "gt_entities"} <= set(f)


def test_malformed_json_names_file_and_position(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('[{"img_id": "1",\n "sentences": [}]')
    with pytest.raises(RawFormatError) as exc:
        read_json(p)
    msg = str(exc.value)
    assert str(p) in msg and "line 2" in msg and "column" in msg


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "BMP"])
def test_images_are_sniffed_by_content(fmt):
    data = image_bytes(fmt)
    assert sniff_image_format(data) == fmt
    assert check_image_bytes(data) == fmt
    assert check_image_bytes(data, "full") == fmt


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF"])
def test_truncated_images_are_caught_without_decoding(fmt):
    data = image_bytes(fmt, size=(40, 30))
    with pytest.raises(BadImageError):
        check_image_bytes(data[: len(data) // 2])


def test_garbage_is_not_an_image():
    with pytest.raises(BadImageError, match="not a recognised image"):
        check_image_bytes(b"hello world")
    with pytest.raises(BadImageError, match="empty"):
        check_image_bytes(b"")


def test_corrupted_png_chunk_is_caught():
    data = bytearray(image_bytes(size=(40, 30)))
    data[len(data) // 2] ^= 0xFF
    with pytest.raises(BadImageError, match="CRC"):
        check_image_bytes(bytes(data))
