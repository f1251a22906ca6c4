"""The reply bounds hold in every lock reader: the Node consumer (examples/node/bounds.mjs)
refuses what the Python lock reader refuses, at the same path, with the same message up to
the Python message's pointer to its constant (``(compiler.reply...``).

One lock of four stages on one model: a plain contract; a list of a 30-way union of
5-field models (fan-out 150, so the unions' error work is reached below the values bound;
its list root is wrapped in ``result``); a rust-regex contract with a pattern that
backtracks exponentially (the Node reader runs it with RE2, in linear time, as
pydantic-core does); a python-re one (strings bounded before a pattern runs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.lock import build_lock, compile_all, dump_lock
from compiler.artifacts.lockfile import load_lock
from compiler.errors import ReplyValidationError
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

NODE_DIR = ROOT / "examples" / "node"
MODEL = "openai/gpt-4o-mini"

CONTRACTS = '''
from typing import Annotated, Union
from pydantic import BaseModel, ConfigDict, Field, create_model

class Plain(BaseModel):
    name: str
    count: int
    tags: list[str]

_BRANCHES = tuple(create_model(f"M{i}", **{f"f{i}_{j}": (int, ...) for j in range(5)})
                  for i in range(30))
Wide = list[Union[_BRANCHES]]  # type: ignore[valid-type]

class Pat(BaseModel):  # rust-regex (the default): linear time, no length bound
    code: Annotated[str, Field(pattern=r"^(a+)+$")]
    note: Annotated[str, Field(pattern=r"^\\w+$")]

class Uni(BaseModel):  # rust-regex syntax that JavaScript's RegExp lacks (RE2 has it)
    letters: Annotated[str, Field(pattern=r"^\\p{L}+$")]
    alpha: Annotated[str, Field(pattern=r"^[[:alpha:]]+$")]

class PyPat(BaseModel):  # python-re: strings bounded before a pattern runs
    model_config = ConfigDict(regex_engine="python-re")
    word: Annotated[str, Field(pattern=r"^[a-z]+$")]
'''

DEEP = "[" * 200 + "]" * 200
#: name -> (stage, reply text); each is over one bound (or, last, within all of them)
CASES: dict[str, tuple[str, str]] = {
    "too_long": ("plain", " " * 4_000_001),
    "too_long_fenced": ("plain", "```json\n" + "1," * 2_000_001 + "\n```"),
    "too_many_values": ("plain", "[" + "0," * 150_000 + "0]"),
    "too_many_and_deep": ("plain", DEEP + "[" + "0," * 150_000 + "0]"),
    "too_deep": ("plain", '{"name": "a", "count": 1, "tags": ' + DEEP + "}"),
    "deep_in_a_string": ("plain", '{"name": "' + DEEP + '", "count": 1, "tags": []}'),
    "fenced_deep": ("plain", "```json\n" + DEEP + "\n```"),
    "infinite": ("plain", '{"name": "a", "count": 1e999, "tags": []}'),
    "infinite_in_list": ("plain", '{"name": "a", "count": 1, "tags": [-1e400]}'),
    "union_work": ("wide", '{"result": [' + ",".join(["{}"] * 20_000) + "]}"),
    "union_within": ("wide", '{"result": [' + ",".join(["{}"] * 100) + "]}"),
    "valid": ("plain", '{"name": "a", "count": 1, "tags": ["x"]}'),
    "nan_literal": ("plain", '{"name": "a", "count": NaN, "tags": []}'),
    "minus_infinity_literal": ("plain", '{"name": "a", "count": 1, "tags": [-Infinity]}'),
    "nan_in_a_string": ("plain", '{"name": "NaN", "count": 1, "tags": ["Infinity"]}'),
    "lone_surrogate": ("plain", '{"name": "\\ud800", "count": 1, "tags": []}'),
    "lone_surrogate_key": ("plain", '{"name": "a", "count": 1, "tags": [], "\\udc00": 1}'),
    "raw_lone_surrogate": ("plain", '{"name": "\ud800", "count": 1, "tags": []}'),
    "surrogate_pair": ("plain", '{"name": "\\ud83d\\ude00", "count": 1, "tags": []}'),
    "null_union_items": ("wide", '{"result": [null, {}, 1]}'),
    # ^(a+)+$ on 40 a's and a "!": 2**40 steps for a backtracking engine, linear for RE2
    "exponential_pattern": ("pat", '{"code": "' + "a" * 40 + '!", "note": "n"}'),
    "long_string_rust": ("pat", '{"code": "aa", "note": "' + "x" * 20_000 + '"}'),
    "long_string_python_re": ("pypat", '{"word": "' + "x" * 20_000 + '"}'),
    "pattern_fails": ("pypat", '{"word": "A1"}'),
    "unicode_letters": ("uni", '{"letters": "\u00fcn\u00ef\u65e5", "alpha": "abc"}'),
    "posix_class_fails": ("uni", '{"letters": "a", "alpha": "ab1"}'),
}  # fmt: skip


@pytest.fixture(scope="module")
def lock_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not OPENROUTER.is_dir():
        pytest.skip("../shared/data/openrouter is absent")
    tmp = tmp_path_factory.mktemp("bounds")
    (tmp / "bounds_contracts.py").write_text(CONTRACTS, encoding="utf-8")
    shutil.copy(ROOT / "models.yaml", tmp / "models.yaml")
    stages = ["stages:"]
    for stage, contract in (("plain", "Plain"), ("wide", "Wide"), ("pat", "Pat"),
                            ("pypat", "PyPat"), ("uni", "Uni")):
        stages += [f"  {stage}:", f"    contract: bounds_contracts.py:{contract}",
                   "    reasoning: none", "    output_tokens: 500", "    output: schema",
                   "    models:", f"      - {MODEL}"]  # fmt: skip
    (tmp / "stages.yaml").write_text("\n".join(stages) + "\n", encoding="utf-8")
    registry = Registry.load(metadata=OPENROUTER / "models-2026-08-19.json",
                             models=tmp / "models.yaml", stages=tmp / "stages.yaml")
    path = tmp / "capc.lock.json"
    path.write_text(dump_lock(build_lock(registry, compile_all(registry))), encoding="utf-8")
    return path


def _python(lock_path: Path) -> dict[str, list[tuple[str, str]]]:
    lock = load_lock(lock_path)
    out: dict[str, list[tuple[str, str]]] = {}
    for name, (stage, text) in CASES.items():
        try:
            lock.request(stage, MODEL).parse_reply(text, contract=False)
            out[name] = []
        except ReplyValidationError as exc:
            out[name] = list(exc.errors)
    return out


def _node(lock_path: Path, tmp: Path) -> dict[str, Any]:
    (tmp / "cases.json").write_text(json.dumps({n: c for n, c in CASES.items()}))
    script = (
        "import { readFileSync } from 'node:fs';"
        f"import {{ parseReply, plan }} from {json.dumps(str(NODE_DIR / 'consume.mjs'))};"
        f"const lock = JSON.parse(readFileSync({json.dumps(str(lock_path))}, 'utf8'));"
        f"const cases = JSON.parse(readFileSync({json.dumps(str(tmp / 'cases.json'))}, 'utf8'));"
        "const out = {};"
        f"for (const [name, [stage, text]] of Object.entries(cases)) {{"
        f"  const r = parseReply(lock, plan(lock, stage, {json.dumps(MODEL)})[0].reply, text);"
        "  out[name] = r.valid ? [] : r.errors.map((e) => [e.path, e.message]); }"
        "process.stdout.write(JSON.stringify(out));"
    )
    run = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True,
                         text=True, timeout=120, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout))


def test_every_case_meets_the_bound_it_names(lock_path: Path) -> None:
    """The Python reader refuses each over-bound case at ``$`` or at the value's path."""
    got = _python(lock_path)
    assert got["valid"] == got["deep_in_a_string"] == [] and got["union_within"] != []
    expected = {"too_long": "characters, more than", "too_long_fenced": "characters, more",
                "too_many_values": "JSON values, more than", "too_many_and_deep": "levels deep",
                "too_deep": "levels deep", "fenced_deep": "levels deep",
                "union_work": "unions let each produce"}  # fmt: skip
    for name, words in expected.items():
        assert [p for p, _ in got[name]] == ["$"] and words in got[name][0][1], (name, got[name])
    assert [p for p, _ in got["infinite"]] == ["$.count"]
    assert [p for p, _ in got["infinite_in_list"]] == ["$.tags[0]"]
    assert [p for p, _ in got["nan_literal"]] == ["$.count"]
    assert [p for p, _ in got["minus_infinity_literal"]] == ["$.tags[0]"]
    assert got["nan_in_a_string"] == got["surrogate_pair"] == []
    assert [p for p, _ in got["lone_surrogate"]] == [p for p, _ in got["lone_surrogate_key"]]
    assert [p for p, _ in got["lone_surrogate"]] == ["$"]
    assert [p for p, _ in got["raw_lone_surrogate"]] == ["$"]  # a TypeError before
    with pytest.raises(ReplyValidationError, match="lone surrogate"):  # the pydantic path
        load_lock(lock_path).request("plain", MODEL).parse_reply(CASES["raw_lone_surrogate"][1])
    assert [p for p, _ in got["null_union_items"]] == ["$.result[0]", "$.result[1]",
                                                        "$.result[2]"]
    assert [p for p, _ in got["exponential_pattern"]] == ["$.code"]
    assert got["long_string_rust"] == []
    assert [p for p, _ in got["long_string_python_re"]] == ["$.word"]
    assert [p for p, _ in got["pattern_fails"]] == ["$.word"]
    assert got["unicode_letters"] == [] and [p for p, _ in got["posix_class_fails"]] == [
        "$.alpha"]


@pytest.mark.usefixtures("node_ready")
def test_node_reader_refuses_what_the_python_reader_refuses(
    lock_path: Path, tmp_path: Path
) -> None:
    python, node = _python(lock_path), _node(lock_path, tmp_path)
    assert set(node) == set(python)
    wrong = []
    for name, errors in python.items():
        paths = sorted({p for p, _ in errors})
        if sorted({p for p, _ in node[name]}) != paths:
            wrong.append((name, paths, node[name]))
        elif errors and ("(compiler.reply." in errors[0][1] or "NaN and" in errors[0][1]):
            said, says = errors[0][1], node[name][0][1]
            if not said.startswith(says.rstrip(".")):
                wrong.append((name, said, says))
    assert wrong == []
