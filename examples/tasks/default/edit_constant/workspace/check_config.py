import config

if config.MAX_RETRIES != 5:
    raise SystemExit(f"FAIL: MAX_RETRIES is {config.MAX_RETRIES}, expected 5")
if config.TIMEOUT_SECONDS != 30:
    raise SystemExit("FAIL: TIMEOUT_SECONDS must stay 30")
print("OK: config values match")
