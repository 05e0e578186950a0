# Client settings.
MAX_RETRIES = 3
TIMEOUT_SECONDS = 30
