import unittest

from roman import from_roman, to_roman


class RomanTest(unittest.TestCase):
    def test_small_numbers(self):
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(6), "VI")

    def test_subtractive(self):
        self.assertEqual(to_roman(4), "IV")

    def test_parse(self):
        self.assertEqual(from_roman("XII"), 12)


if __name__ == "__main__":
    unittest.main()
