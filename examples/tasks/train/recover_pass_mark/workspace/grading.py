PASS_MARK = 50


def passed(score):
    """A score passes once it reaches PASS_MARK."""
    return score > PASS_MARK
