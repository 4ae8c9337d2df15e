"""Roman numeral conversion."""

_VALUES = [
    (1000, "M"),
    (500, "D"),
    (100, "C"),
    (50, "L"),
    (10, "X"),
    (5, "V"),
    (1, "I"),
]


def to_roman(n):
    """Return the Roman numeral for 1 <= n <= 3999."""
    if not 1 <= n <= 3999:
        raise ValueError("out of range: %r" % (n,))
    out = []
    for value, symbol in _VALUES:
        while n >= value:
            out.append(symbol)
            n -= value
    return "".join(out)


def from_roman(s):
    """Parse an upper-case Roman numeral."""
    digits = {symbol: value for value, symbol in _VALUES}
    total = 0
    for ch in s:
        total += digits[ch]
    return total
