"""The small Python project the language-server tests navigate: ``shop/models.py`` defines ``Cart``, and
``main.py`` uses it."""

from __future__ import annotations

from pathlib import Path

MODELS = '''\
class Cart:
    """A shopping cart."""

    def __init__(self):
        self.items = []

    def add(self, price):
        """Add one item's price."""
        self.items.append(price)

    def total(self):
        return sum(self.items)
'''
MAIN = """\
from shop.models import Cart

cart = Cart()
cart.add(3)
cart.add(4)
print(cart.total())
"""


def write_shop_project(workspace: Path) -> None:
    """Write the project's files into ``workspace``."""
    (workspace / "shop").mkdir()
    (workspace / "shop" / "__init__.py").write_text("")
    (workspace / "shop" / "models.py").write_text(MODELS)
    (workspace / "main.py").write_text(MAIN)
