"""Plain helpers the tests import by name (a fake backend, a server runner, paths); fixtures live in conftest.py files."""
