"""`python -m emulation.report FOLDER`: write FOLDER/report.md and FOLDER/plots/."""
import sys

from emulation.report.markdown import main

sys.exit(main())
