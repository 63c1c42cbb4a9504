"""The layering of docs/DESIGN.md, checked on the imports of every module (lower layers never
import higher ones; the method never imports Lightning; ITTC never imports TAIMR)."""

import ast
from pathlib import Path

import pytest

LOKG = Path(__file__).resolve().parent.parent / "lokg"
BASE = {"lokg.typing", "lokg.kg", "lokg.errors", "lokg.atomic_io"}
#: the networks' floor: shared types, the graph, the sentence encoder, token counting
NN = BASE | {"lokg.embed", "lokg.tokens"}
LAYER2 = BASE | {"lokg.tokens", "lokg.embed", "lokg.retrieval", "lokg.normalize"}
METHOD = LAYER2 | {"lokg.nn"}
# package -> the lokg modules (prefixes) it may import besides itself
ALLOWED = {
    "lokg.kg": {"lokg.typing", "lokg.errors", "lokg.atomic_io"},
    "lokg.nn": NN,
    "lokg.scos": METHOD,
    "lokg.ittc": METHOD,
    "lokg.taimr": METHOD,
    "lokg.llm": {"lokg.tokens", "lokg.errors", "lokg.normalize"},
    "lokg.eval": {
        "lokg.typing",
        "lokg.tokens",
        "lokg.llm",
        "lokg.errors",
        "lokg.normalize",
        "lokg.atomic_io",
    },
    "lokg.baselines": METHOD | {"lokg.taimr", "lokg.ittc", "lokg.llm"},  # layer 6 over 4-5
}
NO_LIGHTNING = ("lokg.kg", "lokg.nn", "lokg.scos", "lokg.ittc", "lokg.taimr", "lokg.llm",
                "lokg.eval", "lokg.baselines")  # fmt: skip


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def modules_of(package: str) -> list[Path]:
    root = LOKG.parent.joinpath(*package.split("."))
    return sorted(root.rglob("*.py"))


def allowed(name: str, package: str) -> bool:
    prefixes = ALLOWED[package] | {package}
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_layers(package):
    bad = [
        f"{path.relative_to(LOKG.parent)} imports {name}"
        for path in modules_of(package)
        for name in sorted(imports_of(path))
        if name.startswith("lokg") and not allowed(name, package)
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", NO_LIGHTNING)
def test_method_and_services_never_import_lightning(package):
    bad = [
        str(path.relative_to(LOKG.parent))
        for path in modules_of(package)
        if any(n.split(".")[0] in ("pytorch_lightning", "lightning") for n in imports_of(path))
    ]
    assert not bad, bad


def test_the_rule_itself():
    assert not allowed("lokg.taimr.build", "lokg.ittc")  # ITTC encodes any candidate set
    assert allowed("lokg.nn.rel_gat", "lokg.taimr")
    assert not allowed("lokg.models.gat_module", "lokg.taimr")  # the Lightning wrapper is above
    assert not allowed("lokg.scos", "lokg.kg")


def test_models_holds_only_lightning_modules():
    """The networks live in lokg/nn (and the walk's in lokg/taimr/walk): lokg/models holds the
    LightningModules and their DDP helpers, nothing else."""
    names = sorted(p.name for p in (LOKG / "models").iterdir() if p.name != "__pycache__")
    assert all(n.endswith("_module.py") or n in ("__init__.py", "ddp.py") for n in names), names
