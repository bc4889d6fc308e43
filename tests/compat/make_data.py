"""Deterministic synthetic inputs for the MXNet-style compat programs, in each
program's original file format.

Every file is a function of ``--seed`` and the sizes in ``SIZES`` only (numpy's
PCG64 generator, no hashing that depends on the process), so MXNet 1.9.1 and nets
read byte-identical files. Labels come from a sparse ground-truth model plus
noise, so a model that learns moves its metric well away from chance:

* ``linear.train`` / ``linear.test`` — LibSVM (1-based feature ids, 0/1 labels, like
  the LIBSVM site's click-through sets): each row holds ``nnz`` binary features drawn
  from a Zipf-like popularity law; the label is Bernoulli(sigmoid(sum of the true
  weights of its features - 2)), with true weights non-zero on a tenth of the
  features (about a quarter of the labels are 1, as in click data, which the
  positive-weighted loss of linear_classification expects).
* ``fm.train`` / ``fm.test`` — LibSVM with real values: the label is drawn from a
  factorization machine (linear term plus rank-``k`` pairwise interactions).
* ``ratings.train`` / ``ratings.test`` — MovieLens ``user::item::rating::timestamp``
  lines (1-based ids), ratings 1..5 from a rank-``k`` user x item model plus noise.
* ``adult.data`` / ``adult.test`` — census CSV in the UCI Adult layout (15 columns,
  ``", "``-separated, income ``<=50K``/``>50K``; the test file's labels end in ``.``
  as in the original), income drawn from a logistic model of age, education,
  marital status, hours, capital gain and occupation.

Usage: ``python tests/compat/make_data.py OUT_DIR [--seed N]``.
"""
import argparse
import json
import os

import numpy as np

#: Rows, features and model sizes of every data set (recorded with the references).
SIZES = {
    "linear": {"train": 20000, "test": 5000, "num_features": 5000, "nnz": 16},
    "fm": {"train": 20000, "test": 5000, "num_features": 1000, "nnz": 12, "rank": 4},
    "ratings": {"train": 60000, "test": 10000, "max_user": 500, "max_item": 300,
                "rank": 5},
    "adult": {"train": 6000, "test": 2000},
}

