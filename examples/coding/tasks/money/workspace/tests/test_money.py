import unittest

from money import format_amount, parse_amount


class MoneyTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(parse_amount("$12.50"), 12.5)

    def test_thousands(self):
        self.assertEqual(parse_amount("$1,234.50"), 1234.5)

    def test_format(self):
        self.assertEqual(format_amount(1234.5), "$1,234.50")


if __name__ == "__main__":
    unittest.main()
