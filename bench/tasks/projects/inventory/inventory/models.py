"""The items a shop keeps in stock."""

from dataclasses import dataclass


@dataclass
class Item:
    """One product line: its stock-keeping unit (SKU), name, unit price and units in stock."""

    sku: str
    name: str
    price: float
    quantity: int = 0

    def value(self) -> float:
        """What the units in stock are worth at the unit price."""
        return self.price * self.quantity

    @classmethod
    def from_dict(cls, row: dict) -> "Item":
        return cls(row["sku"], row["name"], float(row["price"]), int(row.get("quantity", 0)))

    def to_dict(self) -> dict:
        return {"sku": self.sku, "name": self.name, "price": self.price, "quantity": self.quantity}
