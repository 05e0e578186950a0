#!/bin/bash
mkdir -p /logs/verifier
python3 /tests/check_count.py
