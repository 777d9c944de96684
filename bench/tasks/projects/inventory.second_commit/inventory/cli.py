"""The command line: python3 -m inventory list | sell SKU N | restock SKU N | price SKU N | report"""

import argparse
import sys

from .pricing import order_total
from .report import low_stock_report
from .store import Store


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="inventory", description="Track stock and price orders.")
    parser.add_argument("--data", default="data/items.json", help="the items file")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="show every item, its stock and unit price")
    for name, what in (("sell", "take units out of stock"), ("restock", "put units into stock")):
        p = sub.add_parser(name, help=what)
        p.add_argument("sku")
        p.add_argument("units", type=int)
    p = sub.add_parser("price", help="what an order costs")
    p.add_argument("sku")
    p.add_argument("units", type=int)
    p = sub.add_parser("report", help="list the items to reorder")
    p.add_argument("--level", type=int, default=None, help="list items with fewer units than this")
    args = parser.parse_args(argv)

    store = Store.load(args.data)
    if args.command == "list":
        for item in store.items.values():
            print(f"{item.sku}  {item.name:<20} {item.quantity:>4}  {item.price:8.2f}")
    elif args.command in ("sell", "restock"):
        change = -args.units if args.command == "sell" else args.units
        try:
            left = store.update_stock(args.sku, change)
        except (KeyError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        store.save(args.data)
        print(f"{args.sku}: {left} in stock")
    elif args.command == "price":
        item = store.get(args.sku)
        print(f"{order_total(item.price, args.units):.2f}")
    elif args.command == "report":
        if args.level is None:
            print(low_stock_report(store))
        else:
            print(low_stock_report(store, args.level))
    return 0
