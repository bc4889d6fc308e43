"""Census (UCI Adult layout) feature engineering shared by ``wide_deep.py`` and
``wide_deep_inference.py``, in MXNet 1.x style: the wide part is a CSR matrix of
hashed crossed columns built with ``mx.nd.sparse.csr_matrix((data, indices, indptr),
shape=...)``; the deep part is a float64 numpy matrix (embedding ids, one-hot
indicator columns, raw continuous columns) and the label a numpy vector, both handed
to ``mx.io.NDArrayIter`` as numpy arrays (MXNet stores them as float32).

Hashing uses ``zlib.crc32`` so the training and inference processes map a value to
the same bucket (Python's ``hash`` of a string differs between processes).
"""
import zlib
from csv import DictReader

import mxnet as mx
import numpy as np

#: Model and feature sizes (as MXNet's wide&deep example configures them).
ADULT = {
    'num_linear_features': 3000,
    'num_embed_features': 2,
    'num_cont_features': 38,
    'embed_input_dims': [1000, 1000],
    'hidden_units': [8, 50, 100],
}

COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
           "occupation", "relationship", "race", "gender", "capital_gain", "capital_loss",
           "hours_per_week", "native_country", "income_bracket"]
INDICATOR_VOCAB = {
    "workclass": ["Self-emp-not-inc", "Private", "State-gov", "Federal-gov", "Local-gov",
                  "?", "Self-emp-inc", "Without-pay", "Never-worked"],
    "education": ["Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college",
                  "Assoc-acdm", "Assoc-voc", "7th-8th", "Doctorate", "Prof-school",
                  "5th-6th", "10th", "1st-4th", "Preschool", "12th"],
    "gender": ["Female", "Male"],
    "relationship": ["Husband", "Not-in-family", "Wife", "Own-child", "Unmarried",
                     "Other-relative"],
}
CROSSED = [["education", "occupation"], ["native_country", "occupation"],
           ["age_buckets", "education", "occupation"]]
AGE_BOUNDARIES = [18, 25, 30, 35, 40, 45, 50, 55, 60, 65]
EMBEDDING = ['native_country', 'occupation']
CONTINUOUS = ['age', 'education_num', 'capital_gain', 'capital_loss', 'hours_per_week']
BUCKETS = 1000


def _bucket(text):
    return zlib.crc32(text.encode()) % BUCKETS


def load_census(path):
    """Return ``(csr, dns, label)`` for a census CSV file (label 1 for ``>50K``)."""
    values, indices, dns_rows, labels = [], [], [], []
    with open(path) as f:
        for row in DictReader(f, fieldnames=COLUMNS):
            row = {k: v.strip() for k, v in row.items()}
            labels.append(1 if row["income_bracket"].startswith(">") else 0)
            for i, cols in enumerate(CROSSED):
                parts = [row[c] for c in cols if c != "age_buckets"]
                if cols[0] == "age_buckets":
                    parts.append(str(int(np.digitize(float(row["age"]), AGE_BOUNDARIES))))
                indices.append(i * BUCKETS + _bucket('_'.join(parts)))
                values.append(1.0)
            dense = [float(_bucket(row[c])) for c in EMBEDDING]
            for col, vocab in INDICATOR_VOCAB.items():
                one_hot = [0.0] * len(vocab)
                one_hot[vocab.index(row[col])] = 1.0
                dense.extend(one_hot)
            dense.extend(float(row[c]) for c in CONTINUOUS)
            dns_rows.append(dense)
    indptr = list(range(0, len(indices) + 1, len(CROSSED)))
    csr = mx.nd.sparse.csr_matrix((values, indices, indptr),
                                  shape=(len(labels), BUCKETS * len(CROSSED)))
    return csr, np.array(dns_rows), np.array(labels)


def wide_deep_model(num_linear_features, num_embed_features, num_cont_features,
                    input_dims, hidden_units):
    """Wide: CSR . row-sparse weight + bias. Deep: sparse embeddings of the id columns
    concatenated with the dense columns, two relu layers. Softmax over their sum."""
    csr_data = mx.symbol.Variable("csr_data", stype='csr')
    label = mx.symbol.Variable("softmax_label")
    weight = mx.symbol.Variable("linear_weight", shape=(num_linear_features, 2),
                                init=mx.initializer.Normal(sigma=0.01), stype='row_sparse')
    bias = mx.symbol.Variable("linear_bias", shape=(2,))
    wide = mx.symbol.broadcast_add(mx.symbol.sparse.dot(csr_data, weight), bias)

    dns_data = mx.symbol.Variable("dns_data")
    ids = mx.symbol.slice(data=dns_data, begin=(0, 0), end=(None, num_embed_features))
    id_columns = mx.symbol.split(data=ids, num_outputs=num_embed_features, squeeze_axis=1)
    features = [mx.symbol.slice(data=dns_data, begin=(0, num_embed_features),
                                end=(None, num_embed_features + num_cont_features))]
    for i, column in enumerate(id_columns):
        embed_weight = mx.symbol.Variable('embed_%d_weight' % i, stype='row_sparse')
        features.append(mx.symbol.sparse.Embedding(data=column, weight=embed_weight,
                                                   input_dim=input_dims[i],
                                                   output_dim=hidden_units[0],
                                                   sparse_grad=True))
    hidden = mx.symbol.concat(*features, dim=1)
    hidden = mx.symbol.Activation(mx.symbol.FullyConnected(data=hidden,
                                                           num_hidden=hidden_units[1]),
                                  act_type='relu')
    hidden = mx.symbol.Activation(mx.symbol.FullyConnected(data=hidden,
                                                           num_hidden=hidden_units[2]),
                                  act_type='relu')
    deep = mx.symbol.FullyConnected(data=hidden, num_hidden=2)
    return mx.symbol.SoftmaxOutput(wide + deep, label, name='model')
