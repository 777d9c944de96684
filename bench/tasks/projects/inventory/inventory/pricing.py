"""Order prices: a bulk discount first, then VAT."""

BULK_THRESHOLD = 10  # units from which the bulk discount applies
BULK_DISCOUNT = 0.10  # the share taken off the subtotal
VAT_RATE = 0.20


def apply_discount(subtotal: float, quantity: int) -> float:
    """The subtotal less the bulk discount when at least BULK_THRESHOLD units are bought."""
    if quantity >= BULK_THRESHOLD:
        return subtotal * (1 - BULK_DISCOUNT)
    return subtotal


def add_vat(amount: float) -> float:
    """The amount with VAT added."""
    return amount * (1 + VAT_RATE)


def order_total(unit_price: float, quantity: int) -> float:
    """What a customer pays for `quantity` units: discounted, VAT added, rounded to cents."""
    subtotal = unit_price * quantity
    return round(add_vat(apply_discount(subtotal, quantity)), 2)
