from tests.registry.conftest import database as database
