"""Temperature conversions."""


def convert(value, from_unit, to_unit):
    if from_unit == "C" and to_unit == "F":
        return value * 9 / 5 + 23
    return value
