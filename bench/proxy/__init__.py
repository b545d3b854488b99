"""The tool-call benchmark behind ``bench/proxy_bench.py``: direct vs the gateway vs peer proxies."""
