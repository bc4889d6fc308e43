"""What a worker of a distributed store receives: only the rows it asks for, so that its
bytes per step do not grow with the number of workers (``KVStore.stats``).

``dist_workers/bytes_per_step.py`` trains a small row_sparse-embedding model under
``dist_sync`` on 2 servers at 1, 2, 4 and 8 workers, every worker asking for its batch's
rows (``row_sparse_data``) before each forward; the workers' batches barely overlap. Each
worker's counters over its steady steps are checked against the cost model of
``docs/distributed.md`` ("Cost model"): per step, one row pull and one push (its answer)
per server, and the bytes of the batch's rows. When each step answered every row the round
changed (every worker's rows), the answer grew with the workers: at 8 workers a step
received about 5 times what it received at 1 (the check below allows 1.1 times).
"""
import json


ROWS_BYTES = 8  # one int64 row id


def _expected(rows, dim):
    """A worker-step's bytes by the cost model (float32 rows of ``dim``, ``rows`` distinct
    ids, one dense ``dim`` x 1 layer and its bias beside): ``(sent, received)``."""
    row = 4 * dim + ROWS_BYTES  # a row_sparse row: values and id
    dense = 4 * dim + 4  # the dense layer's weight and bias, gradients out, values back
    sent = rows * ROWS_BYTES + rows * row + rows * ROWS_BYTES + dense  # pull ids, push, ask
    received = rows * row + rows * row + dense  # the pulled rows, the step's answer
    return sent, received


def _run(dist_cluster, tmp_path, workers):
    out = tmp_path / f"w{workers}"
    out.mkdir()
    codes, text = dist_cluster.run("bytes_per_step.py", workers, servers=2, args=(out,),
                                   timeout=120)
    assert codes == [0] * workers, text
    return [json.loads((out / f"stats{r}.json").read_text()) for r in range(workers)]


def test_bytes_per_worker_step_stay_flat_from_1_to_8_workers(dist_cluster, tmp_path):
    per_step = {}
    for workers in (1, 2, 4, 8):
        for got in _run(dist_cluster, tmp_path, workers):
            stats, steps = got["stats"], got["steps"]
            sent, received = _expected(got["rows"], got["dim"])
            # one row pull and one push per server per step (the 2 servers each hold half
            # the embedding; the dense layer's two keys live on one of them)
            assert stats["calls"] == 4 * steps, (workers, stats)
            assert stats["bytes_sent"] == sent * steps, (workers, stats, sent)
            assert stats["bytes_received"] == received * steps, (workers, stats, received)
            per_step.setdefault(workers, []).append(
                (stats["bytes_sent"] + stats["bytes_received"]) / steps)
    flat = [b for bs in per_step.values() for b in bs]
    assert max(flat) <= 1.1 * min(flat), per_step
