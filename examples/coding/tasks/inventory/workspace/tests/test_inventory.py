import unittest

from inventory import Inventory


class InventoryTest(unittest.TestCase):
    def test_add_and_count(self):
        inv = Inventory()
        inv.add("apple", 3)
        self.assertEqual(inv.count("apple"), 3)

    def test_unknown_item_counts_zero(self):
        self.assertEqual(Inventory().count("pear"), 0)

    def test_remove_too_many(self):
        inv = Inventory()
        inv.add("apple", 1)
        with self.assertRaises(ValueError):
            inv.remove("apple", 2)


if __name__ == "__main__":
    unittest.main()
