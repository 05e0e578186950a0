#!/bin/bash
python3 -c "print(len(open('/app/words.txt').read().split()))" > /app/count.txt
