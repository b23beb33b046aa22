"""`python -m turnback`: the command line."""

from .cli import main

raise SystemExit(main())
