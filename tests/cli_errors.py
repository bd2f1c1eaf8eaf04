"""What every CLI owes a user who typed something wrong: exactly one
`error: ...` line on stderr, the agreed exit code, and no traceback."""

from __future__ import annotations


def user_error(capsys, exited, code: int = 2) -> str:
    """The one `error:` line a CLI printed for a user error (exit `code`, no traceback)."""
    err = capsys.readouterr().err
    assert exited.value.code == code, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]
