"""The quick start of ``docs/distributed.md``, run as a reader runs it: the launch command the
page shows, from the repository root, starting its own Ray cluster on this machine (not the
test session's), in an environment without Ray authentication settings (a fresh shell).
Checks that the page quotes ``examples/distributed_quickstart.py`` verbatim, that the run
prints what the page says it prints, that no Ray "Token authentication is enabled" message
appears, and that the cluster the launcher starts refuses a client without its token."""
import os
import re
import shlex
import subprocess
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, "docs", "distributed.md")
SCRIPT = os.path.join(ROOT, "examples", "distributed_quickstart.py")
# The start of Ray's notices when RAY_AUTH_MODE is unset: "Token authentication is enabled
# for this Ray cluster..." (Ray turned it on by itself) or "... is disabled ..."
TOKEN_MESSAGE = "Token authentication is"


def _quick_start():
    """The text of the page's "Quick start" section."""
    text = open(DOC, encoding="utf-8").read()
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "docs/distributed.md has no '## Quick start' section"
    return m.group(1)


def _blocks(section, info):
    """The fenced code blocks of ``section`` whose info string is ``info``."""
    return re.findall(rf"^```{info}\n(.*?)^```$", section, re.S | re.M)


def _clean_env(**extra):
    """This environment without Ray's connection and authentication settings (a test
    session that started a cluster has them), with the test suite's faster Ray import."""
    env = {k: v for k, v in os.environ.items()
           if not (k.startswith("RAY_AUTH") or k in ("RAY_ADDRESS", "NETS_KV_ADDRESS"))}
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.path.join(HERE, "ray_imports") + (os.pathsep + path if path else "")
    env.update(extra)
    return env


def _launch(argv, env, timeout=600):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                            env=env)
    return result.returncode, result.stdout + result.stderr


def _by_rank(lines):
    ranks = {}
    for line in lines:
        m = re.match(r"\[(\d+)\] (.*)", line)
        if m:
            ranks.setdefault(int(m.group(1)), []).append(m.group(2))
    return ranks


NUMBER = re.compile(r"-?\d+\.\d+")


def _same_line(shown, got):
    """``got`` is ``shown`` with each decimal number within 2% (or 0.01) of the shown one
    (the numbers depend on floating-point summation order across machines); every other
    character is equal."""
    if NUMBER.sub("#", shown) != NUMBER.sub("#", got):
        return False
    return all(abs(float(a) - float(b)) <= max(0.01, 0.02 * abs(float(a)))
               for a, b in zip(NUMBER.findall(shown), NUMBER.findall(got)))


def test_the_page_quotes_the_quick_start_script_verbatim():
    quoted = _blocks(_quick_start(), "python")
    assert quoted, "the quick start shows no python block"
    source = open(SCRIPT, encoding="utf-8").read()
    body = re.sub(r'\A""".*?"""\n+', "", source, flags=re.S)  # (the module docstring)
    assert body != source and body.startswith("import ")
    assert quoted[0] == body, "docs/distributed.md's quick start differs from " + SCRIPT


def test_the_quick_start_prints_what_the_page_shows_and_no_token_message():
    section = _quick_start()
    commands = [c for c in _blocks(section, "bash") if "nets.kv.launch" in c]
    assert commands, "the quick start shows no launch command"
    argv = shlex.split(commands[0].strip())
    assert argv[:3] == ["python", "-m", "nets.kv.launch"] and "--address" not in argv, argv
    argv = [sys.executable if a == "python" else a for a in argv]  # (this interpreter)
    shown = _blocks(section, "text")
    assert shown, "the quick start shows no output block"
    shown = _by_rank(shown[0].splitlines())
    assert sorted(shown) == [0, 1], shown

    code, out = _launch(argv, _clean_env())
    assert code == 0, out
    assert TOKEN_MESSAGE not in out, out
    got = _by_rank(out.splitlines())
    assert sorted(got) == sorted(shown), out
    for rank in shown:
        assert len(got[rank]) == len(shown[rank]), (rank, got[rank], shown[rank])
        for s, g in zip(shown[rank], got[rank]):
            assert _same_line(s, g), f"worker {rank} printed {g!r}; the page shows {s!r}"
    # what the script's lines state: the sum of the pushes, a falling loss, equal copies
    for rank, lines in got.items():
        assert f"worker {rank} of 2" in lines
        assert "counts after one push per worker: [3.0, 3.0, 3.0]" in lines
        losses = [float(x) for x in re.findall(r"mean loss (\d+\.\d+)", "\n".join(lines))]
        assert len(losses) == 3 and losses[0] > losses[1] > losses[2], lines
    weights = {rank: [x for x in lines if x.startswith("weight ")] for rank, lines in got.items()}
    assert weights[0] and weights[0] == weights[1], weights  # bit for bit: dist_sync


# A client of the cluster that tries to connect with no token, then with a wrong one: each
# must be refused. Ray retries a refused connection for about 20 s; the two run at once.
PROBE = textwrap.dedent("""
    import os, subprocess, sys, tempfile
    import nets
    kv = nets.kv.create("dist_sync")  # this worker, which has the token, connects
    print("worker connected; RAY_AUTH_MODE =", os.environ.get("RAY_AUTH_MODE"), flush=True)
    address = os.environ["NETS_KV_ADDRESS"]
    connect = f"import ray; ray.init(address={address!r}); print('CONNECTED')"
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    base["HOME"] = tempfile.mkdtemp()  # (no ~/.ray/auth_token)
    clients = {"no token": base,
               "a wrong token": dict(base, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="0" * 64)}
    procs = {name: subprocess.Popen([sys.executable, "-c", connect], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True) for name, env in clients.items()}
    for name, p in procs.items():
        out = p.communicate(timeout=240)[0]
        refused = p.returncode != 0 and "CONNECTED" not in out
        print(f"client with {name}: {'refused' if refused else 'CONNECTED'}", flush=True)
""")


def test_the_launcher_starts_its_own_cluster_which_refuses_clients_without_its_token():
    # RAY_AUTH_MODE=disabled in the launcher's environment is overridden, and says nothing;
    # RAY_ADDRESS (which ray.init() would join: here nothing listens) is not joined
    env = _clean_env(RAY_AUTH_MODE="disabled", RAY_ADDRESS="127.0.0.1:9")
    code, out = _launch([sys.executable, "-m", "nets.kv.launch", "-n", "1", "--",
                         sys.executable, "-c", PROBE], env)
    assert code == 0, out
    assert "[0] worker connected; RAY_AUTH_MODE = token" in out, out
    assert "[0] client with no token: refused" in out, out
    assert "[0] client with a wrong token: refused" in out, out
    assert TOKEN_MESSAGE not in out, out
