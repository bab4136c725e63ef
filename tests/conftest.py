"""Every test runs with ``config.strict``: a bug of the translator raises instead of becoming a
graph break or an eager run (tests of the fallback itself patch it off). Nothing is downloaded."""
import os

from tinydynamo import config

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the real models are built from configs: no downloads
config.strict = True
