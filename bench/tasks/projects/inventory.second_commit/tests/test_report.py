import unittest

from inventory.models import Item
from inventory.report import low_stock, low_stock_report
from inventory.store import Store


class ReportTest(unittest.TestCase):
    def test_lists_items_below_the_level_fewest_first(self):
        store = Store([Item("A", "a", 1.0, 4), Item("B", "b", 1.0, 0), Item("C", "c", 1.0, 5)])
        self.assertEqual([item.sku for item in low_stock(store)], ["B", "A"])

    def test_says_when_nothing_is_low(self):
        self.assertIn("nothing to reorder", low_stock_report(Store([])))


if __name__ == "__main__":
    unittest.main()
