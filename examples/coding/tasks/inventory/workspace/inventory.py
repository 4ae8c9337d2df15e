"""Stock counts for a small shop."""


class Inventory:
    def __init__(self):
        self._stock = {}

    def add(self, item, qty=1):
        if qty <= 0:
            raise ValueError("qty must be positive")
        self._stock[item] = self._stock.get(item, 0) + qty

    def remove(self, item, qty=1):
        self._stock[item] = self._stock[item] - qty

    def count(self, item):
        return self._stock[item]

    def total(self):
        return sum(self._stock.values())

    def items(self):
        """Names of the items in stock, sorted."""
        return sorted(self._stock)
