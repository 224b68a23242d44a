import sys

from localkube.runner.node import main

sys.exit(main())
