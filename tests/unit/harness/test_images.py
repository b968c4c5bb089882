"""The cluster tier's image cache key: a content hash of what the build reads, so an image is rebuilt when
(and only when) one of its inputs changes."""

from __future__ import annotations

from pathlib import Path

from harness.images import Image, ebb_images


def _image(context: Path) -> Image:
    return Image("localhost/x", context / "Dockerfile", context, (context / "src",), {"A": "1"}, ("base",))


def test_the_tag_changes_with_any_input_and_only_then(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM base\nCOPY src /src\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("print(1)\n")
    ids = {"base": "sha256:1"}
    tag = _image(tmp_path).content_hash(ids)
    assert _image(tmp_path).content_hash(ids) == tag
    # Bytecode is not in the build context (.dockerignore): it changes nothing.
    (tmp_path / "src" / "__pycache__").mkdir()
    (tmp_path / "src" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    assert _image(tmp_path).content_hash(ids) == tag
    (tmp_path / "src" / "a.py").write_text("print(2)\n")
    changed = _image(tmp_path).content_hash(ids)
    assert changed != tag
    assert _image(tmp_path).content_hash({"base": "sha256:2"}) != changed  # a rebuilt base
    (tmp_path / "Dockerfile").write_text("FROM base\nCOPY src /opt/src\n")
    assert _image(tmp_path).content_hash(ids) != changed


def test_ebb_images_hash_every_file_the_dockerfiles_copy() -> None:
    for image in ebb_images().values():
        text = image.dockerfile.read_text()
        for line in text.splitlines():
            if line.startswith("COPY ") and "--from=" not in line:
                source = line.split()[1]
                assert any(
                    (image.context / source) == p or (image.context / source).is_relative_to(p)
                    for p in image.inputs
                ), f"{image.dockerfile}: COPY {source} is not an input of the image's tag"
