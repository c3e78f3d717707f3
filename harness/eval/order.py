"""Sample order shuffled within small groups of varying size, reproducible from a recorded seed.

LPIRC served every team the same images, in an order that differed inside small groups, so that a
second entry of a team could not reuse the first one's answers yet no team got an easier stretch.
"""

import secrets

import numpy as np

GROUP_SIZES = (4, 12)  # smallest and largest group


def new_seed() -> int:
    return secrets.randbelow(2**31)


def shuffle_in_groups(count: int, seed: int, sizes: tuple[int, int] = GROUP_SIZES) -> list[int]:
    """A permutation of range(count): consecutive groups keep their place, their members are shuffled."""
    rng = np.random.default_rng(seed)
    order: list[int] = []
    while len(order) < count:
        size = int(rng.integers(sizes[0], sizes[1] + 1))
        group = np.arange(len(order), min(count, len(order) + size))
        order.extend(int(i) for i in rng.permutation(group))
    return order
