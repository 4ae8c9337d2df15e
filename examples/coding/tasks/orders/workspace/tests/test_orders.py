import unittest

from orders import order_total


class OrderTest(unittest.TestCase):
    def test_one_line(self):
        self.assertEqual(order_total([("A1", 2)]), 5.0)

    def test_bulk_discount_at_ten(self):
        self.assertEqual(order_total([("B2", 10)]), 36.0)


if __name__ == "__main__":
    unittest.main()
