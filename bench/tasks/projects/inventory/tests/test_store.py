import unittest

from inventory.models import Item
from inventory.store import Store


def sample():
    return Store([Item("A-1", "Tea towel", 4.5, 12), Item("A-2", "Mug", 7.0, 3)])


class StoreTest(unittest.TestCase):
    def test_selling_takes_units_out_of_stock(self):
        store = sample()
        self.assertEqual(store.update_stock("A-1", -5), 7)
        self.assertEqual(store.get("A-1").quantity, 7)

    def test_cannot_sell_more_than_in_stock(self):
        store = sample()
        with self.assertRaises(ValueError):
            store.update_stock("A-2", -4)
        self.assertEqual(store.get("A-2").quantity, 3)

    def test_total_value(self):
        self.assertAlmostEqual(sample().total_value(), 4.5 * 12 + 7.0 * 3)


if __name__ == "__main__":
    unittest.main()
