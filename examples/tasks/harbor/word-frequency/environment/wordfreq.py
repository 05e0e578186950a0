import sys
from collections import Counter


def top_words(text, n=3):
    counts = Counter(text.split())
    return counts.most_common(n)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        for word, count in top_words(fh.read()):
            print(word, count)
