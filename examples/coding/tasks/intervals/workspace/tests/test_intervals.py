import unittest

from intervals import merge


class MergeTest(unittest.TestCase):
    def test_overlap(self):
        self.assertEqual(merge([[1, 3], [2, 4]]), [[1, 4]])

    def test_unsorted(self):
        self.assertEqual(merge([[3, 4], [1, 2]]), [[1, 2], [3, 4]])


if __name__ == "__main__":
    unittest.main()
