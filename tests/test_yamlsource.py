"""Line-aware YAML loading: data as safe_load builds it, key positions, and refusals."""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest
import yaml

from registry.declarations import yamlcompose, yamlsource
from registry.declarations.yamlsource import UNSET, YamlDocument, format_key_path, load_yaml
from registry.errors import DeclarationError
from tests.conftest import ROOT

NESTED = """\
# leading comment
models:
  anthropic/*:
    reasoning:
      style: budget
    sampling:
      unsupported:
        - top_p
        - top_k
"""


def write(tmp_path: Path, text: str) -> Path:
    """Write ``text`` to a models.yaml under ``tmp_path`` and return its path."""
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_marks_point_at_keys_and_items(tmp_path: Path) -> None:
    """Marks hold the 1-based line and column of each key and sequence item."""
    doc = load_yaml(write(tmp_path, NESTED), "models")
    assert doc.marks[()] == (2, 1)
    assert doc.marks[("models",)] == (2, 1)
    assert doc.marks[("models", "anthropic/*", "reasoning", "style")] == (5, 7)
    assert doc.marks[("models", "anthropic/*", "sampling", "unsupported", 1)] == (9, 11)


def test_locate_uses_longest_known_prefix(tmp_path: Path) -> None:
    """locate falls back to the nearest enclosing key that has a position."""
    doc = load_yaml(write(tmp_path, NESTED), "models")
    assert doc.locate(["models", "anthropic/*", "reasoning", "budget_min"]) == (4, 5)
    assert YamlDocument("x.yaml", {}, {}).locate(["a"]) == (None, None)


def test_error_names_file_line_and_path(tmp_path: Path) -> None:
    """error() builds a DeclarationError located at the key path."""
    path = write(tmp_path, NESTED)
    err = load_yaml(path, "models").error("bad", ("models", "anthropic/*", "sampling"))
    assert str(err) == f"{path}:6:5: models.anthropic/*.sampling: bad"
    assert (err.line, err.column, err.key_path) == (6, 5, "models.anthropic/*.sampling")


def test_data_matches_safe_load(tmp_path: Path) -> None:
    """Scalars and collections come out as yaml.safe_load builds them, in file order."""
    text = (
        "models:\n  z: {i: 0x10, f: 1.5e3, b: yes, n: ~, s: '007', d: 2024-05-01}\n"
        "  a: [1, two, 3.0, null, false]\n"
    )
    doc = load_yaml(write(tmp_path, text), "models")
    assert doc.data == yaml.safe_load(text)
    assert list(doc.data["models"]) == ["z", "a"]


def test_keys_are_kept_as_written(tmp_path: Path) -> None:
    """Non-string keys become the text written, not the constructed value."""
    doc = load_yaml(write(tmp_path, "models:\n  1.10: a\n  yes: b\n  7: c\n"), "models")
    assert list(doc.data["models"]) == ["1.10", "yes", "7"]


def test_plain_unset_is_the_sentinel(tmp_path: Path) -> None:
    """Plain `unset` becomes UNSET; quoted 'unset' stays a string."""
    text = "models:\n  a: unset\n  b: 'unset'\n  c: \"unset\"\n  d: [unset]\n"
    data = load_yaml(write(tmp_path, text), "models").data["models"]
    assert data == {"a": UNSET, "b": "unset", "c": "unset", "d": [UNSET]}


def test_unset_is_a_falsy_singleton() -> None:
    """UNSET survives copy and pickle as the same object, and reads as UNSET."""
    assert copy.deepcopy(UNSET) is UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET
    assert type(UNSET)() is UNSET
    assert repr(UNSET) == "UNSET" and not UNSET


def test_aliases_are_expanded_as_copies(tmp_path: Path) -> None:
    """An alias reuses its anchor's value, and its key keeps the alias's own line."""
    text = "models:\n  a: &shared {notes: x}\n  b: *shared\n"
    doc = load_yaml(write(tmp_path, text), "models")
    assert doc.data["models"]["b"] == {"notes": "x"}
    assert doc.data["models"]["b"] is not doc.data["models"]["a"]
    assert doc.marks[("models", "b")] == (3, 3)


