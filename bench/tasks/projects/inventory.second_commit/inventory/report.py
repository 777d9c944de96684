"""The low-stock report: the items to reorder."""

from datetime import date

from .store import Store

LOW_STOCK_LEVEL = 5  # items with fewer units in stock than this are listed


def low_stock(store: Store, level: int = LOW_STOCK_LEVEL) -> list:
    """The items with fewer than `level` units in stock, fewest first."""
    items = [item for item in store.items.values() if item.quantity < level]
    return sorted(items, key=lambda item: (item.quantity, item.sku))


def low_stock_report(store: Store, level: int = LOW_STOCK_LEVEL, today=None) -> str:
    """A dated plain-text list of the items to reorder."""
    today = today or date.today()
    lines = [f"Low stock on {today.isoformat()} (fewer than {level} units):"]
    for item in low_stock(store, level):
        lines.append(f"- {item.sku} {item.name}: {item.quantity} left")
    if len(lines) == 1:
        lines.append("- nothing to reorder")
    return "\n".join(lines)
