"""A FastAPI service whose operations each take a key in another place, declared the way
FastAPI's security tutorial declares them (its generated document names the schemes): an
API key in a header, in the query string, in a cookie, and HTTP basic."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException
from fastapi.security import APIKeyCookie, APIKeyHeader, APIKeyQuery, HTTPBasic, HTTPBasicCredentials

HEADER_KEY = "header-key-1"
QUERY_KEY = "query-key-2"
COOKIE_KEY = "cookie-key-3"
USER, PASSWORD = "ann", "pw-4"

header_key = APIKeyHeader(name="X-Api-Key", scheme_name="headerKey")
query_key = APIKeyQuery(name="key", scheme_name="queryKey")
cookie_key = APIKeyCookie(name="session", scheme_name="cookieKey")
basic = HTTPBasic(scheme_name="basicAuth")


def _same(given: str, expected: str) -> None:
    if not secrets.compare_digest(given, expected):
        raise HTTPException(status_code=401, detail="wrong key")


def build_keyed_app() -> FastAPI:
    app = FastAPI(title="Keyed", version="1.0.0")

    @app.get("/by-header", operation_id="byHeader")
    def by_header(key: Annotated[str, Depends(header_key)]) -> dict[str, str]:
        _same(key, HEADER_KEY)
        return {"via": "header"}

    @app.get("/by-query", operation_id="byQuery")
    def by_query(key: Annotated[str, Depends(query_key)]) -> dict[str, str]:
        _same(key, QUERY_KEY)
        return {"via": "query"}

    @app.get("/by-cookie", operation_id="byCookie")
    def by_cookie(key: Annotated[str, Depends(cookie_key)]) -> dict[str, str]:
        _same(key, COOKIE_KEY)
        return {"via": "cookie"}

    @app.get("/by-basic", operation_id="byBasic")
    def by_basic(credentials: Annotated[HTTPBasicCredentials, Depends(basic)]) -> dict[str, str]:
        _same(f"{credentials.username}:{credentials.password}", f"{USER}:{PASSWORD}")
        return {"via": "basic"}

    return app
