import sys

sys.path.append(".")  # the code under test, searched after the standard library (run as python3 -I)

import config

assert config.MAX_RETRIES == 5, config.MAX_RETRIES
assert config.TIMEOUT_SECONDS == 30, config.TIMEOUT_SECONDS
print("checker passed")
