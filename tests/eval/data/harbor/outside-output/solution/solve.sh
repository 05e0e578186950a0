#!/bin/bash
# writes outside the working folder, as sokoban-from-image's oracle does
wc -w < /app/words.txt | tr -d ' ' > /output/count.txt
