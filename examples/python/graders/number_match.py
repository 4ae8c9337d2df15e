"""The project's grader: OpenAI's `python` grader type as a file. rft-endpoints runs grade() in a fresh
sandbox (no network, 2 minutes) for every answer, as OpenAI runs a python grader config's source;
the grader's name is the file's: number_match. sample["output_text"] is the model's final answer,
item is the dataset row. Return a float (here 0 to 1).
"""
import re


def grade(sample, item) -> float:
    """1 for the last number of the answer within 1% of item["reference_answer"], less the further it is."""
    text = (sample.get("output_text") or "").replace(",", "")
    numbers = re.findall(r"-?\d+(?:\.\d+)?", text)
    if not numbers:
        return 0.0
    answer = float(numbers[-1])
    expected = float(item["reference_answer"])
    if expected == 0:
        return 1.0 if abs(answer) < 1e-9 else 0.0
    error = abs(answer - expected) / abs(expected)
    return 1.0 if error <= 0.01 else max(0.0, 1.0 - error)
