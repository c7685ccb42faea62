"""``python -m chatclient chat provider:model``: the terminal chat (see :mod:`chatclient.cli`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """The console script ``chatclient``; the CLI package is loaded only here."""
    from chatclient.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
