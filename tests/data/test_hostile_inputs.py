"""Nothing lost, nothing exploded (issue 41, items 2, 5 and 7): a folder's readers skip the
files nets leaves there, a line longer than the limit is an error naming the file and the
line (in bounded memory, whatever the file), and a batch larger than the data is refused
instead of repeating it."""
import os
import textwrap

import numpy as np
import pytest

from nets import data
from nets.base import NetsError
from nets.data.libsvm import LineTooLongError, max_line_bytes
from nets.data.reader import LibSVMReader, libsvm_files
from nets.serialization import write_atomically

from tests.limits import run_limited

ROWS = b"1 0:1 2:2\n0 1:3\n1 3:4\n"


# -- item 2: a folder's files ------------------------------------------------------------------

def _folder_with_leftovers(tmp_path):
    """A folder of one data file and what nets may leave beside it: a parse cache, a
    killed write's hidden temporary file, an older version's visible one."""
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.svm").write_bytes(ROWS)
    data.load_libsvm(str(folder / "a.svm"), cache=True)  # writes a.svm.nets.npz
    assert (folder / "a.svm.nets.npz").exists()
    (folder / ".a.svm.4242.0123abcd.tmp").write_bytes(ROWS)  # a killed save_libsvm's
    (folder / "a.svm.4242.0123abcd.tmp").write_bytes(ROWS)  # an older nets version's
    return folder


def test_a_folder_skips_nets_temporaries_and_caches(tmp_path):
    folder = _folder_with_leftovers(tmp_path)
    assert libsvm_files(str(folder)) == [str(folder / "a.svm")]
    with LibSVMReader(str(folder), batch_size=2, read="stream") as reader:
        rows = sum(X.shape[0] for X, _ in reader)
    assert rows == 3
    with LibSVMReader(str(folder), batch_size=2, read="memory") as reader:
        assert sum(X.shape[0] for X, _ in reader) == 3
    it = data.LibSVMIter(data_libsvm=str(folder), data_shape=(4,), batch_size=3)
    (batch,) = list(it)
    assert batch.pad == 0
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [1, 0, 1])
    # a file named explicitly is read, whatever its name
    assert libsvm_files(str(folder / "a.svm.4242.0123abcd.tmp")) == [
        str(folder / "a.svm.4242.0123abcd.tmp")]
    # a user's own file that merely ends in .tmp is data
    (folder / "b.tmp").write_bytes(ROWS)
    assert libsvm_files(str(folder)) == [str(folder / "a.svm"), str(folder / "b.tmp")]


def test_the_temporary_file_of_a_write_is_hidden_from_the_readers(tmp_path):
    """While ``save_libsvm`` writes (and after it is killed mid-write), its temporary file
    is a hidden one beside the target: a folder's readers never list it."""
    target = tmp_path / "rows.svm"
    seen = {}

    def write(f):
        f.write(ROWS)
        f.flush()
        seen["files"] = sorted(os.listdir(tmp_path))
        seen["listed"] = libsvm_files(str(tmp_path))
    write_atomically(str(target), write)
    (tmp,) = seen["files"]
    assert tmp.startswith(".rows.svm.") and tmp.endswith(".tmp")
    assert seen["listed"] == []
    assert os.listdir(tmp_path) == ["rows.svm"]


# -- item 5: the longest line ----------------------------------------------------------------