#: Census vocabularies (the UCI Adult values).
VOCAB = {
    "workclass": ["Self-emp-not-inc", "Private", "State-gov", "Federal-gov", "Local-gov",
                  "?", "Self-emp-inc", "Without-pay", "Never-worked"],
    "education": ["Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college",
                  "Assoc-acdm", "Assoc-voc", "7th-8th", "Doctorate", "Prof-school",
                  "5th-6th", "10th", "1st-4th", "Preschool", "12th"],
    "marital_status": ["Married-civ-spouse", "Divorced", "Married-spouse-absent",
                       "Never-married", "Separated", "Married-AF-spouse", "Widowed"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales",
                   "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
                   "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
                   "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces", "?"],
    "relationship": ["Husband", "Not-in-family", "Wife", "Own-child", "Unmarried",
                     "Other-relative"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "gender": ["Female", "Male"],
    "native_country": ["United-States", "Mexico", "Philippines", "Germany", "Canada",
                       "India", "England", "China", "Cuba", "Jamaica", "South", "Italy",
                       "Poland", "Vietnam", "Japan", "Columbia", "Guatemala", "?"],
}

#: Years of schooling of each education level (the census ``education_num``).
EDUCATION_NUM = {"Preschool": 1, "1st-4th": 2, "5th-6th": 3, "7th-8th": 4, "9th": 5,
                 "10th": 6, "11th": 7, "12th": 8, "HS-grad": 9, "Some-college": 10,
                 "Assoc-voc": 11, "Assoc-acdm": 12, "Bachelors": 13, "Masters": 14,
                 "Prof-school": 15, "Doctorate": 16}


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def _popular_features(rng, rows, nnz, num_features):
    """``nnz`` distinct 0-based feature ids per row (sorted), Zipf-like: a few features
    are frequent. Draws ``3 * nnz`` candidates per row from the popularity law and keeps
    ``nnz`` distinct ones chosen by random priority (so no id is favoured)."""
    cdf = np.cumsum(1.0 / np.arange(1, num_features + 1) ** 0.8)
    perm = rng.permutation(num_features)       # popularity independent of the id
    cand = perm[np.minimum(np.searchsorted(cdf, rng.random((rows, 3 * nnz)) * cdf[-1]),
                           num_features - 1)]
    prio = rng.random(cand.shape)
    order = np.argsort(cand, axis=1, kind="stable")
    cand, prio = np.take_along_axis(cand, order, 1), np.take_along_axis(prio, order, 1)
    prio[:, 1:][cand[:, 1:] == cand[:, :-1]] = np.inf        # drop repeated ids
    keep = np.argsort(prio, axis=1, kind="stable")[:, :nnz]
    if not np.isfinite(np.take_along_axis(prio, keep, 1)).all():
        raise ValueError("too few distinct features for nnz=%d" % nnz)
    return np.sort(np.take_along_axis(cand, keep, 1), axis=1)


def _write_libsvm(path, labels, ids, values):
    """One ``label id:value ...`` line per row, ids written 1-based."""
    with open(path, "w") as f:
        for lab, row_ids, row_vals in zip(labels, ids, values):
            feats = " ".join("%d:%s" % (i + 1, _fmt(v)) for i, v in zip(row_ids, row_vals))
            f.write("%d %s\n" % (lab, feats))


def _fmt(v):
    return "1" if v == 1.0 else "%.4f" % v


def make_linear(out, rng, train, test, num_features, nnz):
    """Binary click-style LibSVM files; returns their paths."""
    w = np.where(rng.random(num_features) < 0.1, rng.normal(0.0, 1.5, num_features), 0.0)
    paths = []
    for name, rows in (("train", train), ("test", test)):
        ids = _popular_features(rng, rows, nnz, num_features)
        labels = (rng.random(rows) < _sigmoid(w[ids].sum(axis=1) - 2.0)).astype(int)
        path = os.path.join(out, "linear." + name)
        _write_libsvm(path, labels, ids, np.ones(ids.shape))
        paths.append(path)
    return paths


def make_fm(out, rng, train, test, num_features, nnz, rank):
    """Real-valued LibSVM files labelled by a factorization machine."""
    w = np.where(rng.random(num_features) < 0.2, rng.normal(0.0, 1.0, num_features), 0.0)
    v = rng.normal(0.0, 0.6, (num_features, rank))
    paths = []
    for name, rows in (("train", train), ("test", test)):
        ids = _popular_features(rng, rows, nnz, num_features)
        vals = np.where(rng.random(ids.shape) < 0.7, 1.0,
                        np.round(rng.uniform(0.1, 2.0, ids.shape), 4))
        xv = np.einsum("rn,rnk->rk", vals, v[ids])
        pair = 0.5 * ((xv ** 2).sum(1) - np.einsum("rn,rnk->r", vals ** 2, v[ids] ** 2))
        logit = (vals * w[ids]).sum(1) + pair - 0.3
        labels = (rng.random(rows) < _sigmoid(logit)).astype(int)
        path = os.path.join(out, "fm." + name)
        _write_libsvm(path, labels, ids, vals)
        paths.append(path)
    return paths


def make_ratings(out, rng, train, test, max_user, max_item, rank):
    """MovieLens-style rating files; ids 1-based, below ``max_user``/``max_item``."""
    u = rng.normal(0.0, 1.0, (max_user, rank))
    m = rng.normal(0.0, 1.0, (max_item, rank))
    bias_u, bias_m = rng.normal(0.0, 0.4, max_user), rng.normal(0.0, 0.4, max_item)
    paths = []
    for name, rows in (("train", train), ("test", test)):
        users = rng.integers(1, max_user, rows)
        items = rng.integers(1, max_item, rows)
        raw = (3.5 + bias_u[users] + bias_m[items] + (u[users] * m[items]).sum(1) / np.sqrt(rank)
               + rng.normal(0.0, 0.3, rows))
        ratings = np.clip(np.round(raw * 2) / 2, 1.0, 5.0)
        stamps = 978300000 + rng.integers(0, 10 ** 7, rows)
        path = os.path.join(out, "ratings." + name)
        with open(path, "w") as f:
            for row in zip(users, items, ratings, stamps):
                f.write("%d::%d::%g::%d\n" % row)
        paths.append(path)
    return paths


def make_adult(out, rng, train, test):
    """Census CSV files in the UCI Adult column order."""
    paths = []
    occ_effect = dict(zip(VOCAB["occupation"], rng.normal(0.0, 0.7, len(VOCAB["occupation"]))))
    for name, rows in (("data", train), ("test", test)):
        pick = {c: rng.integers(0, len(VOCAB[c]), rows) for c in VOCAB}
        age = rng.integers(17, 80, rows)
        hours = np.clip(rng.normal(40, 12, rows).round(), 1, 99).astype(int)
        gain = np.where(rng.random(rows) < 0.08, rng.integers(1000, 20000, rows), 0)
        loss = np.where(rng.random(rows) < 0.05, rng.integers(100, 3000, rows), 0)
        fnlwgt = rng.integers(20000, 900000, rows)
        path = os.path.join(out, "adult." + name)
        with open(path, "w") as f:
            for r in range(rows):
                val = {c: VOCAB[c][pick[c][r]] for c in VOCAB}
                edu_num = EDUCATION_NUM[val["education"]]
                married = val["marital_status"] == "Married-civ-spouse"
                logit = (0.35 * (edu_num - 10) + 1.2 * married
                         + 0.04 * (min(age[r], 60) - 38) + 0.03 * (hours[r] - 40)
                         + 1.5 * (gain[r] > 5000) + occ_effect[val["occupation"]] - 1.0)
                rich = rng.random() < _sigmoid(logit)
                label = (">50K" if rich else "<=50K") + ("." if name == "test" else "")
                f.write(", ".join(str(x) for x in (
                    age[r], val["workclass"], fnlwgt[r], val["education"], edu_num,
                    val["marital_status"], val["occupation"], val["relationship"],
                    val["race"], val["gender"], gain[r], loss[r], hours[r],
                    val["native_country"], label)) + "\n")
        paths.append(path)
    return paths


def make_all(out, seed=0):
    """Write every data set into ``out`` (created if missing); each set has its own
    generator seeded from ``seed`` so sizes of one never shift another's draws."""
    os.makedirs(out, exist_ok=True)
    streams = np.random.SeedSequence(seed).spawn(4)
    rngs = [np.random.default_rng(s) for s in streams]
    files = {}
    files["linear"] = make_linear(out, rngs[0], **SIZES["linear"])
    files["fm"] = make_fm(out, rngs[1], **SIZES["fm"])
    files["ratings"] = make_ratings(out, rngs[2], **SIZES["ratings"])
    files["adult"] = make_adult(out, rngs[3], **SIZES["adult"])
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"seed": seed, "sizes": SIZES}, f, indent=1, sort_keys=True)
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", help="directory to write the data files into")
    parser.add_argument("--seed", type=int, default=0, help="data seed")
    args = parser.parse_args()
    for kind, paths in make_all(args.out, args.seed).items():
        print(kind, " ".join(paths))


if __name__ == "__main__":
    main()
