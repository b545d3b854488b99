"""The registry's JSON columns (``Json``): ``JSONB`` on PostgreSQL, JSON elsewhere, and
``None`` stored as JSON ``null``, not SQL ``NULL``, whether written by the ORM or by Core."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Integer, MetaData, Table, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from mcp_aggregator.registry.tables import Json

from .conftest import Database


class _Base(DeclarativeBase):
    pass


class _Document(_Base):
    __tablename__ = "json_orm_probe"
    id: Mapped[int] = mapped_column(primary_key=True)
    doc: Mapped[Any] = mapped_column(Json, nullable=True)


async def test_json_columns_keep_none_as_json_null_and_are_jsonb_on_postgresql(database: Database) -> None:
    postgres = database.url.startswith("postgresql")
    schema = database.pg_schema if postgres else None
    metadata = MetaData(schema=schema)
    core = Table("json_core_probe", metadata, Column("id", Integer, primary_key=True), Column("doc", Json))
    engine = create_async_engine(database.url, execution_options={"schema_translate_map": {None: schema}})
    try:
        async with engine.begin() as conn:
            if postgres:
                await conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
            await conn.run_sync(metadata.create_all)
            await conn.run_sync(_Base.metadata.create_all)
            await conn.execute(insert(core), [{"id": 1, "doc": None}, {"id": 2, "doc": {"a": [1, None]}}])
        async with AsyncSession(engine) as session, session.begin():
            session.add_all([_Document(id=1, doc=None), _Document(id=2, doc={"b": "c"})])
        async with engine.connect() as conn:
            core_rows = (await conn.execute(select(core.c.id, core.c.doc, core.c.doc.is_(None)))).all()
            orm_rows = (await conn.execute(select(_Document.id, _Document.doc.is_(None)))).all()
            kinds = set()
            if postgres:
                found = await conn.execute(
                    text(
                        "SELECT data_type FROM information_schema.columns"
                        " WHERE table_schema = :s AND column_name = 'doc'"
                    ),
                    {"s": schema},
                )
                kinds = {row[0] for row in found}
    finally:
        await engine.dispose()
    assert sorted(core_rows) == [(1, None, False), (2, {"a": [1, None]}, False)]
    assert sorted(orm_rows) == [(1, False), (2, False)]
    assert kinds == ({"jsonb"} if postgres else set())
