"""CSVIter (MXNet's mx.io.CSVIter): data/label CSV files, data_shape, batch_size,
round_batch."""
import numpy as np
import pytest

import nets
from nets.io import CSVIter


@pytest.fixture
def files(tmp_path):
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    np.savetxt(data, np.arange(20).reshape(5, 4), delimiter=",", fmt="%d")
    np.savetxt(label, np.arange(5), delimiter=",", fmt="%d")
    return str(data), str(label)


def test_batches_reshape_rows_and_pad_round_batch(files):
    it = CSVIter(data_csv=files[0], data_shape=(2, 2), label_csv=files[1], batch_size=2)
    assert it.provide_data[0].name == "data" and it.provide_data[0].shape == (2, 2, 2)
    assert it.provide_label[0].name == "softmax_label"
    batches = list(it)
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(),
                                  np.arange(8).reshape(2, 2, 2))
    # the last batch wraps to the first row (MXNet's round_batch) and reports the pad
    np.testing.assert_array_equal(batches[2].label[0].asnumpy(), [4, 0])
    assert [b.pad for b in batches] == [0, 0, 1]
    it.reset()
    assert len(list(it)) == 3


def test_round_batch_false_drops_the_incomplete_batch_and_no_label(files):
    it = CSVIter(data_csv=files[0], data_shape=(4,), batch_size=2, round_batch=False)
    batches = list(it)
    assert len(batches) == 2 and all(b.pad == 0 for b in batches)
    assert (batches[0].label[0].asnumpy() == 0).all()


def test_bad_rows_name_the_file_and_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,3,4\n1,2,3\n")
    with pytest.raises(nets.NetsError, match=r"bad.csv, line 2: 3 values"):
        CSVIter(data_csv=str(bad), data_shape=(4,), batch_size=1)
    bad.write_text("1,2,x,4\n")
    with pytest.raises(nets.NetsError, match="line 1"):
        CSVIter(data_csv=str(bad), data_shape=(4,), batch_size=1)
