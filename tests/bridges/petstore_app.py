"""A small service that follows the published Swagger Petstore 3 document
(``fixtures/petstore-openapi.yaml``, copied unchanged from swagger-api/swagger-petstore,
Apache-2.0) for the operations the tests use, under ``/api/v3`` as the document's server."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

API_KEY = "special-key"


class Petstore:
    def __init__(self) -> None:
        self.pets: dict[int, dict[str, Any]] = {
            1: {"id": 1, "name": "Rex", "photoUrls": [], "status": "available", "tags": [{"id": 1, "name": "dog"}]},
            2: {"id": 2, "name": "Tom", "photoUrls": [], "status": "sold"},
        }
        self.orders: dict[int, dict[str, Any]] = {}
        self.deleted_with_key: list[str | None] = []

    async def add_pet(self, request: Request) -> Response:
        pet = await request.json()
        if not isinstance(pet, dict) or "name" not in pet or "photoUrls" not in pet:
            return Response("Invalid input", status_code=422)
        pet.setdefault("id", max(self.pets) + 1)
        self.pets[pet["id"]] = pet
        return JSONResponse(pet)

    async def find_by_status(self, request: Request) -> Response:
        wanted = request.query_params.getlist("status") or ["available"]
        return JSONResponse([pet for pet in self.pets.values() if pet.get("status") in wanted])

    async def pet(self, request: Request) -> Response:
        pet_id = int(request.path_params["petId"])
        if pet_id not in self.pets:
            return Response("Pet not found", status_code=404)
        if request.method == "DELETE":
            self.deleted_with_key.append(request.headers.get("api_key"))
            del self.pets[pet_id]
            return Response("Pet deleted")
        if request.method == "POST":
            for key in ("name", "status"):
                if key in request.query_params:
                    self.pets[pet_id][key] = request.query_params[key]
        return JSONResponse(self.pets[pet_id])

    async def inventory(self, request: Request) -> Response:
        if request.headers.get("api_key") != API_KEY:
            return Response("missing or wrong api_key", status_code=401)
        counts: dict[str, int] = {}
        for pet in self.pets.values():
            counts[pet.get("status", "available")] = counts.get(pet.get("status", "available"), 0) + 1
        return JSONResponse(counts)

    async def place_order(self, request: Request) -> Response:
        order = await request.json()
        order.setdefault("id", len(self.orders) + 1)
        order.setdefault("status", "placed")
        self.orders[order["id"]] = order
        return JSONResponse(order)

    async def order(self, request: Request) -> Response:
        order_id = int(request.path_params["orderId"])
        if order_id not in self.orders:
            return Response("Order not found", status_code=404)
        return JSONResponse(self.orders[order_id])

    async def login(self, request: Request) -> Response:
        user = request.query_params.get("username", "")
        return JSONResponse(f"logged in user session:{user}", headers={"X-Rate-Limit": "5000"})


def build_petstore_app(store: Petstore) -> Starlette:
    base = "/api/v3"
    return Starlette(
        routes=[
            Route(f"{base}/pet", store.add_pet, methods=["POST"]),
            Route(f"{base}/pet/findByStatus", store.find_by_status, methods=["GET"]),
            Route(f"{base}/pet/{{petId:int}}", store.pet, methods=["GET", "POST", "DELETE"]),
            Route(f"{base}/store/inventory", store.inventory, methods=["GET"]),
            Route(f"{base}/store/order", store.place_order, methods=["POST"]),
            Route(f"{base}/store/order/{{orderId:int}}", store.order, methods=["GET"]),
            Route(f"{base}/user/login", store.login, methods=["GET"]),
        ]
    )
