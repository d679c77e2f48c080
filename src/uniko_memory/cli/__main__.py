"""``python -m uniko_memory.cli``."""

from .parser import main

raise SystemExit(main())
