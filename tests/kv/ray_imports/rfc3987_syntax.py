"""Put first on ``PYTHONPATH`` of the test cluster's processes (tests/kv/conftest.py):
makes the optional ``rfc3987_syntax`` unimportable there.

``jsonschema`` imports it when it is installed (``jsonschema[format-nongpl]``, which
Jupyter brings) only to check the "iri" string formats, and it compiles a Lark grammar
when imported: seconds of CPU in every process that imports Ray (Ray's agents, its
actor workers, each test worker), spent before the process does anything. Ray's own
schemas use no "iri" format, so nothing under test reads it."""
raise ImportError("rfc3987_syntax is left out of the nets.kv test cluster's processes")
