import sys

from verify.cli import main

# Guarded: Dask's worker processes are spawned and re-import the main module.
if __name__ == "__main__":
    sys.exit(main())
