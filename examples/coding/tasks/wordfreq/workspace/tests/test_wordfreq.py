import unittest

from wordfreq import top_words, word_counts


class WordFreqTest(unittest.TestCase):
    def test_simple(self):
        self.assertEqual(word_counts("a b a"), {"a": 2, "b": 1})

    def test_case_and_punctuation(self):
        self.assertEqual(word_counts("The cat; the hat."), {"the": 2, "cat": 1, "hat": 1})

    def test_top(self):
        self.assertEqual(top_words("a b a c b a", 2), [("a", 3), ("b", 2)])


if __name__ == "__main__":
    unittest.main()
