import sys

from sched.cli import main

sys.exit(main())
