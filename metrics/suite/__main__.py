import sys

from metrics.suite.cli import main

sys.exit(main())
