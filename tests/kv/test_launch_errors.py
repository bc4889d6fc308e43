"""The launcher refuses a worker command that does not exist and a bad NETS_KV_TIMEOUT
with one error line and exit code 2, before it starts a cluster (no traceback)."""
import os
import subprocess
import sys

import pytest


def _launch(args, **env):
    return subprocess.run([sys.executable, "-m", "nets.kv.launch", *args], capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, **env))


@pytest.mark.parametrize("args, env, message", [
    (["-n", "1", "--", "/nonexistent"], {},
     "error: the worker command '/nonexistent' is not an executable file or a program on "
     "PATH"),
    (["-n", "1", "--", "no-such-program-nets"], {},
     "error: the worker command 'no-such-program-nets' is not an executable"),
    (["-n", "1", "--", sys.executable, "-c", "pass"], {"NETS_KV_TIMEOUT": "abc"},
     "error: NETS_KV_TIMEOUT='abc': expected a number > 0"),
    (["-n", "1", "--", sys.executable, "-c", "pass"], {"NETS_KV_TIMEOUT": "-5"},
     "error: NETS_KV_TIMEOUT='-5': expected a number > 0"),
])
def test_bad_launches_are_one_error_line(args, env, message):
    proc = _launch(args, **env)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(
        f"python -m nets.kv.launch: {message}")
    assert "Started a local Ray instance" not in proc.stderr + proc.stdout
