"""Word frequencies."""


def word_counts(text):
    counts = {}
    for word in text.split(" "):
        counts[word] = counts.get(word, 0) + 1
    return counts


def top_words(text, n):
    counts = word_counts(text)
    return sorted(counts.items(), key=lambda kv: kv[1])[:n]
