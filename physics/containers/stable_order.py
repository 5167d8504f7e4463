"""The stable order of keys, in arrays the caller keeps: the one merge sort the compiled kernels share.

`stable_order(key, order, spare)` writes into order (n,) the permutation that sorts key (n,) with
ties in index order: np.argsort(key, kind="stable"), the one permutation every stable sort gives.
Bottom up: runs of width 1, 2, 4, … merged between order and spare, the right run's entry taken
only where its key is below the left's (so a NaN key, never below, keeps its place after the left
run's). Nothing is allocated: the broad phase's grid (`physics.collision.broadphase`) and the
solver's halves (`physics.constraints.gauss_seidel.halves`) sort in room they keep.
"""
from physics.core.compiled import kernel


@kernel(inline=True)
def stable_order(key, order, spare):
    """order (n,) ← the stable sort of key (n,)'s indices (module docstring); spare (n,) scratch."""
    n = key.shape[0]
    for e in range(n):
        order[e] = e
    source, target = order, spare
    swapped = False         # (whether the last pass wrote spare)
    width = 1
    while width < n:
        for left in range(0, n, 2 * width):
            middle, right = min(left + width, n), min(left + 2 * width, n)
            i, j = left, middle
            for t in range(left, right):
                if j < right and (i == middle or key[source[j]] < key[source[i]]):
                    target[t] = source[j]
                    j += 1
                else:
                    target[t] = source[i]
                    i += 1
        source, target = target, source
        swapped = not swapped
        width *= 2
    if swapped:
        order[:] = spare
