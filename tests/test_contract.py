"""Output contracts: building, naming, hashing, freezing and loading from a spec."""

from __future__ import annotations

import copy
import pickle
import re
import sys
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field, create_model

from compiler.errors import ContractError
from compiler.schema.contract import OutputContract, load_contract
from compiler.schema.frozen_json import FrozenDict, canonical_sha256, freeze_json, thaw_json

HERE = Path(__file__).parent
NAME_RULE = re.compile(r"[a-zA-Z0-9_-]{1,64}\Z")


class Ticket(BaseModel):
    """A small contract used by several tests."""

    title: str
    priority: Literal["low", "high"] = "low"


def test_from_type_builds_schema_name_and_hash() -> None:
    """The contract holds pydantic's validation schema, the class name and the canonical hash."""
    contract = OutputContract.from_type(Ticket)
    assert contract.target is Ticket
    assert contract.schema == Ticket.model_json_schema(mode="validation")
    assert contract.name == "Ticket"
    assert contract.sha256 == canonical_sha256(Ticket.model_json_schema())
    assert re.fullmatch(r"[0-9a-f]{64}", contract.sha256)


def test_from_type_is_cached_per_type() -> None:
    """Building the contract of one type twice returns the very same object."""
    assert OutputContract.from_type(Ticket) is OutputContract.from_type(Ticket)


def test_union_contract_gets_a_valid_name() -> None:
    """An Annotated union has no __name__; the name is built from its members."""
    class Yes(BaseModel):
        kind: Literal["yes"]

    class No(BaseModel):
        kind: Literal["no"]

    contract = OutputContract.from_type(Annotated[Yes | No, Field(discriminator="kind")])
    assert contract.name == "Yes_or_No"
    assert contract.adapter.validate_python({"kind": "no"}) == No(kind="no")


def test_long_or_odd_names_are_sanitised() -> None:
    """Names keep to OpenRouter's json_schema.name rule: <= 64 of [a-zA-Z0-9_-]."""
    long_model = create_model("Very" * 30, x=(int, ...))
    assert NAME_RULE.match(OutputContract.from_type(long_model).name)
    assert NAME_RULE.match(OutputContract.from_type(list[dict[str, int]]).name)
    odd = create_model("Odd Name!", x=(int, ...))
    assert OutputContract.from_type(odd).name == "Odd_Name"


def test_schema_is_read_only_and_deepcopy_is_plain() -> None:
    """The contract schema refuses mutation; a deep copy is an ordinary mutable dict."""
    contract = OutputContract.from_type(Ticket)
    with pytest.raises(TypeError):
        contract.schema["title"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        contract.schema["required"].append("x")
    mutable = copy.deepcopy(contract.schema)
    assert type(mutable) is dict and type(mutable["required"]) is list
    mutable["title"] = "changed"
    assert contract.schema["title"] == "Ticket"


def test_frozen_json_round_trips() -> None:
    """freeze_json copies (never aliases); thaw_json and pickle give plain containers."""
    source = {"a": [1, {"b": None}]}
    frozen = freeze_json(source)
    assert frozen == source and isinstance(frozen, FrozenDict)
    source["a"].append(2)
    assert frozen == {"a": [1, {"b": None}]}
    assert type(thaw_json(frozen)["a"]) is list
    assert type(pickle.loads(pickle.dumps(frozen))) is dict


def test_unschemable_type_raises_contract_error() -> None:
    """A type pydantic cannot schema becomes a ContractError chained to pydantic's error."""
    with pytest.raises(ContractError, match="cannot be used as an output contract") as info:
        OutputContract.from_type(object())
    assert info.value.__cause__ is not None


# --------------------------------------------------------------------------- load_contract


def test_load_from_file_is_cached() -> None:
    """A 'path.py:Class' spec loads the file once: same class, same contract, every time."""
    first = load_contract("fixtures/contracts/shapes.py:Order", base_dir=HERE)
    second = load_contract("fixtures/contracts/shapes.py:Order", base_dir=HERE)
    assert first is second
    assert first.target.__name__ == "Order"
    assert first.target.__module__ in sys.modules


def test_load_dotted_attribute() -> None:
    """The attribute part may be dotted to reach a nested class."""
    contract = load_contract("fixtures/contracts/shapes.py:Outer.Inner", base_dir=HERE)
    assert contract.target.__name__ == "Inner"


def test_load_from_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 'package.module:Class' spec is imported with importlib."""
    package = tmp_path / "capc_test_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(
        "from pydantic import BaseModel\n\nclass Thing(BaseModel):\n    n: int\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    contract = load_contract("capc_test_pkg.models:Thing", base_dir=tmp_path)
    assert contract.name == "Thing"


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("def broken(:\n", "SyntaxError"),
        ("import capc_no_such_module_xyz\n", "ModuleNotFoundError"),
        ("raise RuntimeError('boom')\n", "RuntimeError: boom"),
    ],
)
def test_load_file_errors_are_wrapped(tmp_path: Path, source: str, match: str) -> None:
    """A file that does not import gives a ContractError naming the file and the cause."""
    (tmp_path / "bad.py").write_text(source)
    with pytest.raises(ContractError, match=match) as info:
        load_contract("bad.py:Anything", base_dir=tmp_path)
    assert "bad.py" in str(info.value)
    assert info.value.__cause__ is not None


def test_missing_attribute_suggests_close_names() -> None:
    """A misspelt class name gets a did-you-mean from the module's names."""
    with pytest.raises(ContractError, match=r"no attribute 'Ordr'.*did you mean 'Order'"):
        load_contract("fixtures/contracts/shapes.py:Ordr", base_dir=HERE)


def test_not_a_schemable_object() -> None:
    """An attribute that is no type pydantic can schema names the spec and the reason."""
    with pytest.raises(ContractError, match="not_a_type") as info:
        load_contract("fixtures/contracts/shapes.py:not_a_type", base_dir=HERE)
    assert info.value.__cause__ is not None


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("no_colon_here", "not of the form"),
        ("fixtures/contracts/absent.py:X", "not found"),
        ("capc_no_such_module_xyz:X", "cannot be imported"),
        ("fixtures/contracts/shapes.py:", "not of the form"),
    ],
)
def test_bad_specs(spec: str, match: str) -> None:
    """Malformed specs, missing files and missing modules are ContractErrors."""
    with pytest.raises(ContractError, match=match):
        load_contract(spec, base_dir=HERE)
