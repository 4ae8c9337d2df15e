"""URL slugs."""
import re


def slugify(text, max_length=None):
    s = text.lower()
    s = re.sub(r"[^a-z0-9]", "-", s)
    if max_length is not None:
        s = s[:max_length]
    return s
