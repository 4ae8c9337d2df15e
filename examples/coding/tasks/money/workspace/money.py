"""Money amounts as reports print them."""


def parse_amount(text):
    return float(text.strip().lstrip("$"))


def format_amount(value, sign="$"):
    return sign + str(value)
