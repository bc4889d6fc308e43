"""The `nets` command: --version and info."""
import subprocess
import sys

import pytest

import nets
from nets.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"nets {nets.__version__}"


def test_info_lists_versions_threading_and_cache(capsys, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", "/some/cache")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for key in ("nets", "numpy", "scipy", "numba", "numba threading layer", "numba cache dir"):
        assert any(line.startswith(key + " ") for line in out.splitlines()), key
    assert "/some/cache" in out


def test_no_command_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: nets" in capsys.readouterr().out


def test_console_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "nets.cli", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("nets ")
