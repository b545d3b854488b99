"""Echo REST service, the upstream for ``openapi_bench.py``: ``GET /echo?text=...`` answers
``{"text": ...}``; FastAPI generates its OpenAPI document at ``/openapi.json``.

Usage::

    python bench/rest_echo.py --port 8802
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI

app = FastAPI(title="echo", version="1")


@app.get("/echo", operation_id="echo", summary="Return text unchanged")
def echo(text: str) -> dict[str, str]:
    return {"text": text}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
