"""Running code that could exhaust memory, crash or hang in a child process, bounded:
its address space is capped a set amount above what it holds once ``nets`` is imported,
and the run is killed after a timeout. A test asserts on what the child printed."""
import subprocess
import sys

PRELUDE = """
import resource
import nets
def _vm_bytes():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) * 1024 for l in f if l.startswith('VmSize:'))
_cap = _vm_bytes() + {headroom}
resource.setrlimit(resource.RLIMIT_AS, (_cap, _cap))
"""


def run_limited(code, headroom=512 << 20, timeout=120, **kwargs):
    """Run the Python source ``code`` in a child process whose address space may grow at
    most ``headroom`` bytes past its size after ``import nets``; returns the
    ``CompletedProcess`` (text output), or raises ``subprocess.TimeoutExpired`` after
    ``timeout`` seconds (the child is killed)."""
    return subprocess.run([sys.executable, "-c", PRELUDE.format(headroom=headroom) + code],
                          capture_output=True, text=True, timeout=timeout, **kwargs)
