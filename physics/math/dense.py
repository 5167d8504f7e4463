"""Small dense linear algebra in compiled code, on the leading n×n block of a scratch matrix, in
place: the solver's manifold blocks (physics.constraints.gauss_seidel) factor systems of a few rows each step
(the joints' systems are block-sparse: physics.constraints.joint_graph), where a LAPACK call would
cost more than the arithmetic and its last bits would depend on the CPU's BLAS kernel
(docs/architecture.md, "Determinism across machines"). 3×3 systems: physics.math.rotation_kernels.solve3.
"""
import numpy as np

from physics.core.compiled import kernel


@kernel(inline=True)
def cholesky_factor(A, n):
    """The Cholesky factor L (A = L Lᵀ) of the leading n×n block of A, in place in its lower
    triangle; returns False if A is not positive definite."""
    for j in range(n):
        d = A[j, j]
        for c in range(j):
            d -= A[j, c] * A[j, c]
        if d <= 0.0:
            return False
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for c in range(j):
                s -= A[i, c] * A[j, c]
            A[i, j] = s / d
    return True


@kernel(inline=True)
def cholesky_substitute(L, x, n):
    """x ← (L Lᵀ)⁻¹ x in place, L from `cholesky_factor`."""
    for i in range(n):                  # L y = x
        s = x[i]
        for c in range(i):
            s -= L[i, c] * x[c]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):      # Lᵀ x = y
        s = x[i]
        for c in range(i + 1, n):
            s -= L[c, i] * x[c]
        x[i] = s / L[i, i]
