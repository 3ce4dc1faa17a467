"""Share rank arrays through DVC: `remote` (once: a place every clone reaches), `track` (then git commit),
`push`; `pull` / `restore` in a clone; `migrate` moves the files of a version before keyed paths to where this
one looks for them.

    python workflow/share.py remote  [DIR_OR_URL [--local]]
    python workflow/share.py track   [--configfile FILE ...]
    python workflow/share.py push    [--configfile FILE ...] [-r REMOTE]
    python workflow/share.py pull    [--configfile FILE ...] [-r REMOTE]
    python workflow/share.py restore [--configfile FILE ...]
    python workflow/share.py migrate [--configfile FILE ...]

Run from the repository root. docs/sharing.md: "Adding models and sharing rank arrays (DVC)".
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))  # the package, installed or not

from rankscale.share_cli import main

if __name__ == "__main__":
    sys.exit(main())
