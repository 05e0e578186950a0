from units import km_to_miles

got = km_to_miles(10)
if abs(got - 6.21371) > 1e-9:
    raise SystemExit(f"FAIL: km_to_miles(10) returned {got}, expected 6.21371")
print("OK: conversion is exact")
