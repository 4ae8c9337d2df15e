"""Order pricing."""
import csv
import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "prices.csv")


def load_prices(path=DATA):
    with open(path, newline="") as f:
        return {row["sku"]: float(row["price"]) for row in csv.DictReader(f)}


def order_total(order, prices=None):
    prices = load_prices() if prices is None else prices
    total = 0
    for sku, qty in order:
        line = prices[sku] * qty
        if qty > 10:
            line *= 0.9
        total += line
    return total
