"""The stock: items loaded from and saved to a JSON file."""

import json
from pathlib import Path

from .models import Item

DEFAULT_PATH = Path("data/items.json")


class Store:
    """The items of one shop, by SKU."""

    def __init__(self, items=()):
        self.items = {item.sku: item for item in items}

    @classmethod
    def load(cls, path=DEFAULT_PATH) -> "Store":
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return cls(Item.from_dict(row) for row in data["items"])

    def save(self, path=DEFAULT_PATH) -> None:
        data = {"items": [item.to_dict() for item in self.items.values()]}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
            f.write("\n")

    def get(self, sku: str) -> Item:
        try:
            return self.items[sku]
        except KeyError:
            raise KeyError(f"no item with SKU {sku}") from None

    def update_stock(self, sku: str, change: int) -> int:
        """Adds `change` to an item's quantity (negative for a sale) and returns the new
        quantity. Raises ValueError when fewer units are in stock than a sale takes."""
        item = self.get(sku)
        if item.quantity + change < 0:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity += change
        return item.quantity

    def total_value(self) -> float:
        """What everything in stock is worth."""
        return sum(item.value() for item in self.items.values())
