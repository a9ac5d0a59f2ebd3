"""A behaviour read from a file at every use, so that whoever started a
tool (the soak) can switch it while the tool runs by rewriting the file.

Imported by tests/lib/worker.py and tests/lib/runtime_api_relay.py.
"""


def read(path, default):
    """The file's content, stripped; DEFAULT when it is missing or empty."""
    try:
        with open(path) as f:
            return f.read().strip() or default
    except OSError:
        return default
