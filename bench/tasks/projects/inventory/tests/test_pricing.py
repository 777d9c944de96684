import unittest

from inventory.pricing import (
    BULK_DISCOUNT,
    BULK_THRESHOLD,
    VAT_RATE,
    add_vat,
    apply_discount,
    order_total,
)


class DiscountTest(unittest.TestCase):
    def test_no_discount_below_the_threshold(self):
        self.assertEqual(apply_discount(100.0, BULK_THRESHOLD - 1), 100.0)

    def test_discount_from_the_threshold_on(self):
        self.assertAlmostEqual(apply_discount(100.0, BULK_THRESHOLD), 100.0 * (1 - BULK_DISCOUNT))
        self.assertAlmostEqual(apply_discount(100.0, BULK_THRESHOLD + 5), 100.0 * (1 - BULK_DISCOUNT))


class TotalTest(unittest.TestCase):
    def test_vat_is_added(self):
        self.assertAlmostEqual(add_vat(50.0), 50.0 * (1 + VAT_RATE))

    def test_order_total_is_rounded_to_cents(self):
        total = order_total(3.333, 3)
        self.assertEqual(total, round(total, 2))
        self.assertAlmostEqual(total, round(3.333 * 3 * (1 + VAT_RATE), 2))


if __name__ == "__main__":
    unittest.main()
