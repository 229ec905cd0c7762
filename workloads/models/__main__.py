"""`python -m workloads.models profile NAME... [--batch B]`: profiles.main."""
import sys

from workloads.models.profiles import main

sys.exit(main())
