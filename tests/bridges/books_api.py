"""A small FastAPI service written the way FastAPI's own tutorials write one; the gateway
only ever sees the OpenAPI document FastAPI generates for it (``/openapi.json``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, HTTPException, Query
from fastapi.responses import RedirectResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

TOKEN = "s3cret-books-token"


class BookIn(BaseModel):
    title: str = Field(min_length=1)
    author: str
    year: int | None = None


class Book(BookIn):
    id: int


bearer = HTTPBearer()


def signed_in(credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)]) -> None:
    if credentials.credentials != TOKEN:
        raise HTTPException(status_code=401, detail="bad token")


def build_books_app() -> FastAPI:
    app = FastAPI(title="Books", version="1.0.0")
    books: dict[int, Book] = {1: Book(id=1, title="Dune", author="Frank Herbert", year=1965)}

    @app.get("/books", operation_id="listBooks", summary="List books", dependencies=[Depends(signed_in)])
    def list_books(author: str | None = None, limit: Annotated[int, Query(ge=1, le=100)] = 10) -> list[Book]:
        """Books in the catalogue, optionally by one author."""
        found = [b for b in books.values() if author is None or b.author == author]
        return found[:limit]

    @app.get("/books/{book_id}", operation_id="getBook", summary="Get a book", dependencies=[Depends(signed_in)])
    def get_book(book_id: int) -> Book:
        if book_id not in books:
            raise HTTPException(status_code=404, detail=f"no book {book_id}")
        return books[book_id]

    @app.post(
        "/books", operation_id="addBook", summary="Add a book", status_code=201, dependencies=[Depends(signed_in)]
    )
    def add_book(book: BookIn) -> Book:
        created = Book(id=max(books) + 1, **book.model_dump())
        books[created.id] = created
        return created

    @app.delete(
        "/books/{book_id}", operation_id="deleteBook", summary="Delete a book", dependencies=[Depends(signed_in)]
    )
    def delete_book(book_id: int) -> dict[str, int]:
        books.pop(book_id, None)
        return {"deleted": book_id}

    @app.get("/elsewhere", operation_id="goElsewhere", summary="A redirect to another host")
    def elsewhere() -> RedirectResponse:
        return RedirectResponse("http://example.invalid/stolen")

    return app
