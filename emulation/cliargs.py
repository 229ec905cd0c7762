"""The command line's rule for bad input, shared by `syncbed` (emulation/cli.py) and `syncbed
project` (emulation/simulator/core.py): one line saying what is wrong and what is valid, exit code 2
(argparse's default prints its whole usage first). Imports nothing of the project, so a bad
option is refused before anything heavy loads."""
from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"syncbed: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(2)
