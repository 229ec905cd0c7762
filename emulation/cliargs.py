"""The command line's rule for bad input, for `syncbed` and each of its subcommands (emulation/cli.py,
whose subparsers are made of this class): one line saying what is wrong and what is valid, exit code 2
(argparse's default prints its whole usage first). Imports nothing of the project, so a bad
option is refused before anything heavy loads."""
from __future__ import annotations

import argparse
import sys


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        print(f"syncbed: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(2)