def _long_line_file(tmp_path, length=300):
    path = tmp_path / "long.svm"
    path.write_bytes(ROWS + b"1 " + b" ".join(b"%d:1" % k for k in range(length // 4))
                     + b"\n0 1:1\n")
    return str(path)


READERS = {
    "load_libsvm": lambda path, **kw: data.load_libsvm(path, **kw),
    "libsvm_width": lambda path, **kw: data.libsvm.libsvm_width(path, **kw),
    "libsvm_blocks": lambda path, **kw: list(data.libsvm.libsvm_blocks(path, 200, **kw)),
    "reader memory": lambda path, **kw: list(LibSVMReader(path, 2, read="memory", **kw)),
    "reader memory n_features": lambda path, **kw: list(
        LibSVMReader(path, 2, n_features=200, read="memory", **kw)),
    "reader stream": lambda path, **kw: list(LibSVMReader(path, 2, n_features=200,
                                                          read="stream", **kw)),
    "LibSVMIter": lambda path, **kw: list(data.LibSVMIter(path, (200,), batch_size=2, **kw)),
    "LibSVMIter small chunks": lambda path, **kw: list(
        data.LibSVMIter(path, (200,), batch_size=2, chunk_bytes=16, **kw)),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_line_longer_than_the_limit_names_the_file_and_line(tmp_path, monkeypatch, reader):
    path = _long_line_file(tmp_path)
    with pytest.raises(LineTooLongError, match=r"long.svm, line 4: longer than 100 bytes.*"
                                               r"max_line_bytes=.*NETS_MAX_LINE_BYTES") as e:
        READERS[reader](path, max_line_bytes=100)
    assert (e.value.path, e.value.line, e.value.limit) == (path, 4, 100)
    assert isinstance(e.value, NetsError) and isinstance(e.value, ValueError)
    monkeypatch.setenv("NETS_MAX_LINE_BYTES", "100")
    with pytest.raises(LineTooLongError, match="long.svm, line 4: longer than 100 bytes"):
        READERS[reader](path)
    READERS[reader](path, max_line_bytes=1000)  # an argument overrides the variable
    monkeypatch.setenv("NETS_MAX_LINE_BYTES", "1000")
    READERS[reader](path)


def test_a_line_exactly_at_the_limit_is_read(tmp_path):
    line = b"1 0:1 2:2"
    path = tmp_path / "exact.svm"
    path.write_bytes(line + b"\n" + line)
    X, _ = data.load_libsvm(str(path), max_line_bytes=len(line))
    assert X.shape == (2, 3)
    with pytest.raises(LineTooLongError, match="line 1: longer than 8 bytes"):
        data.load_libsvm(str(path), max_line_bytes=len(line) - 1)


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "64M"])
def test_a_bad_line_limit_names_the_variable(tmp_path, monkeypatch, value):
    path = _long_line_file(tmp_path)
    monkeypatch.setenv("NETS_MAX_LINE_BYTES", value)
    with pytest.raises(NetsError, match=rf"NETS_MAX_LINE_BYTES='{value}': expected a "
                                        rf"positive integer"):
        data.load_libsvm(path)
    with pytest.raises(NetsError, match="NETS_MAX_LINE_BYTES"):
        data.LibSVMIter(path, (200,), batch_size=1)
    monkeypatch.setenv("NETS_MAX_LINE_BYTES", " ")
    assert max_line_bytes() == 64 << 20  # blank: the default


@pytest.mark.parametrize("value", [0, -1, 2.5, "100", True])
def test_a_bad_line_limit_argument_names_it(tmp_path, value):
    path = _long_line_file(tmp_path)
    with pytest.raises(NetsError, match=r"max_line_bytes=.*expected a positive integer"):
        data.load_libsvm(path, max_line_bytes=value)
    with pytest.raises(NetsError, match=r"max_line_bytes="):
        LibSVMReader(path, 2, read="memory", max_line_bytes=value)


@pytest.mark.parametrize("how", ["load_libsvm", "stream", "LibSVMIter"])
def test_text_without_line_ends_is_an_error_in_bounded_memory(tmp_path, how):
    """A 4 GiB file without a line end (sparse on disk): the readers stop after the limit
    (64 MiB) with a ``LineTooLongError``, within 256 MiB of memory, in seconds; before, a
    buffer grew 8 MB at a time until a raw ``MemoryError``."""
    path = tmp_path / "no_newline.bin"
    with open(path, "wb") as f:
        f.truncate(4 << 30)
    call = {"load_libsvm": "data.load_libsvm(path)",
            "stream": "list(LibSVMReader(path, 64, n_features=10, read='stream'))",
            "LibSVMIter": "list(data.LibSVMIter(path, (10,), batch_size=64))"}[how]
    code = textwrap.dedent(f"""
        import sys
        from nets import data
        from nets.data.reader import LibSVMReader
        from nets.data.libsvm import LineTooLongError
        path = sys.argv[1]
        try:
            {call}
        except LineTooLongError as e:
            print("REFUSED", e)
        """)
    env = {k: v for k, v in os.environ.items() if k != "NETS_MAX_LINE_BYTES"}
    proc = run_limited(f"import sys; sys.argv[1:] = [{str(path)!r}]\n" + code,
                       headroom=256 << 20, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"REFUSED {path}, line 1: longer than {64 << 20} bytes" in proc.stdout


# -- item 7: batches larger than the data -------------------------------------------------------

def test_huge_batches_over_small_data_are_refused_quickly_in_bounded_memory(tmp_path):
    """``NDArrayIter(10 rows, batch_size=10**9, 'pad')`` padded to 10**9 rows, and
    ``LibSVMIter(batch_size=10**9)`` over a 400-line file ran for minutes: both raise, in
    a child with 256 MiB of headroom and a timeout."""
    path = tmp_path / "rows.svm"
    path.write_bytes(b"1 0:1 3:2\n" * 400)
    code = textwrap.dedent(f"""
        import numpy as np
        from nets import data
        from nets.base import NetsError
        try:
            data.NDArrayIter(np.ones((10, 3)), batch_size=10**9, last_batch_handle='pad')
        except NetsError as e:
            print("NDArrayIter:", e)
        it = data.LibSVMIter({str(path)!r}, (4,), batch_size=10**9)
        try:
            it.next()
        except NetsError as e:
            print("LibSVMIter:", e)
        """)
    proc = run_limited(code, headroom=256 << 20, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert ("NDArrayIter: NDArrayIter: batch_size=1000000000 is larger than the 10 examples "
            "of 'data'") in proc.stdout
    assert ("LibSVMIter: LibSVMIter: batch_size=1000000000 is larger than the 400 rows of "
            "data_libsvm=") in proc.stdout
