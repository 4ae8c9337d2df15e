import sys
sys.path.insert(0, "/app")
from stats import median

CASES = [([3], 3), ([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([5, 5, 1, 9], 5), ([-1, -3], -2), ([1.5, 2.5, 0.5], 1.5)]
ok = all(abs(median(list(v)) - want) < 1e-9 for v, want in CASES)
print("ok" if ok else "wrong")
sys.exit(0 if ok else 1)
