"""Shared by every test folder: pytest imports this first, which puts `tests/` on `sys.path` so
the helper modules beside it (`positions`, `cli_errors`) import by name from any subfolder."""
