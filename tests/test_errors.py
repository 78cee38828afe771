"""Install hints (src/wisp/errors.py): every one names the distribution wisp is published as."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from wisp.errors import DISTRIBUTION, install_hint

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
# a `pip install` of wisp itself, or an extra written as NAME[...], in code or docs
PIP_WISP = re.compile(r"pip install (?:-U |--upgrade )?['\"`]?(wisp[\w.-]*)(?=[\[\s'\"`)]|$)")
EXTRA = re.compile(r"(?<![\w./-])(wisp[\w-]*)\[([a-z0-9,-]+)\]")
HINT_CALL = re.compile(r"install_hint\(((?:['\"][\w-]+['\"],?\s*)*)\)")


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return dict(tomllib.load(f))


def _text_files() -> list[Path]:
    roots = ["src", "docs", "examples", "compat", "benchmarks", "README.md", "Makefile"]
    found: list[Path] = []
    for name in roots:
        p = ROOT / name
        if p.is_file():
            found.append(p)
        else:
            found += [
                f
                for f in p.rglob("*")
                if f.suffix in {".py", ".md", ".toml", ".txt", ".cfg"}
                and "static" not in f.parts
                and "node_modules" not in f.parts
            ]
    return found


def test_the_distribution_is_the_name_in_pyproject_and_not_pypis_wisp() -> None:
    """pyproject's [project] name is errors.DISTRIBUTION, which is not PyPI's unrelated `wisp`."""
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert project["name"] == DISTRIBUTION != "wisp"
    assert project["scripts"] == {"wisp": "wisp.cli:main"}  # the command and import stay `wisp`


def test_install_hint_quotes_the_distribution_with_its_extras() -> None:
    """install_hint() is the pip line a user can paste: the distribution, extras quoted for the shell."""
    assert install_hint() == "pip install wisp-tracker"
    assert install_hint("server") == "pip install 'wisp-tracker[server]'"
    assert install_hint("server", "s3") == "pip install 'wisp-tracker[server,s3]'"


def test_every_install_hint_names_the_distribution_and_a_real_extra() -> None:
    """Every `pip install wisp...`, `NAME[extra]` and install_hint(...) in code and docs names the distribution and an extra pyproject defines."""
    extras = set(_pyproject()["project"]["optional-dependencies"])  # type: ignore[index]
    wrong: list[str] = []
    seen = 0
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(ROOT)
        for m in PIP_WISP.finditer(text):
            seen += 1
            if m.group(1) != DISTRIBUTION:
                wrong.append(f"{rel}: {m.group(0)!r}")
        for m in EXTRA.finditer(text):
            seen += 1
            bad = set(m.group(2).split(",")) - extras
            if m.group(1) != DISTRIBUTION or bad:
                wrong.append(f"{rel}: {m.group(0)!r}")
        for m in HINT_CALL.finditer(text):
            names = set(re.findall(r"[\w-]+", m.group(1)))
            seen += 1
            if names - extras:
                wrong.append(f"{rel}: {m.group(0)!r} names no extra of pyproject")
    assert not wrong, "\n".join(wrong)
    assert seen > 20  # the scan found the hints (src, docs, README, pyproject's own extras)


def test_the_wandb_compat_distribution_depends_on_the_distribution() -> None:
    """compat/wandb (installed in place of wandb) depends on wisp-tracker, not PyPI's `wisp`."""
    with (ROOT / "compat" / "wandb" / "pyproject.toml").open("rb") as f:
        assert tomllib.load(f)["project"]["dependencies"] == [DISTRIBUTION]


def test_a_cli_command_missing_its_extra_prints_the_distributions_hint(tmp_path: Path) -> None:
    """`wisp sweep` without Optuna/PyYAML (hidden) exits with the hint `pip install 'wisp-tracker[sweeps]'`."""
    (tmp_path / "hide").mkdir()
    for name in ("optuna", "yaml"):
        (tmp_path / "hide" / f"{name}.py").write_text("raise ImportError('hidden by the test')\n")
    (tmp_path / "sweep.yaml").write_text("method: random\nparameters: {lr: {values: [1, 2]}}\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from wisp.cli import main; "
        "sys.exit(main(['sweep', sys.argv[2]]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "hide"), str(tmp_path / "sweep.yaml")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "pip install 'wisp-tracker[sweeps]'" in out.stderr, out.stderr
