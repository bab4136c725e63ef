"""Every test runs with ``config.strict``: a bug of the translator raises instead of becoming a
graph break or an eager run (tests of the fallback itself patch it off)."""
from tinydynamo import config

config.strict = True
