"""init(): arguments, exit handling, and finishing at interpreter exit (src/wisp/_init.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import wisp
from wisp.errors import UsageError


def _script(tmp_path: Path, body: str) -> tuple[subprocess.CompletedProcess[str], wisp.RunData]:
    env = {**os.environ, "WISP_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", "import wisp\nrun = wisp.init()\n" + body],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    (run_dir,) = (tmp_path / "wisp").iterdir()
    return out, wisp.open_run(run_dir)


def test_exit_without_finish_finishes_the_run(tmp_path: Path) -> None:
    """A script that never calls finish() still gets a finished run with all rows, at exit."""
    out, data = _script(tmp_path, "for i in range(1000): wisp.log({'i': i})\n")
    assert out.returncode == 0, out.stderr
    assert data.state == "finished" and len(list(data.history())) == 1000


def test_unhandled_exception_marks_the_run_failed(tmp_path: Path) -> None:
    """An unhandled exception at top level leaves the run failed with exit code 1."""
    out, data = _script(tmp_path, "wisp.log({'i': 1})\nraise SystemError('boom')\n")
    assert out.returncode == 1 and "boom" in out.stderr
    assert data.state == "failed" and data.finish["exit_code"] == 1  # type: ignore[index]


def test_bad_arguments_are_clear_errors() -> None:
    """init() names the argument and what it expected."""
    with pytest.raises(UsageError, match="project must be a string"):
        wisp.init(project=3)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="tags must be a list of strings"):
        wisp.init(tags="a")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="mode"):
        wisp.init(mode="sometimes")
    with pytest.raises(UsageError, match="id must be"):
        wisp.init(id="a b")


def test_an_argument_typo_gets_a_suggestion_and_the_list_of_arguments() -> None:
    """A misspelt init() argument is refused with the closest of init()'s own names (or wandb's) and every name init() takes."""
    with pytest.raises(UsageError) as err:
        wisp.init(projet="p")  # type: ignore[call-arg]
    msg = str(err.value)
    assert "'projet' (did you mean 'project'?)" in msg
    assert "init() takes project, name, config," in msg and "entity, reinit" in msg
    assert "ignores) these wandb-only ones: allow_val_change" in msg
    with pytest.raises(UsageError, match=r"'save_cod' \(did you mean 'save_code'\?\)"):
        wisp.init(save_cod=True)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "call", ["wisp.init(projet='p')", "wisp.init(mode='onlin')", "wisp.init(tags='a')"]
)
def test_a_refused_init_shows_the_callers_line_and_one_line_of_wisp(
    tmp_path: Path, call: str
) -> None:
    """The traceback of a UsageError from init() is the user's line, then wisp's one `raise` line that points at the message: no internal frames."""
    (tmp_path / "train.py").write_text(f"import wisp\n{call}\n")
    out = subprocess.run(
        [sys.executable, str(tmp_path / "train.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "WISP_DIR": str(tmp_path)},
    )
    frames = [line.strip() for line in out.stderr.splitlines() if line.startswith("  File ")]
    assert len(frames) == 2, out.stderr
    assert frames[0].startswith(f'File "{tmp_path / "train.py"}", line 2')
    assert frames[1].endswith("in init")
    assert "raise refused  # init() refused: the message below says why" in out.stderr
    assert "noqa" not in out.stderr and "During handling" not in out.stderr
    assert out.stderr.splitlines()[-1].startswith("wisp.errors.UsageError: ")


def test_explicit_id_and_dir_are_used(tmp_path: Path) -> None:
    """id= and dir= choose the run id and the base directory."""
    run = wisp.init(id="my-run_1", dir=str(tmp_path / "base"))
    run.finish()
    assert run.id == "my-run_1" and run.dir is not None
    assert Path(run.dir).parent == tmp_path / "base" / "wisp"


def test_star_import_and_hasattr_are_safe_outside_a_run() -> None:
    """`from wisp import *` and hasattr() on every public name work with no run: unknown
    names raise AttributeError, config/summary are placeholders, run is None."""
    assert wisp.run is None
    namespace: dict[str, object] = {}
    exec("from wisp import *", namespace)
    assert set(wisp.__all__) <= set(namespace)
    assert namespace["run"] is None
    assert all(hasattr(wisp, name) for name in wisp.__all__)
    assert not hasattr(wisp, "no_such_name")
    with pytest.raises(wisp.RunStateError):
        wisp.config["lr"]
    assert not hasattr(wisp.summary, "_private")
