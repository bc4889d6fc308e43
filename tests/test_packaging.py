"""What a stranger's machine relies on: the test extra installs every package a test
imports, the supported CPythons are declared exactly as CI runs them, the license and the
changelog are there, and the package builds without a deprecation warning."""
import ast
import importlib.metadata
import os
import re
import subprocess
import sys

import nets

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _requirement_name(spec):
    """The normalised distribution name of a requirement string ('Foo_bar>=1; ...')."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec).group(1)
    return re.sub(r"[-_.]+", "-", name).lower()


def undeclared_imports(test_root, declared, own=("nets",)):
    """Third-party modules imported anywhere under ``test_root`` whose distribution is not
    in ``declared`` (normalised names): ``{module: 'path:line'}``. A module that is neither
    the standard library, a test-local module, nor installed counts as undeclared."""
    local = {os.path.splitext(f)[0] for _, _, files in os.walk(test_root) for f in files
             if f.endswith(".py")}
    local |= {d for _, dirs, _ in os.walk(test_root) for d in dirs}
    local.add(os.path.basename(os.path.normpath(test_root)))  # `from tests.x import ...`
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for folder, _, files in os.walk(test_root):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in local or top in own:
                        continue
                    # a module not installed here (a requirement for another Python
                    # only) is looked up by its own name
                    dists = {_requirement_name(d) for d in providers.get(top, [top])}
                    if not dists & declared:
                        missing.setdefault(top, f"{os.path.relpath(path, test_root)}:"
                                                f"{node.lineno}")
    return missing


def _declared():
    project = _pyproject()["project"]
    specs = project["dependencies"] + project["optional-dependencies"]["test"]
    return {_requirement_name(s) for s in specs}


def test_the_test_extra_declares_every_package_the_tests_import():
    # tests/compat's programs are written as MXNet users write them (`import mxnet as
    # mx`) and run renamed to nets (tests/compat/rename.py)
    missing = undeclared_imports(os.path.join(ROOT, "tests"), _declared(),
                                 own=("nets", "mxnet"))
    assert not missing, f"tests import packages the test extra does not install: {missing}"


def test_the_import_check_names_an_undeclared_package(tmp_path):
    (tmp_path / "test_uses_sklearn.py").write_text("import os\nimport sklearn.datasets\n")
    (tmp_path / "helper.py").write_text("import numpy\n")
    (tmp_path / "test_local.py").write_text("import helper\nimport nets\n")
    declared = {"numpy"}
    assert undeclared_imports(str(tmp_path), declared) == {
        "sklearn": "test_uses_sklearn.py:2"}
    assert undeclared_imports(str(tmp_path), declared | {"scikit-learn"}) == {}


def _ci_supported():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        return re.search(r'^SUPPORTED="([^"]+)"', f.read(), re.M).group(1).split()


def test_supported_pythons_are_declared_exactly_as_ci_runs_them():
    project = _pyproject()["project"]
    supported = _ci_supported()
    classified = [c.rsplit(" :: ", 1)[1] for c in project["classifiers"]
                  if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    assert classified == supported
    low, high = supported[0], supported[-1]
    major, minor = map(int, high.split("."))
    assert project["requires-python"] == f">={low},<{major}.{minor + 1}"
    running = "%d.%d" % sys.version_info[:2]
    assert running in supported


def test_ci_runs_the_readmes_test_command_in_a_fresh_environment():
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        ci = f.read()
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    command = re.search(r"^(pip install .*pytest.*?)\s*#", readme, re.M).group(1)
    assert command == 'pip install -e ".[test]" && pytest -q'
    assert "-m venv" in ci and "mktemp -d" in ci and "rm -rf" in ci
    # CI reads the command from the README (so the two cannot drift) and evaluates it
    assert "grep -m1 -E '^pip install .*pytest' README.md" in ci
    assert 'eval "$test_command"' in ci
    assert "NETS_PLAIN_NUMBA=1" in ci and "pytest -q -m smoke" in ci


def test_the_license_is_the_apache_text_the_metadata_declares():
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])
    with open(os.path.join(ROOT, "LICENSE"), encoding="utf-8") as f:
        text = f.read()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_changelog_starts_at_the_current_version_and_goes_back_to_the_first():
    with open(os.path.join(ROOT, "CHANGELOG.md"), encoding="utf-8") as f:
        versions = re.findall(r"^## (\d+\.\d+\.\d+) — \d{4}-\d{2}-\d{2}$", f.read(), re.M)
    assert versions[0] == nets.__version__
    assert versions[-1] == "0.1.0"
    as_tuples = [tuple(map(int, v.split("."))) for v in versions]
    assert as_tuples == sorted(as_tuples, reverse=True) and len(set(as_tuples)) == len(versions)
    assert nets.__version__.startswith("0.")


def test_the_package_builds_without_a_deprecation_warning(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v",
                           "--wheel-dir", str(tmp_path), ROOT],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    log = proc.stdout + proc.stderr
    assert not re.search(r"Deprecat", log), [line for line in log.splitlines() if "eprecat" in line]
    wheel = next(p for p in os.listdir(tmp_path) if p.endswith(".whl"))
    assert wheel.startswith(f"nets-{nets.__version__}-")
