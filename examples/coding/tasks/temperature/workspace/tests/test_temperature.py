import unittest

from temperature import convert


class TemperatureTest(unittest.TestCase):
    def test_boiling(self):
        self.assertEqual(convert(100, "C", "F"), 212.0)

    def test_freezing_in_kelvin(self):
        self.assertEqual(convert(0, "C", "K"), 273.15)


if __name__ == "__main__":
    unittest.main()
