from textutils import title_case


def heading(text):
    return title_case(text) + "\n" + "=" * len(text)
