"""Reads a converted dataset as the trainers' loaders do and prints its rows as JSON, one per line.

    python trainer-loaders.py check                  exit 0 when pyarrow and datasets import
    python trainer-loaders.py json FILE              datasets.load_dataset("json"): TRL's and OpenRLHF's loader
    python trainer-loaders.py parquet FILE           datasets.load_dataset("parquet") (verl's RLHFDataset), which
                                                     must equal pyarrow.parquet.read_table (slime's parquet reader)
"""
import json
import sys


def main() -> None:
    import datasets
    import pyarrow.parquet as pq

    if sys.argv[1] == "check":
        return
    kind, path = sys.argv[1], sys.argv[2]
    datasets.disable_progress_bars()
    rows = list(datasets.load_dataset(kind, data_files=path, split="train", cache_dir=sys.argv[3]))
    if kind == "parquet":
        table = pq.read_table(path).to_pylist()
        if table != rows:
            raise SystemExit("pyarrow and datasets read different rows")
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))


main()