def test_node_budget_is_configurable(tmp_path: Path) -> None:
    """A document with more nodes than max_nodes is refused, saying so (not "aliases
    expand": it has none), while it is composed; one whose aliases expand past the
    budget says that."""
    path = write(tmp_path, "models:\n  a: [1, 2, 3]\n")
    assert load_yaml(path, "models", max_nodes=6).data == {"models": {"a": [1, 2, 3]}}
    with pytest.raises(DeclarationError, match=r"more than 5 YAML nodes") as caught:
        load_yaml(path, "models", max_nodes=5)
    assert "alias" not in str(caught.value)
    aliased = write(tmp_path, "models:\n  a: &x [1, 2, 3]\n  b: *x\n")
    with pytest.raises(DeclarationError, match=r"aliases expand beyond 8\)"):
        load_yaml(aliased, "models", max_nodes=8)


def test_tab_inside_a_value_is_fine(tmp_path: Path) -> None:
    """A tab inside a quoted value is not mistaken for tab indentation."""
    doc = load_yaml(write(tmp_path, 'models:\n  a: "x\\ty"\n  b: "p\tq"\n'), "models")
    assert doc.data["models"] == {"a": "x\ty", "b": "p\tq"}


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    """An unreadable file raises DeclarationError naming the file."""
    path = tmp_path / "absent.yaml"
    with pytest.raises(DeclarationError, match="cannot read file") as caught:
        load_yaml(path, "models")
    assert caught.value.file == str(path) and caught.value.line is None


def test_invalid_utf8_is_refused(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are refused with the line they are on."""
    path = tmp_path / "models.yaml"
    path.write_bytes(b"models:\n  a: \xff\n")
    with pytest.raises(DeclarationError, match="not valid UTF-8") as caught:
        load_yaml(path, "models")
    assert caught.value.line == 2


def test_unknown_tags_are_refused(tmp_path: Path) -> None:
    """Python-specific and unknown tags are never constructed."""
    path = write(tmp_path, "models:\n  a: !!python/object:os.system ls\n")
    with pytest.raises(DeclarationError, match="invalid YAML") as caught:
        load_yaml(path, "models")
    assert caught.value.line == 2


def test_document_end_marker_is_one_document(tmp_path: Path) -> None:
    """Explicit '---' and '...' around a single document are accepted."""
    doc = load_yaml(write(tmp_path, "---\nmodels: {}\n...\n"), "models")
    assert doc.data == {"models": {}}


def test_format_key_path() -> None:
    """Key paths render dotted, with list indexes in brackets."""
    assert format_key_path(("stages", "x", "models", 0)) == "stages.x.models[0]"
    assert format_key_path(()) == ""


SAMPLES = [NESTED, "models:\n  z: {i: 0x10, f: 1.5e3, b: yes, n: ~, s: '007', d: 2024-05-01}\n"
           "  a: [1, two, 3.0, null, false]\n  u: unset\n  q: 'unset'\n  e: {ü: ñ, é: [1]}\n"
           "  anchors: {x: &a [1, {k: v}], y: *a}\n  multi: |\n    line one\n    line two\n",
           *(p.read_text(encoding="utf-8") for p in sorted(ROOT.rglob("*.yaml"))
             if ".git" not in p.parts and "egg-info" not in str(p))]


@pytest.mark.skipif(yamlcompose._CLOADER is None, reason="PyYAML was built without libyaml")
@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_libyaml_and_pyyaml_give_the_same_document(
    index: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The libyaml loader (used for small files) gives the data, UNSET sentinels and
    marks that PyYAML's own loader gives, for every YAML file of the repository; an
    invalid file gets PyYAML's message and line either way (the tests above)."""
    path = write(tmp_path, SAMPLES[index])
    composed: list[str] = []
    real = yamlsource._load

    def spy(loader: object, *args: object) -> YamlDocument:
        composed.append(type(loader).__name__)
        return real(loader, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(yamlsource, "_load", spy)
    try:
        fast: YamlDocument | DeclarationError = load_yaml(path, "models")
    except DeclarationError as exc:
        fast = exc
    monkeypatch.setattr(yamlcompose, "_CLOADER", None)
    try:
        slow: YamlDocument | DeclarationError = load_yaml(path, "models")
    except DeclarationError as exc:
        slow = exc
    assert composed[0] == "CSafeLoader" and composed[-1] == "_CountingLoader"
    if isinstance(fast, DeclarationError) or isinstance(slow, DeclarationError):
        assert str(fast) == str(slow)
    else:
        assert (fast.data, dict(fast.marks)) == (slow.data, dict(slow.marks))
