import json


def load_mode():
    with open("settings.json", encoding="utf-8") as fh:
        return json.load(fh)["mode"]
